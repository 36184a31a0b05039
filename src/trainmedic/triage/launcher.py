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

from trainmedic.textsafe import inert_line

NEEDLES = ("Root Cause (first observed failure)", "Failures:", "host      : ", "rank      : ",
           "exitcode  : ", "exits with return code")

# Numbers are bounded (`\d{1,9}`, not followed by another digit): int() of a run of thousands
# of digits raises, and no rank, pid or exit code is that long.
_HOST = re.compile(r"\bhost\s{2,}:\s*(\S+)")
_RANK = re.compile(r"\brank\s{2,}:\s*(\d{1,9})(?!\d)(?:\s*\(local_rank:\s*(\d{1,9})\))?")
_EXIT = re.compile(r"\bexitcode\s{2,}:\s*(-?\d{1,9})(?!\d)(?:\s*\(pid:\s*(\d{1,9})\))?")
_DS_EXIT = re.compile(r"Process (\d{1,9}) exits with return code = (-?\d{1,9})(?!\d)")


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
    """Reads torchrun's failure summary (and DeepSpeed's exit line) from candidate lines: the
    root cause, and the other failures it lists (workers the launcher itself stopped)."""

    MAX_FAILURES = 64

    def __init__(self) -> None:
        self.root_cause: RootCause | None = None
        self.failures: list[RootCause] = []  # the "Failures:" entries, root cause excluded
        self._open: RootCause | None = None  # an entry being read
        self._section: str | None = None  # "failures" or "root"

    def new_source(self) -> None:
        self._open = None
        self._section = None

    @property
    def killed_ranks(self) -> set[int]:
        """Ranks the summary lists with exit code -9 besides the root cause."""
        return {f.rank for f in self.failures if f.exitcode == -9 and f.rank is not None}

    def feed(self, text: str, file: str, lineno: int) -> None:
        if "Root Cause (first observed failure)" in text:
            self._section = "root" if self.root_cause is None else None
            self._open = None
            return
        if "Failures:" in text:
            self._section, self._open = "failures", None
            return
        if "exits with return code" in text:
            m = _DS_EXIT.search(text)
            if m and self.root_cause is None and int(m.group(2)) != 0:
                self.root_cause = RootCause(file, lineno, pid=int(m.group(1)),
                                            exitcode=int(m.group(2)))
            return
        if self._section is None:
            return
        m_host, m_rank, m_exit = _HOST.search(text), _RANK.search(text), _EXIT.search(text)
        if not (m_host or m_rank or m_exit):
            return
        entry = self._open
        if entry is not None and ((m_host and entry.host is not None)
                                  or (m_rank and entry.rank is not None)
                                  or (m_exit and entry.exitcode is not None)):
            entry = None  # the next entry (`[N]:` lines are not read: they hold no needle)
        if entry is None:
            entry = self._open = RootCause(file, lineno)
            if self._section == "root":
                self.root_cause = entry  # filled further as its lines come
            elif len(self.failures) < self.MAX_FAILURES:
                self.failures.append(entry)
        if m_host and entry.host is None:
            # shown in summaries and on the terminal: no escape sequence from the log
            entry.host = inert_line(m_host.group(1)[:200])
        elif m_rank and entry.rank is None:
            entry.rank = int(m_rank.group(1))
            entry.local_rank = int(m_rank.group(2)) if m_rank.group(2) else None
        elif m_exit and entry.exitcode is None:
            entry.exitcode = int(m_exit.group(1))
            entry.pid = int(m_exit.group(2)) if m_exit.group(2) else None
