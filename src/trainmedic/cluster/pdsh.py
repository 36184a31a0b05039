"""The host-list fan-out through pdsh, for sites that use it instead of plain ssh loops.

Chosen with `TRAINMEDIC_FANOUT=pdsh`. pdsh prefixes every output line with `host: ` and reports
its own failures as `pdsh@<local>: host: ...` on stderr; `-u` bounds each node's command and
`-t` its connection, `-f` how many run at once.
"""

from __future__ import annotations

import re
import shlex
import shutil
import time
from collections.abc import Sequence

from trainmedic.cluster import hostlist
from trainmedic.cluster.fanout import (
    FANOUT_WIDTH,
    SSH_CONNECT_TIMEOUT,
    FanoutRun,
    NodeAnswer,
    answer_from_output,
    one_line,
    remote_command,
    run_bounded,
)
from trainmedic.errors import UsageError

_PREFIXED = re.compile(r"^([^\s:]+): ?(.*)$")
_PDSH_ERROR = re.compile(r"^pdsh@[^:]*: ([^\s:]+): (.*)$")


def pdsh_argv(nodes: Sequence[str], remote: Sequence[str], timeout: float) -> list[str]:
    connect = max(1, min(SSH_CONNECT_TIMEOUT, int(timeout)))
    return [
        "pdsh", "-R", "ssh", "-f", str(FANOUT_WIDTH), "-t", str(connect),
        "-u", str(max(1, int(timeout))), "-w", hostlist.compress(nodes), shlex.join(remote),
    ]


def parse_pdsh_output(nodes: Sequence[str], stdout: str, stderr: str, *, timeout: float,
                      timed_out: bool, duration: float) -> list[NodeAnswer]:
    """Group `host: line` output per node; pdsh's own error lines decide the silent ones."""
    out: dict[str, list[str]] = {}
    err: dict[str, list[str]] = {}
    pdsh_errors: dict[str, str] = {}
    for line in stdout.splitlines():
        if match := _PREFIXED.match(line):
            out.setdefault(match.group(1), []).append(match.group(2))
    for line in stderr.splitlines():
        if match := _PDSH_ERROR.match(line):
            pdsh_errors[match.group(1)] = match.group(2)
        elif match := _PREFIXED.match(line):
            err.setdefault(match.group(1), []).append(match.group(2))
    answers = []
    for node in nodes:
        text, errors = "\n".join(out.get(node, [])), "\n".join(err.get(node, []))
        problem = pdsh_errors.get(node, "")
        answer = answer_from_output(node, text, errors, None, duration)
        if answer.state == "ok" or text.strip():
            answers.append(answer)
        elif "command timeout" in problem or (timed_out and not problem):
            answers.append(NodeAnswer(node, "no-answer", None, f"no answer within {timeout:g}s",
                                      duration))
        elif "exit code 255" in problem or "connect" in problem.lower():
            answers.append(NodeAnswer(node, "unreachable", None,
                                      one_line(errors) or problem, duration))
        else:
            detail = one_line(errors) or problem or "no output"
            answers.append(NodeAnswer(node, "error", None, detail, duration))
    return answers


def fan_out_pdsh(nodes: list[str], names: Sequence[str], *, timeout: float) -> FanoutRun:
    if shutil.which("pdsh") is None:
        raise UsageError("TRAINMEDIC_FANOUT=pdsh but pdsh is not on PATH")
    argv = pdsh_argv(nodes, remote_command(names), timeout)
    started = time.monotonic()
    # pdsh bounds each node itself; our deadline only catches pdsh hanging as a whole
    batches = -(-len(nodes) // FANOUT_WIDTH)
    try:
        stdout, stderr, _code, timed_out = run_bounded(argv, timeout * batches + 10)
    except OSError as exc:  # found on PATH but not runnable (permissions, bad interpreter)
        raise UsageError(f"could not run pdsh: {exc.strerror or exc}") from None
    wall = time.monotonic() - started
    answers = parse_pdsh_output(nodes, stdout, stderr, timeout=timeout, timed_out=timed_out,
                                duration=wall)
    return FanoutRun("pdsh", nodes, answers, argv, wall)
