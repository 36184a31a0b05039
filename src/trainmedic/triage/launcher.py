"""The launcher's own report of which worker failed first.

torchrun (torch.distributed.elastic) ends a failed job with a `ChildFailedError` and a block:

    Root Cause (first observed failure):
    [0]:
      time      : 2024-05-01_12:21:07
      host      : gpu-node-7
      rank      : 3 (local_rank: 3)
      exitcode  : -9 (pid: 41234)
      error_file: <N/A>
      traceback : Signal 9 (SIGKILL) received by PID 41234

The error itself is a symptom: the cause is the first failure's exit code (-9: the host's OOM
killer or the scheduler) and the traceback that rank printed above it. The DeepSpeed launcher
says `exits with return code = -9` instead. Only the first root cause of each source is kept.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

NEEDLES = ("Root Cause (first observed failure)", "host      : ", "rank      : ",
           "exitcode  : ", "exits with return code")

_HOST = re.compile(r"\bhost\s{2,}:\s*(\S+)")
_RANK = re.compile(r"\brank\s{2,}:\s*(\d+)(?:\s*\(local_rank:\s*(\d+)\))?")
_EXIT = re.compile(r"\bexitcode\s{2,}:\s*(-?\d+)(?:\s*\(pid:\s*(\d+)\))?")
_DS_EXIT = re.compile(r"Process (\d+) exits with return code = (-?\d+)")


@dataclass
class RootCause:
    file: str
    line: int
    host: str | None = None
    rank: int | None = None
    local_rank: int | None = None
    exitcode: int | None = None
    pid: int | None = None

    def to_dict(self) -> dict[str, object]:
        return {"file": self.file, "line": self.line, "host": self.host, "rank": self.rank,
                "local_rank": self.local_rank, "exitcode": self.exitcode, "pid": self.pid}


class LauncherTracker:
    """Reads the root-cause block (and DeepSpeed's exit line) from candidate lines."""

    def __init__(self) -> None:
        self.root_cause: RootCause | None = None
        self._open: RootCause | None = None  # a block being read
        self._fields = 0

    def new_source(self) -> None:
        self._open = None

    def feed(self, text: str, file: str, lineno: int) -> None:
        if "Root Cause (first observed failure)" in text:
            if self.root_cause is None:
                self._open = RootCause(file, lineno)
                self._fields = 0
            return
        if "exits with return code" in text:
            m = _DS_EXIT.search(text)
            if m and self.root_cause is None and int(m.group(2)) != 0:
                self.root_cause = RootCause(file, lineno, pid=int(m.group(1)),
                                            exitcode=int(m.group(2)))
            return
        block = self._open
        if block is None:
            return
        if (m := _HOST.search(text)) and block.host is None:
            block.host = m.group(1)[:200]
        elif (m := _RANK.search(text)) and block.rank is None:
            block.rank = int(m.group(1))
            block.local_rank = int(m.group(2)) if m.group(2) else None
        elif (m := _EXIT.search(text)) and block.exitcode is None:
            block.exitcode = int(m.group(1))
            block.pid = int(m.group(2)) if m.group(2) else None
        else:
            return
        self._fields += 1
        if self._fields >= 3 or (block.exitcode is not None and block.rank is not None):
            self.root_cause = block
            if self._fields >= 3:
                self._open = None
