"""The `slurm-job` probe: the job's time limit, run time, restarts, and whether it will be warned.

At its time limit Slurm sends SIGTERM and, KillWait seconds later, SIGKILL; a job that wants to
checkpoint first must ask for an earlier signal with `#SBATCH --signal`. This probe reads the
job named by SLURM_JOB_ID (set inside a job; export it to ask about a running job from a login
node) with `scontrol show job`, and its submitted batch script with
`scontrol write batch_script ID -` for the `--signal` and `--requeue` directives. A `--signal`
given on the sbatch command line is not in the script, so the facts say "in the script".
"""

from __future__ import annotations

import os
import re
import signal
from dataclasses import dataclass

from trainmedic.probes.base import (
    NO_CONTEXT,
    Budget,
    ProbeContext,
    ProbeResult,
    Status,
    unavailable,
)
from trainmedic.probes.subproc import run_cmd

NAME = "slurm-job"
JOB_ENV = ("SLURM_JOB_ID", "SLURM_JOBID")
JOB_ID = re.compile(r"^\d+(?:[_+]\d+)?$")
SIGNAL_SPEC = re.compile(r"^(?:(?P<flags>[RB]+):)?(?P<sig>[A-Za-z0-9]+)(?:@(?P<time>\d+))?$")
DEFAULT_SIGNAL_LEAD_S = 60  # sbatch: a --signal without @time is sent 60 s before the end


def parse_duration(text: str) -> int | None:
    """Seconds of a Slurm time ([D-]HH:MM:SS, MM:SS, MM, D-HH[:MM]); None for UNLIMITED etc."""
    text = text.strip()
    m = re.fullmatch(r"(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?", text)
    if not m:
        return None
    days, a, b, c = m.group(1), m.group(2), m.group(3), m.group(4)
    d = int(days or 0)
    if days is not None:  # D-HH, D-HH:MM, D-HH:MM:SS
        h, mi, s = int(a), int(b or 0), int(c or 0)
    elif c is not None:  # HH:MM:SS
        h, mi, s = int(a), int(b), int(c)
    elif b is not None:  # MM:SS
        h, mi, s = 0, int(a), int(b)
    else:  # MM
        h, mi, s = 0, int(a), 0
    return ((d * 24 + h) * 60 + mi) * 60 + s


def parse_show_job(text: str) -> dict[str, str]:
    """Key=Value fields of `scontrol show job` (multi-line or -o), first occurrence of each."""
    fields: dict[str, str] = {}
    for m in re.finditer(r"(?:^|\s)([A-Za-z][A-Za-z0-9_/:]*)=(\S*)", text):
        fields.setdefault(m.group(1), m.group(2))
    return fields


@dataclass
class ScriptDirectives:
    """What the batch script asks Slurm for about signals and requeueing."""

    signal: str | None = None  # the raw --signal value
    requeue: bool | None = None

    @property
    def signal_name(self) -> str | None:
        m = SIGNAL_SPEC.match(self.signal or "")
        if not m:
            return None
        sig = m.group("sig").upper()
        if sig.isdigit():
            try:
                return signal.Signals(int(sig)).name.removeprefix("SIG")
            except ValueError:
                return sig
        return sig.removeprefix("SIG")

    @property
    def lead_s(self) -> int | None:
        m = SIGNAL_SPEC.match(self.signal or "")
        if not m:
            return None
        return int(m.group("time")) if m.group("time") else DEFAULT_SIGNAL_LEAD_S

    @property
    def batch_only(self) -> bool:
        m = SIGNAL_SPEC.match(self.signal or "")
        return bool(m and "B" in (m.group("flags") or ""))


def parse_directives(script: str) -> ScriptDirectives:
    """`#SBATCH` lines before the first command (sbatch ignores the ones after it)."""
    found = ScriptDirectives()
    for number, line in enumerate(script.splitlines()):
        stripped = line.strip()
        if number == 0 and stripped.startswith("#!"):
            continue
        if not stripped or (stripped.startswith("#") and not stripped.startswith("#SBATCH")):
            continue
        if not stripped.startswith("#SBATCH"):
            break
        words = stripped[len("#SBATCH"):].split("#", 1)[0].split()
        for i, word in enumerate(words):
            name, eq, value = word.partition("=")
            if name == "--signal":
                found.signal = value if eq else (words[i + 1] if i + 1 < len(words) else "")
            elif name == "--requeue":
                found.requeue = True
            elif name == "--no-requeue":
                found.requeue = False
    return found


