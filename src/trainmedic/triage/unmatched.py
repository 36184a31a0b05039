"""Errors no signature knows: triage must never call such a log clean.

A candidate line with an error word is kept here; once the answer needs it, a source's last
lines are classified backwards: a Python exception line, a traceback header, a kill or crash of
a process, a non-zero exit, an NCCL WARN, a CUDA error. Lines a signature matched are
*covered*; the last uncovered error of each source, with the `File "...", line N` frame above
it and the rank or host that printed it, becomes a low-confidence finding marked as a guess
when nothing else explains the log. Only that line is classified and attributed, and lines
whose only needle is a generic error word are not read one by one at all (see `ErrorTracker`):
a retry loop printing the same error a million times costs grep's time, not Python's.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

# Substrings that make a line a candidate for classification (part of the prefilter).
# (Each is long enough not to slow the prefilter down. A logger's ERROR level is one too:
# "ERROR:megatron.core.datasets.utils:Failed to compile ..." holds no other, and a log whose
# only error is such a line must not be called clean.)
NEEDLES = ("Error", "Exception", "Failed:", "Traceback (most recent call last)", "Killed",
           "ERROR:", "ERROR]", "ERROR ", "ERROR|",
           "NCCL WARN", "CUDA error", "cuda runtime error", "CUDA_ERROR_", "exitcode",
           "exit code", "exit status", "return code", "Segmentation fault",
           "segmentation fault", "core dumped", "Aborted", "terminate called",
           "Fatal Python error", "\", line ", ".errors.", ".exceptions.")

_EXCEPTION = re.compile(
    r"(?<![\w.])((?:[a-z_][a-z0-9_]*\.)*[A-Z][A-Za-z0-9_]*(?:Error|Exception|Interrupt|Failure|"
    r"Failed))"
    r"(?::\s+(\S.*)|:?\s*$)")
# an exception class from an errors module, whatever its name: triton.runtime.errors.OutOfResources
_ERRORS_MODULE = re.compile(r"(?<![\w.])((?:[a-z_][a-z0-9_]*\.)+(?:errors|exceptions|exc)"
                            r"\.[A-Z]\w*):\s")
_CODE_LINE = re.compile(r"^\s*(?:except\b|raise\b|class\b|def\b|from\b|import\b|#)")
_FRAME = re.compile(r'File "([^"]+)", line (\d+)(?:, in (\S+))?')
_KINDS = (
    ("killed", re.compile(r"(?:^|[\s:\]])Killed(?:\s*$|\s+(?:python|torchrun|process|\S+\.py))")),
    ("crash", re.compile(r"[Ss]egmentation fault|Bus error|core dumped|terminate called after "
                         r"throwing|(?:^|\s)Aborted(?:\s*\(core dumped\))?\s*$|Fatal Python "
                         r"error|\bFATAL\b")),
    ("exit", re.compile(r"exitcode\s*:\s*-?[1-9]|exit(?:ed)? (?:with )?(?:code|status)[:= ]+"
                        r"-?[1-9]|return code\s*=\s*-?[1-9]|returned non-zero exit status")),
    ("nccl", re.compile(r"NCCL WARN")),
    ("cuda", re.compile(r"CUDA error|cuda runtime error|CUDA_ERROR_[A-Z_]+|\bcudaError[A-Z]\w+")),
    ("traceback", re.compile(r"Traceback \(most recent call last\)")),
    # a logger's ERROR level ("ERROR:root:...", "[ERROR]", "| ERROR |")
    ("logged", re.compile(r"(?:^|[\s\[|])ERROR(?:[:\]|]|\s|$)")),
)
# Lines that look like errors and are not: warnings, NCCL's bind retries at start-up.
_BENIGN = re.compile(r"\w*Warning\b|NCCL WARN Call to bind failed|NCCL_ASYNC_ERROR_HANDLING"
                     r"|error_file:|Exception ignored in")


@dataclass
class ErrorLine:
    file: str
    line: int
    text: str
    kind: str  # "exception", "killed", "crash", "exit", "nccl", "cuda", "traceback"
    rank: int | None = None
    host: str | None = None
    frame: str | None = None  # `file:line in function` of the frame above an exception


def classify(text: str) -> tuple[str, str | None] | None:
    """(kind, exception class) when the line reports an error, else None."""
    if _BENIGN.search(text) or _CODE_LINE.match(text):
        return None
    m = _EXCEPTION.search(text) or _ERRORS_MODULE.search(text)
    if m and not m.group(1).endswith("Warning"):
        return "exception", m.group(1)
    for kind, rx in _KINDS:
        if rx.search(text):
            return kind, None
    return None


_SUPPRESSIBLE = frozenset(("traceback", "exit", "killed", "crash", "nccl"))
RING = 256  # candidate lines kept per source: the last error is found among them at its end
# characters of ended sources' rings kept unresolved (a folder of thousands of rank logs): past
# this the oldest is resolved at once (its lines left aside searched for now)
MAX_WAITING = 32 << 20

Who = Callable[[str], tuple[int | None, str | None]]
# (text, line number, kind if a signature covered the line, its rank, its host)
Entry = tuple[str, int, str | None, int | None, str | None]
# the entries of the lines the first pass left aside (only a generic error word on them)
Aside = Callable[[], list[Entry]]


@dataclass
class _Ended:
    """A source that ended: its ring, and where its lines left aside come from."""

    file: str
    who: Who
    ring: list[Entry]
    first_block: int  # entries before this index came before the grep lines (block reader)
    aside: Aside | None


class ErrorTracker:
    """Bounded: per source a ring of its last candidate lines, read backwards when the answer
    needs it (only the last uncovered error of each source is ever reported, so the lines before
    it are never classified); overall a count of the lines read that hold an error word.

    Lines whose only needle is a generic error word are left out of the first pass (a retry
    loop prints millions): a source's `aside` gives the last of them when its ring is resolved,
    and they take their place in it by line number."""

    def __init__(self) -> None:
        self.count = 0  # candidate lines holding an error word (a cheap count, not a verdict)
        self._uncovered: list[ErrorLine] = []  # the last uncovered error of each source
        # the last error a signature matched: if every finding it made is dropped (a SIGKILL
        # the launcher sent), the log still is not clean
        self.last_covered: ErrorLine | None = None
        self._ring: deque[Entry] = deque(maxlen=RING)
        self._added = 0  # entries appended to this source's ring
        self._grep_from: int | None = None  # `_added` when the grep lines began
        self._file = ""
        self._who: Who = _nobody
        self._aside: Aside | None = None
        self._ended: list[_Ended] = []
        self._waiting = 0  # characters in `_ended`

    @property
    def uncovered(self) -> list[ErrorLine]:
        """The last uncovered error of each ended source (resolved now, once)."""
        while self._ended:
            self._settle(self._ended.pop(0))
        return self._uncovered

    def new_source(self, file: str = "", who: Who | None = None,
                   aside: Aside | None = None) -> None:
        """End the current source and start `file`; `who` says which rank and host printed a
        line of it (without side effects), `aside` gives its lines left aside."""
        if self._ring or self._aside is not None:
            first = 0 if self._grep_from is None else max(
                0, self._grep_from - (self._added - len(self._ring)))
            self._ended.append(_Ended(self._file, self._who, list(self._ring), first,
                                      self._aside))
            self._waiting += sum(len(e[0]) for e in self._ring)
            while self._waiting > MAX_WAITING:  # memory stays bounded over many files
                self._settle(self._ended.pop(0))
        self._ring.clear()
        self._added = 0
        self._grep_from = None
        self._file = file
        self._who = who or _nobody
        self._aside = aside

    def grep_lines_begin(self) -> None:
        """The lines from here on come from the prefilter, in line order (those before came
        from the block reader): lines left aside take their place among these."""
        self._grep_from = self._added

    def finish(self) -> None:
        self.new_source()

    def add(self, text: str, lineno: int, *, frame_only: bool = False) -> None:
        """A candidate line no signature matched: kept until the source ends."""
        if not frame_only:
            self.count += 1
        self._append((text, lineno, None, None, None))

    def add_covered(self, text: str, lineno: int, rank: int | None, host: str | None) -> None:
        """A candidate line a signature matched: it is no unknown error, but it may be the last
        error of the log, and it ends the traceback above it."""
        self.count += 1
        found = classify(text)
        kind = found[0] if found else ""
        if found is not None:
            self.last_covered = ErrorLine(self._file, lineno, text.strip()[:2000], kind, rank,
                                          host)
        self._append((text, lineno, kind, rank, host))

    def _append(self, entry: Entry) -> None:
        self._ring.append(entry)
        self._added += 1

    # ---- the end of a source ----------------------------------------------------------------
    def _settle(self, ended: _Ended) -> None:
        ring = ended.ring
        self._waiting -= sum(len(e[0]) for e in ring)
        if ended.aside is not None:
            aside = ended.aside()
            if aside:
                # a ring that did not fill holds every line read; else a line left aside that is
                # older than all of it is older than RING errors too, and drops out below
                seen = {e[1] for e in ring}
                head, tail = ring[: ended.first_block], ring[ended.first_block :]
                tail = sorted([*tail, *(e for e in aside if e[1] not in seen)],
                              key=lambda e: e[1])  # stable: one line's segments stay in order
                ring = [*head, *tail][-RING:]
        last = _Resolver(ring, ended.file, ended.who).last()
        if last is not None:
            self._uncovered.append(last)


class _Resolver:
    """The error a forward read of one source's ring would keep."""

    def __init__(self, ring: list[Entry], file: str, who: Who) -> None:
        self._ring = ring
        self._file = file
        self._who = who

    def last(self) -> ErrorLine | None:
        """The last uncovered error, except that a traceback header or an exit/kill/crash/NCCL
        warning of the same rank after an exception is that exception's echo. Read backwards to
        the last error no echo rule can skip, then forward."""
        ring = self._ring
        if not ring:
            return None
        kinds: list[str | None] = [None] * len(ring)  # "" once classified and not an error
        start = 0
        for i in range(len(ring) - 1, -1, -1):
            kind = self._kind(i, kinds)
            if kind and ring[i][2] is None and kind not in _SUPPRESSIBLE:
                start = i
                break
        last: ErrorLine | None = None
        for i in range(start, len(ring)):
            text, lineno, covered, _rank, _host = ring[i]
            kind = self._kind(i, kinds)
            if not kind or covered is not None:
                continue
            if kind == "traceback" and last is not None and last.kind == "exception":
                continue  # keep the exception itself, not the header of a later traceback
            rank, host = self._who(text)
            if (last is not None and last.kind == "exception" and kind in _SUPPRESSIBLE
                    and kind != "traceback" and last.rank == rank):
                continue  # the exit that follows an exception is its echo
            last = ErrorLine(self._file, lineno, text.strip()[:2000], kind, rank, host,
                             self._frame(i, kinds) if kind == "exception" else None)
        return last

    def _kind(self, i: int, kinds: list[str | None]) -> str:
        kind = kinds[i]
        if kind is None:
            text, _lineno, covered, _rank, _host = self._ring[i]
            if covered is not None:
                kind = covered
            else:
                found = classify(text)
                kind = found[0] if found else ""
            kinds[i] = kind
        return kind

    def _frame(self, i: int, kinds: list[str | None]) -> str | None:
        """`file:line in function` of the frame printed just above the exception on line `i`
        (or on it: one-line pastes hold the frames and the error). A frame belongs to one
        traceback: not across a `Traceback` header, nor past an exception that used it."""
        for k in range(i, -1, -1):
            text = self._ring[k][0]
            if k < i and self._kind(k, kinds) == "exception":
                return None
            if '", line ' in text:
                frames = _FRAME.findall(text)
                if frames:
                    path, line, func = frames[-1]
                    return f"{path}:{line}{f' in {func}' if func else ''}"[:300]
            if self._kind(k, kinds) == "traceback":
                return None
        return None


def _nobody(_text: str) -> tuple[int | None, str | None]:
    return None, None
