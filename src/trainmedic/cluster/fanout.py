"""Run `trainmedic probe --json --no-raw` on every node, through srun or ssh, and collect answers.

No remote-execution system of our own: inside a Slurm allocation one `srun --overlap` step runs
the probe once per node beside the training job; for a plain host list, `ssh -o BatchMode=yes`
runs it on at most FANOUT_WIDTH hosts at once. Every node is bounded by a time limit, and a node
that does not answer, answers garbage or cannot be reached is recorded, never raised: that node
is usually the finding. Programs run from argument lists, never through a local shell.

Environment:
- `TRAINMEDIC_REMOTE`: the command that runs trainmedic on a node (default `trainmedic`; e.g.
  `python3 -m trainmedic` or `/shared/venv/bin/trainmedic`), split like a shell would.
- `TRAINMEDIC_SRUN_ARGS`: extra srun options (e.g. `--gpus-per-node=8 --partition=gpu`).
- `TRAINMEDIC_SSH_ARGS`: extra ssh options (e.g. `-l alice -J bastion`).
- `TRAINMEDIC_FANOUT`: `ssh` (default) or `pdsh` for host lists (see cluster/pdsh.py).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

from trainmedic import children
from trainmedic.cluster import hostlist
from trainmedic.cluster.result import NodeAnswer
from trainmedic.errors import UsageError

FANOUT_WIDTH = 32  # ssh sessions at once: enough to be quick, few enough not to trip sshd limits
DEFAULT_NODE_TIMEOUT = 60.0
SSH_CONNECT_TIMEOUT = 10
_QUERY_TIMEOUT = 15.0  # squeue / scontrol


@dataclass
class FanoutRun:
    """All answers, in node order, and how they were gathered."""

    method: str
    nodes: list[str]
    answers: list[NodeAnswer]
    command: list[str] = field(default_factory=list)
    wall_s: float = 0.0


# ---------------------------------------------------------------------------------------------
# Which nodes


def remote_command(names: Sequence[str]) -> list[str]:
    """The argument list each node runs (TRAINMEDIC_REMOTE, then `probe --json --no-raw`)."""
    base = os.environ.get("TRAINMEDIC_REMOTE", "").strip() or "trainmedic"
    try:
        words = shlex.split(base)
    except ValueError as exc:
        raise UsageError(f"TRAINMEDIC_REMOTE is not a valid command line: {exc}") from None
    return [*words, "probe", "--json", "--no-raw", *names]


def _extra_args(variable: str) -> list[str]:
    try:
        return shlex.split(os.environ.get(variable, ""))
    except ValueError as exc:
        raise UsageError(f"{variable} is not a valid argument list: {exc}") from None


def _run_query(argv: list[str]) -> str | None:
    """stdout of a Slurm query, or None when the tool is missing, fails or hangs."""
    if shutil.which(argv[0]) is None:
        return None
    try:
        done = children.run(argv, _QUERY_TIMEOUT)
    except OSError:
        return None
    if done.timed_out or done.returncode != 0:
        return None
    return done.stdout.decode("utf-8", "replace")


def job_nodelist(job: str) -> str:
    """The nodelist of one of the user's jobs: `squeue -h -j ID -o %N`, else `scontrol`."""
    if not re.fullmatch(r"[0-9]+(?:[_+][0-9]+)?", job):
        raise UsageError(f"--job {job!r} is not a Slurm job id")
    out = _run_query(["squeue", "-h", "-j", job, "-o", "%N"])
    if out is not None and out.strip():
        return out.strip().splitlines()[0].strip()
    out = _run_query(["scontrol", "show", "job", job])
    if out is not None:
        match = re.search(r"(?<![A-Za-z])NodeList=(\S+)", out)
        if match and match.group(1) not in ("(null)", ""):
            return match.group(1)
    if shutil.which("squeue") is None and shutil.which("scontrol") is None:
        raise UsageError("--job needs squeue or scontrol on PATH (is this a Slurm login node?)")
    raise UsageError(f"job {job} has no nodes (not running, or not yours?)")


