"""The `checkpoint-dir` probe: room and state of the directory the job saves checkpoints to.

"No space left on device" on a save is as often inodes or a quota as bytes, and a crash during
a save leaves an iteration directory newer than the tracker file. The directory is not known to
the machine: it comes from TRAINMEDIC_SAVE_DIR, else from `--save` (Megatron-LM) or
`--output_dir` (HF Trainer) in the launch script named by TRAINMEDIC_LAUNCH_SCRIPT. `df` runs
under a timeout, so a stalled network mount makes the probe fail with that finding instead of
hanging; the directory itself is read only after `df` answered.
"""

from __future__ import annotations

import contextlib
import os
import re
from dataclasses import dataclass

from trainmedic.errors import TrainmedicError
from trainmedic.probes.base import (
    NO_CONTEXT,
    Budget,
    ProbeContext,
    ProbeResult,
    Status,
    unavailable,
)
from trainmedic.probes.subproc import CmdResult, run_cmd

NAME = "checkpoint-dir"
SAVE_DIR_ENV = "TRAINMEDIC_SAVE_DIR"
SCRIPT_ENV = "TRAINMEDIC_LAUNCH_SCRIPT"
SAVE_FLAGS = ("--save", "--output_dir", "--output-dir")
NETWORK_FS = ("nfs", "nfs4", "lustre", "gpfs", "cifs", "smb3", "beegfs", "ceph", "wekafs",
              "glusterfs", "fuse.")
# Tracker files: Megatron-LM writes the iteration, DeepSpeed the tag ("global_step1000").
TRACKERS = ("latest_checkpointed_iteration.txt", "latest")
ITERATION_DIR = re.compile(r"^(?:iter_|global_step|checkpoint-)(\d+)$")
FULL = 0.98
NEARLY_FULL = 0.90

_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4, "P": 1024**5,
          "E": 1024**6}


@dataclass
class DfRow:
    """One file system row of `df` (bytes) or `df -i` (inodes); None where df prints `-`."""

    filesystem: str
    mount: str
    used: float | None
    free: float | None

    @property
    def used_fraction(self) -> float | None:
        # df's Use% is used / (used + available): reserved blocks count as neither
        if self.used is None or self.free is None or self.used + self.free <= 0:
            return None
        return self.used / (self.used + self.free)