def build_result(job_id: str, fields: dict[str, str], script: ScriptDirectives | None,
                 script_source: str, raw: str) -> ProbeResult:
    facts: dict[str, object] = {"job_id": job_id}
    evidence: dict[str, str] = {}
    state = fields.get("JobState", "")
    if state:
        facts["state"] = state
    limit_text, run_text = fields.get("TimeLimit", ""), fields.get("RunTime", "")
    limit, run = parse_duration(limit_text), parse_duration(run_text)
    facts["unlimited"] = limit_text.upper() == "UNLIMITED"
    if limit is not None:
        facts["time_limit_s"] = limit
    if run is not None:
        facts["run_time_s"] = run
    timing = (f"job {job_id} ({state or 'state unknown'}): "
              f"ran {run_text or '?'} of {limit_text or '?'}")
    if limit is not None and run is not None:
        left = max(0, limit - run)
        facts["time_left_s"] = left
        timing += f", {left // 3600} h {left % 3600 // 60} min left"
    for fact in ("state", "unlimited", "time_limit_s", "run_time_s", "time_left_s"):
        if fact in facts:
            evidence[fact] = timing
    if fields.get("Requeue") in ("0", "1"):
        facts["requeue"] = fields["Requeue"] == "1"
        evidence["requeue"] = f"job {job_id}: Requeue={fields['Requeue']}"
    if fields.get("Restarts", "").isdigit():
        facts["restarts"] = int(fields["Restarts"])
        evidence["restarts"] = f"job {job_id}: Restarts={fields['Restarts']}"
    if fields.get("BatchFlag") in ("0", "1"):
        facts["batch"] = fields["BatchFlag"] == "1"
    signal_line = ""
    if script is not None:
        facts["signal_in_script"] = script.signal is not None
        if script.signal is not None and script.signal_name:
            facts["script_signal"] = script.signal_name
            facts["signal_lead_s"] = script.lead_s or DEFAULT_SIGNAL_LEAD_S
            facts["signal_batch_only"] = script.batch_only
            target = "the batch shell only" if script.batch_only else "every job step"
            signal_line = (f"the batch script ({script_source}) asks for SIG{script.signal_name} "
                           f"{facts['signal_lead_s']} s before the time limit, sent to {target}")
        else:
            signal_line = (f"the batch script ({script_source}) has no #SBATCH --signal line "
                           "(a --signal given on the sbatch command line would not show here)")
        for fact in ("signal_in_script", "script_signal", "signal_lead_s", "signal_batch_only"):
            if fact in facts:
                evidence[fact] = signal_line
    summary = timing + (f"; {signal_line}" if signal_line else "; batch script not readable")
    if not fields:
        return ProbeResult(NAME, "unavailable", f"could not read scontrol output for job {job_id}",
                           facts, raw, evidence=evidence)
    warned = script is not None and script.signal is not None
    status: Status = "ok" if warned or facts["unlimited"] or script is None else "warn"
    return ProbeResult(NAME, status, summary, facts, raw, evidence=evidence)


def probe(budget: Budget, context: ProbeContext = NO_CONTEXT) -> ProbeResult:
    del context  # the job is read from SLURM_JOB_ID, not from the walk
    job_id = next((v.strip() for v in (os.environ.get(k, "") for k in JOB_ENV) if v.strip()), "")
    if not job_id:
        return unavailable(NAME, "not inside a Slurm job (SLURM_JOB_ID is not set; export it "
                                 "to check a running job from a login node)")
    if not JOB_ID.match(job_id):
        return unavailable(NAME, f"SLURM_JOB_ID={job_id[:40]!r} is not a job id")
    show = run_cmd(["scontrol", "show", "job", job_id], budget.remaining())
    raw = f"$ scontrol show job {job_id}\n{show.combined()}"
    if show.error:
        return ProbeResult(NAME, "unavailable", show.error, raw=raw)
    if show.returncode != 0:
        return ProbeResult(NAME, "fail", f"scontrol failed: {show.first_error_line()[:160]}",
                           raw=raw)
    fields = parse_show_job(show.stdout)
    if "JobId" not in fields and "JobState" not in fields:
        return ProbeResult(NAME, "unavailable",
                           f"could not read scontrol output: {show.first_error_line()[:120]}",
                           raw=raw)
    script: ScriptDirectives | None = None
    source = ""
    written = run_cmd(["scontrol", "write", "batch_script", job_id, "-"], budget.remaining())
    if written.ok and written.stdout.strip():
        script, source = parse_directives(written.stdout), "scontrol write batch_script"
    else:
        command = fields.get("Command", "")
        if fields.get("BatchFlag") == "1" and command.startswith("/"):
            try:
                with open(command, encoding="utf-8", errors="replace") as fh:
                    script = parse_directives(fh.read(1_000_000))
                source = f"{command}, which may have changed since submission"
            except OSError:
                script = None
    if script is not None:
        directives = [f"#SBATCH --signal={script.signal}" if script.signal is not None else "",
                      "#SBATCH --requeue" if script.requeue else ""]
        raw += f"\n$ scontrol write batch_script {job_id} - | grep '#SBATCH'\n" + "\n".join(
            d for d in directives if d)
    return build_result(job_id, fields, script, source, raw)