def resolve_nodes(spec: str, job: str | None) -> tuple[list[str], bool]:
    """SPEC -> (node names, through_slurm). `slurm` means the allocation or `--job ID`."""
    if spec.strip().lower() == "slurm":
        if job:
            nodelist = job_nodelist(job)
        else:
            found = os.environ.get("SLURM_JOB_NODELIST") or os.environ.get("SLURM_NODELIST")
            if not found:
                raise UsageError(
                    "--nodes slurm: SLURM_JOB_NODELIST is not set; run inside an allocation "
                    "or add --job ID"
                )
            nodelist = found
        return hostlist.expand(nodelist), True
    return hostlist.expand(spec), False


# ---------------------------------------------------------------------------------------------
# Reading what a node printed


def parse_payload(text: str) -> dict[str, Any] | None:
    """The probe JSON object in a node's stdout, or None when it is not one."""
    text = text.strip()
    if not text:
        return None
    candidates = [text]
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    for candidate in candidates:
        try:
            data = json.loads(candidate)
        except ValueError:
            continue
        if _looks_like_probe_output(data):
            return data
    return None


def _looks_like_probe_output(data: object) -> bool:
    if not isinstance(data, dict) or not isinstance(data.get("probes"), list):
        return False
    return all(
        isinstance(p, dict) and isinstance(p.get("name"), str) and isinstance(p.get("facts"), dict)
        for p in data["probes"]
    )


def one_line(text: str, limit: int = 160) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    line = lines[-1] if lines else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _short(host: str) -> str:
    return host.split(".", 1)[0]


def answer_from_output(
    host: str, stdout: str, stderr: str, returncode: int | None, duration: float
) -> NodeAnswer:
    payload = parse_payload(stdout)
    if payload is not None:
        return NodeAnswer(host, "ok", payload, "", duration)
    if stdout.strip():
        return NodeAnswer(host, "garbage", None, f"not probe JSON: {one_line(stdout)}", duration)
    reason = one_line(stderr) or f"exit code {returncode}, no output"
    if returncode == 127 or "command not found" in stderr or "No such file" in stderr:
        reason += " (set TRAINMEDIC_REMOTE to the node's trainmedic command)"
    return NodeAnswer(host, "error", None, reason, duration)


# ---------------------------------------------------------------------------------------------
# srun


_LABEL = re.compile(r"^\s*(\d+)\s?: ?(.*)$")
_SRUN_TASK_ERROR = re.compile(r"^srun: error: (\S+): tasks? ([0-9,\-]+): (.*)$")
_SRUN_LAUNCH_ERROR = re.compile(r"^srun: error: Task launch for \S+ failed on node (\S+): (.*)$")


def srun_argv(nodes: Sequence[str], job: str | None, remote: Sequence[str]) -> list[str]:
    """One step, one task per node, beside whatever already runs there (--overlap)."""
    argv = [
        "srun",
        f"--nodes={len(nodes)}",
        f"--ntasks={len(nodes)}",
        "--ntasks-per-node=1",
        "--overlap",
        f"--nodelist={hostlist.compress(nodes)}",
        "--kill-on-bad-exit=0",  # one broken node must not take the others' answers with it
        "--wait=0",
        "--label",  # (not --unbuffered: it gives tasks a pty, which merges stderr into stdout)
        "--job-name=trainmedic-probe",
    ]
    if job:
        argv.append(f"--jobid={job}")
    return [*argv, *_extra_args("TRAINMEDIC_SRUN_ARGS"), *remote]


def _task_numbers(text: str) -> list[int]:
    numbers: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        if lo.isdigit() and (not hi or hi.isdigit()):
            numbers.extend(range(int(lo), int(hi or lo) + 1))
    return numbers