def _amount(token: str, scale: float) -> float | None:
    """A df number: plain (times the column's block size) or human-readable (47G, 1.6M)."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([KMGTPE]?)i?B?", token.strip())
    if not m:
        return None
    value = float(m.group(1))
    return value * _UNITS[m.group(2)] if m.group(2) else value * scale


def _columns(header: str) -> tuple[list[str], float] | None:
    """Column names (with "Mounted on" as one) and the block size, or None if not a df header."""
    words = header.replace("Mounted on", "Mounted_on").split()
    if len(words) < 5 or words[0] != "Filesystem" or words[-1] != "Mounted_on":
        return None
    scale = 1.0
    for word in words:
        if m := re.fullmatch(r"(\d+)([KkM]?)-blocks", word):
            scale = float(m.group(1)) * {"": 1, "K": 1024, "k": 1024, "M": 1024**2}[m.group(2)]
    return words, scale


def parse_df(text: str) -> list[DfRow]:
    """Rows of `df`, `df -P`, `df -h`, `df -hT`, `df -i` or `df -ih` output (header-driven)."""
    lines = [line for line in text.splitlines() if line.strip()]
    start = next((i for i, line in enumerate(lines) if _columns(line)), None)
    if start is None:
        return []
    names, scale = _columns(lines[start]) or ([], 1.0)
    used_col = next((i for i, n in enumerate(names) if n in ("Used", "IUsed")), None)
    free_col = next((i for i, n in enumerate(names) if n in ("Avail", "Available", "IFree")), None)
    if used_col is None or free_col is None:
        return []
    rows: list[DfRow] = []
    pending = ""
    for line in lines[start + 1:]:
        words = (pending + " " + line).split() if pending else line.split()
        if len(words) == 1:  # classic df wraps a long device name onto its own line
            pending = words[0]
            continue
        pending = ""
        if len(words) < len(names):
            continue
        fixed = words[: len(names) - 1]
        mount = " ".join(words[len(names) - 1:])
        rows.append(DfRow(fixed[0], mount, _amount(fixed[used_col], scale),
                          _amount(fixed[free_col], scale)))
    return rows


def row_for(rows: list[DfRow], path: str) -> DfRow | None:
    """The row whose mount point is the longest prefix of `path` (else the last row)."""
    best: DfRow | None = None
    for row in rows:
        mount = row.mount.rstrip("/") or "/"
        if (path == mount or path.startswith(mount.rstrip("/") + "/")) and (
            best is None or len(mount) > len(best.mount.rstrip("/") or "/")
        ):
            best = row
    return best or (rows[-1] if rows else None)


def fs_type(path: str, mounts_text: str) -> str:
    """File system type of the mount holding `path`, from /proc/self/mounts text."""
    best, kind = "", ""
    for line in mounts_text.splitlines():
        parts = line.split()
        if len(parts) < 3:
            continue
        mount = parts[1].replace("\\040", " ")
        covers = path == mount or path.startswith(mount.rstrip("/") + "/") or mount == "/"
        if covers and len(mount) >= len(best):
            best, kind = mount, parts[2]
    return kind


_RAW_SAVE = re.compile(r"--(?:save|output_dir|output-dir)(?:=|[ \t]+)(\"[^\"]*\"|'[^']*'|\S+)")
_SENTINEL = "\u27e8script-argument\u27e9"


def save_dir_from_script(text: str, environ: dict[str, str] | None = None) -> str | None:
    """The last `--save` / `--output_dir` value of a launch script, when the script fixes it.

    The static interpreter expands an unset variable to "", which would turn
    `--save $BASE/ckpt` into `/ckpt`: a value that depends on a variable neither set in the
    script nor in `environ`, or on the script's own arguments ($1...), is refused instead.
    """
    from trainmedic.launch.shell import UNKNOWN, interpret

    env = dict(os.environ if environ is None else environ)
    raw = _RAW_SAVE.findall(text)
    if not raw:
        return None
    for word in raw:
        for name in re.findall(r"\$\{?([A-Za-z_]\w*)", word):
            assigned = re.search(rf"(?m)^\s*(?:export\s+|local\s+|readonly\s+)?{name}=", text)
            if name not in env and not assigned:
                return None
    value = None
    for cmd in interpret(text, env, [_SENTINEL] * 99).commands:
        for i, word in enumerate(cmd.argv):
            name, eq, inline = word.partition("=")
            if name not in SAVE_FLAGS:
                continue
            candidate = inline if eq else (cmd.argv[i + 1] if i + 1 < len(cmd.argv) else "")
            if candidate and not candidate.startswith("-"):
                value = candidate
    if not value or UNKNOWN in value or _SENTINEL in value:
        return None
    return value


def locate(context: ProbeContext = NO_CONTEXT) -> tuple[str | None, str]:
    """(directory, where it came from), or (None, why there is none).

    The walk's launch command (pasted in the app, or given to the walk) wins over
    TRAINMEDIC_LAUNCH_SCRIPT, as it does for the memory probe.
    """
    given = os.environ.get(SAVE_DIR_ENV, "").strip()
    if given:
        return given, SAVE_DIR_ENV
    from trainmedic.launch.script import read_launch_text, read_script

    script = os.environ.get(SCRIPT_ENV, "").strip()
    try:
        if context.launch_command.strip():
            text, script = read_launch_text(context.launch_command)
        elif script:
            text = read_script(script)
        else:
            return None, (f"no checkpoint directory: set {SAVE_DIR_ENV}=DIR, or "
                          f"{SCRIPT_ENV}=launch.sh with --save/--output_dir in it")
        found = save_dir_from_script(text)
    except TrainmedicError as exc:
        return None, str(exc)
    if not found:
        return None, f"{script}: no --save/--output_dir with a fixed value; set {SAVE_DIR_ENV}"
    return found, f"--save in {script}"


@dataclass
class CheckpointState:
    """What the directory says about its saves: tracker iteration and newer directories."""

    tracker: str = ""
    tracker_iteration: int | None = None
    newest_iteration: int | None = None
    newer_than_tracker: int = 0


def read_state(path: str, names: list[str]) -> CheckpointState:
    """Tracker file and iteration directories among `names` (the directory's entries)."""
    state = CheckpointState()
    iterations = sorted(int(m.group(1)) for n in names if (m := ITERATION_DIR.match(n)))
    state.newest_iteration = iterations[-1] if iterations else None
    for tracker in TRACKERS:
        if tracker not in names:
            continue
        try:
            with open(os.path.join(path, tracker), encoding="utf-8", errors="replace") as fh:
                text = fh.read(256).strip()
        except OSError:
            continue
        digits = re.search(r"(\d+)\s*$", text)
        state.tracker = tracker
        if digits:
            state.tracker_iteration = int(digits.group(1))
            state.newer_than_tracker = sum(1 for i in iterations if i > state.tracker_iteration)
        break
    return state


def _df(path: str, inodes: bool, budget: Budget) -> CmdResult:
    argv = ["df", "-P", "-i", path] if inodes else ["df", "-P", "-k", path]
    return run_cmd(argv, budget.remaining())


def _nearest_existing(path: str, budget: Budget) -> tuple[str, CmdResult]:
    """df on `path`, or on its nearest parent that exists (a first save creates the directory)."""
    current = path
    while True:
        res = _df(current, False, budget)
        missing = "No such file or directory" in res.stderr
        parent = os.path.dirname(current.rstrip("/")) or "/"
        if not missing or parent == current or budget.remaining() <= 0:
            return current, res
        current = parent


def build_result(path: str, source: str, blocks: DfRow | None, inodes: DfRow | None,
                 exists: bool, kind: str, state: CheckpointState, raw: str) -> ProbeResult:
    facts: dict[str, object] = {"path": path, "source": source, "exists": exists}
    evidence: dict[str, str] = {}
    where = f"{path} ({source})"
    details: dict[str, tuple[float, str]] = {}  # fact -> (used fraction, human detail)
    if blocks is not None and blocks.used_fraction is not None and blocks.free is not None:
        facts["used_fraction"] = round(blocks.used_fraction, 4)
        facts["free_gib"] = round(blocks.free / 1024**3, 2)
        details["used_fraction"] = (blocks.used_fraction, (
            f"{blocks.used_fraction:.0%} of the space used, "
            f"{blocks.free / 1024**3:.1f} GiB free on {blocks.mount}"))
        evidence["used_fraction"] = evidence["free_gib"] = f"{where}: {details['used_fraction'][1]}"
    if inodes is not None and inodes.used_fraction is not None and inodes.free is not None:
        facts["inodes_used_fraction"] = round(inodes.used_fraction, 4)
        facts["inodes_free"] = int(inodes.free)
        details["inodes_used_fraction"] = (inodes.used_fraction, (
            f"{inodes.used_fraction:.0%} of the inodes used, {int(inodes.free)} free"))
        evidence["inodes_used_fraction"] = evidence["inodes_free"] = (
            f"{where}: {details['inodes_used_fraction'][1]}")
    worst, worst_detail = max(details.values(), default=(0.0, ""))
    if details:
        facts["worst_used_fraction"] = round(worst, 4)
        evidence["worst_used_fraction"] = f"{where}: {worst_detail}"
    if kind:
        facts["fs_type"] = kind
        facts["network_fs"] = kind.startswith(NETWORK_FS)
        evidence["fs_type"] = evidence["network_fs"] = f"{where}: file system type {kind}"
    partial = ""
    if state.tracker_iteration is not None:
        facts["tracker_iteration"] = state.tracker_iteration
        facts["partial_saves"] = state.newer_than_tracker
        partial = (f"{state.tracker} names iteration {state.tracker_iteration}; "
                   f"{state.newer_than_tracker} iteration director"
                   f"{'y is' if state.newer_than_tracker == 1 else 'ies are'} newer "
                   "(a save in progress or one that never finished)")
        evidence["tracker_iteration"] = evidence["partial_saves"] = f"{where}: {partial}"
    if state.newest_iteration is not None:
        facts["newest_iteration"] = state.newest_iteration
        evidence["newest_iteration"] = (
            f"{where}: newest iteration directory {state.newest_iteration}")
    status: Status
    if not exists:
        status, summary = "warn", f"{where} does not exist yet (its nearest parent was checked)"
    elif worst >= FULL:
        status, summary = "fail", f"{where} is full: {worst_detail}"
    elif worst >= NEARLY_FULL:
        status, summary = "warn", f"{where} is nearly full: {worst_detail}"
    elif state.newer_than_tracker:
        status, summary = "warn", f"{where}: {partial}"
    elif not details:
        status, summary = "unavailable", f"could not read the usage of {where} from df"
    else:
        status = "ok"
        summary = f"{where}: {worst_detail}" + (
            f"; tracker at iteration {state.tracker_iteration}"
            if state.tracker_iteration is not None else "")
    return ProbeResult(NAME, status, summary, facts, raw, evidence=evidence)


def probe(budget: Budget, context: ProbeContext = NO_CONTEXT) -> ProbeResult:
    path, source = locate(context)
    if path is None:
        return unavailable(NAME, source)
    path = os.path.abspath(os.path.expanduser(path))  # no symlink resolution: it could block
    checked, res = _nearest_existing(path, budget)
    raw = f"$ df -P -k {checked}\n{res.combined()}"
    if res.timed_out:
        return ProbeResult(NAME, "fail", f"the file system of {path} did not answer within "
                           f"{budget.seconds:.0f}s: a stalled network mount?", raw=raw)
    if not res.ok:
        status: Status = "unavailable" if res.returncode is None else "fail"
        return ProbeResult(NAME, status, f"df failed: {res.first_error_line()[:160]}", raw=raw)
    rows = parse_df(res.stdout)
    if not rows:
        return ProbeResult(NAME, "unavailable",
                           f"could not read df output: {res.first_error_line()[:120]}", raw=raw)
    ires = _df(checked, True, budget)
    raw += f"\n$ df -P -i {checked}\n{ires.combined()}"
    inode_rows = parse_df(ires.stdout) if ires.ok else []
    try:
        with open("/proc/self/mounts", encoding="utf-8", errors="replace") as fh:
            kind = fs_type(checked, fh.read())
    except OSError:
        kind = ""
    exists = checked == path
    state = CheckpointState()
    if exists and not budget.remaining() <= 0:
        with contextlib.suppress(OSError):
            state = read_state(path, os.listdir(path))
    return build_result(path, source, row_for(rows, checked), row_for(inode_rows, checked),
                        exists, kind, state, raw)
