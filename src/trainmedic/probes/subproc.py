"""Run one external program safely: argument list, own session, hard timeout, no exceptions.

During an incident nvidia-smi can hang for minutes (a GPU fell off the bus) and dmesg can be
forbidden; the probe must still come back with a reason. `trainmedic.children` starts the child
in its own session and kills the whole group at the timeout (or when trainmedic is told to end);
every failure becomes a `CmdResult`.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass

from trainmedic import children

MAX_OUTPUT_CHARS = 2_000_000  # nvidia-smi -q -x on 8 GPUs is ~300 KB; anything beyond is junk


@dataclass
class CmdResult:
    argv: list[str]
    returncode: int | None  # None when the program did not run to completion
    stdout: str = ""
    stderr: str = ""
    error: str = ""  # why it did not run or did not finish: "not found", "timed out after 5s"...
    duration_s: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.error and self.returncode == 0

    @property
    def timed_out(self) -> bool:
        return "timed out" in self.error

    def first_error_line(self) -> str:
        """The most telling line for a summary: the error, else stderr, else stdout."""
        for text in (self.error, self.stderr, self.stdout):
            for line in text.splitlines():
                if line.strip():
                    return line.strip()
        return f"exit status {self.returncode}"

    def combined(self) -> str:
        return "\n".join(part for part in (self.stdout, self.stderr) if part)


def _decode(data: bytes | None) -> str:
    if not data:
        return ""
    return data[:MAX_OUTPUT_CHARS].decode("utf-8", errors="replace")


def _not_executable(name: str) -> str:
    """The path of a file named `name` on PATH that we may not execute, or ""."""
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        candidate = os.path.join(folder or ".", name)
        if os.path.isfile(candidate) and not os.access(candidate, os.X_OK):
            return candidate
    return ""


def run_cmd(argv: Sequence[str], timeout: float) -> CmdResult:
    """Run `argv` (never through a shell) for at most `timeout` seconds."""
    args = [str(a) for a in argv]
    if timeout <= 0:
        return CmdResult(args, None, error="timed out before it could start")
    exe = shutil.which(args[0])
    if exe is None:
        blocked = _not_executable(args[0])
        if blocked:
            return CmdResult(args, None, error=f"{args[0]}: permission denied ({blocked})")
        return CmdResult(args, None, error=f"{args[0]}: not found on PATH")
    env = dict(os.environ, LC_ALL="C", LANG="C")
    try:
        done = children.run([exe, *args[1:]], timeout, env=env)
    except PermissionError:
        return CmdResult(args, None, error=f"{args[0]}: permission denied")
    except OSError as exc:
        return CmdResult(args, None, error=f"{args[0]}: {exc.strerror or exc}")
    if done.timed_out:
        return CmdResult(args, None, _decode(done.stdout), _decode(done.stderr),
                         error=f"{args[0]}: timed out after {timeout:.3g}s",
                         duration_s=done.duration_s)
    return CmdResult(args, done.returncode, _decode(done.stdout), _decode(done.stderr),
                     duration_s=done.duration_s)