def parse_srun_output(
    nodes: Sequence[str], stdout: str, stderr: str, *, timed_out: bool, timeout: float,
    returncode: int | None, duration: float,
) -> list[NodeAnswer]:
    """Attribute `srun --label` output to nodes.

    A task is placed by the `host` its JSON names; else by srun's own error lines
    (`srun: error: HOST: task N: ...`); else by position (Slurm gives task i to the i-th node
    of the step's nodelist when there is one task per node).
    """
    out_by_task: dict[int, list[str]] = {}
    err_by_task: dict[int, list[str]] = {}
    task_host: dict[int, str] = {}
    launch_failed: dict[str, str] = {}
    general_errors: list[str] = []
    for line in stdout.splitlines():
        match = _LABEL.match(line)
        if match:
            out_by_task.setdefault(int(match.group(1)), []).append(match.group(2))
    for line in stderr.splitlines():
        if task_error := _SRUN_TASK_ERROR.match(line):
            for task in _task_numbers(task_error.group(2)):
                task_host[task] = task_error.group(1)
                err_by_task.setdefault(task, []).append(task_error.group(3))
        elif launch := _SRUN_LAUNCH_ERROR.match(line):
            launch_failed[_short(launch.group(1))] = launch.group(2)
        elif labelled := _LABEL.match(line):
            err_by_task.setdefault(int(labelled.group(1)), []).append(labelled.group(2))
        elif line.startswith("srun: "):  # e.g. "Job step creation temporarily disabled"
            general_errors.append(line)

    by_short = {_short(n): n for n in nodes}
    answers: dict[str, NodeAnswer] = {}
    for task in sorted(set(out_by_task) | set(err_by_task)):
        text = "\n".join(out_by_task.get(task, []))
        err = "\n".join(err_by_task.get(task, []))
        answer = answer_from_output("", text, err, None, duration)
        claimed = answer.payload.get("host") if answer.payload else None
        host = None
        for candidate in (claimed, task_host.get(task)):
            if isinstance(candidate, str) and _short(candidate) in by_short:
                host = by_short[_short(candidate)]
                break
        if host is None and task < len(nodes):
            host = nodes[task]
        if host is None or (host in answers and answers[host].state == "ok"):
            continue
        if timed_out and answer.state == "error" and not text.strip():
            # srun reports the task it killed at our deadline; the node simply never answered
            answer = NodeAnswer(host, "no-answer", None, f"no answer within {timeout:g}s",
                                duration)
        answer.host = host
        answers[host] = answer

    result: list[NodeAnswer] = []
    for node in nodes:
        if node in answers:
            result.append(answers[node])
        elif _short(node) in launch_failed:
            reason = f"srun could not launch on it: {launch_failed[_short(node)]}"
            result.append(NodeAnswer(node, "unreachable", None, reason, duration))
        elif timed_out:
            # srun's own last words explain the silence only when no task ran at all
            nobody = not answers and not launch_failed
            why = f" (srun said: {one_line(general_errors[-1])})" if general_errors and nobody \
                else ""
            result.append(NodeAnswer(node, "no-answer", None,
                                     f"no answer within {timeout:g}s{why}", duration))
        else:
            reason = (one_line(general_errors[-1]) if general_errors
                      else f"no output (srun exit code {returncode})")
            result.append(NodeAnswer(node, "error", None, reason, duration))
    return result


def _drain(stream: IO[str], sink: list[str]) -> None:
    for line in iter(stream.readline, ""):
        sink.append(line)
    stream.close()


def run_bounded(argv: list[str], timeout: float) -> tuple[str, str, int | None, bool]:
    """Run argv, reading output as it comes; on the deadline stop it and keep what was said.

    Returns (stdout, stderr, returncode or None, timed_out). `trainmedic.children` gives the
    child its own session, so stopping it (SIGTERM first: srun cancels its step) also stops
    what it started (srun's helpers, ssh's proxies), at the deadline, on Ctrl-C or when
    trainmedic is told to end.
    """
    proc = children.spawn(argv, text=True)
    out: list[str] = []
    err: list[str] = []
    readers = [
        threading.Thread(target=_drain, args=(proc.stdout, out), daemon=True),
        threading.Thread(target=_drain, args=(proc.stderr, err), daemon=True),
    ]
    for reader in readers:
        reader.start()
    timed_out = False
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        children.stop(proc, children.TERM_GRACE_S)
    except BaseException:  # Ctrl-C: the child is in its own session and did not see it
        children.stop(proc, children.TERM_GRACE_S)
        raise
    finally:
        children.release(proc)
    for reader in readers:
        reader.join(timeout=2.0)
    return "".join(out), "".join(err), proc.returncode, timed_out


def stop_all() -> None:
    """Stop every child still running (the ssh workers on Ctrl-C, a sweep when the app quits)."""
    children.stop_all(children.TERM_GRACE_S)


def fan_out_srun(
    nodes: list[str], names: Sequence[str], *, job: str | None, timeout: float
) -> FanoutRun:
    if shutil.which("srun") is None:
        raise UsageError("--nodes slurm needs srun on PATH; or give a host list to use ssh")
    argv = srun_argv(nodes, job, remote_command(names))
    started = time.monotonic()
    try:
        stdout, stderr, code, timed_out = run_bounded(argv, timeout)
    except OSError as exc:  # found on PATH but not runnable (permissions, bad interpreter)
        raise UsageError(f"could not run srun: {exc.strerror or exc}") from None
    wall = time.monotonic() - started
    answers = parse_srun_output(
        nodes, stdout, stderr, timed_out=timed_out, timeout=timeout, returncode=code,
        duration=wall,
    )
    return FanoutRun("srun", nodes, answers, argv, wall)


# ---------------------------------------------------------------------------------------------
# ssh


def ssh_argv(host: str, remote: Sequence[str], connect_timeout: int) -> list[str]:
    """ssh never prompts (BatchMode) and gives up connecting after connect_timeout seconds."""
    return [
        "ssh", "-o", "BatchMode=yes", "-o", f"ConnectTimeout={connect_timeout}",
        *_extra_args("TRAINMEDIC_SSH_ARGS"), host, "--", shlex.join(remote),
    ]


def _ssh_one(host: str, remote: Sequence[str], timeout: float) -> NodeAnswer:
    connect = max(1, min(SSH_CONNECT_TIMEOUT, int(timeout)))
    started = time.monotonic()
    try:
        stdout, stderr, code, timed_out = run_bounded(ssh_argv(host, remote, connect), timeout)
    except OSError as exc:
        return NodeAnswer(host, "error", None, f"could not run ssh: {exc}", 0.0)
    duration = time.monotonic() - started
    if timed_out:
        payload = parse_payload(stdout)
        if payload is not None:  # it answered, then the session lingered
            return NodeAnswer(host, "ok", payload, "", duration)
        return NodeAnswer(host, "no-answer", None, f"no answer within {timeout:g}s", duration)
    if code == 255:
        reason = one_line(stderr) or "ssh failed (exit 255)"
        return NodeAnswer(host, "unreachable", None, reason, duration)
    return answer_from_output(host, stdout, stderr, code, duration)


def fan_out_ssh(
    nodes: list[str], names: Sequence[str], *, timeout: float, width: int = FANOUT_WIDTH,
    progress: Callable[[NodeAnswer], None] | None = None,
) -> FanoutRun:
    if shutil.which("ssh") is None:
        raise UsageError("a host list needs ssh on PATH (or use --nodes slurm inside Slurm)")
    from concurrent.futures import ThreadPoolExecutor

    remote = remote_command(names)
    started = time.monotonic()
    pool = ThreadPoolExecutor(max_workers=max(1, min(width, len(nodes))))
    answers = []
    try:
        futures = [pool.submit(_ssh_one, host, remote, timeout) for host in nodes]
        for future in futures:
            answer = future.result()
            if progress:
                progress(answer)
            answers.append(answer)
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        stop_all()
        raise
    pool.shutdown()
    wall = time.monotonic() - started
    return FanoutRun("ssh", nodes, answers, ssh_argv("HOST", remote, SSH_CONNECT_TIMEOUT), wall)
