"""Errors no signature knows: triage must never call such a log clean.

Every candidate line is also classified here: a Python exception line, a traceback header, a
kill or crash of a process, a non-zero exit, an NCCL WARN, a CUDA error. Lines a signature
matched are *covered*; the last uncovered error of each source, with the `File "...", line N`
frame above it and the rank or host that printed it, becomes a low-confidence finding marked as
a guess when nothing else explains the log.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Substrings that make a line a candidate for classification (part of the prefilter).
# (Each is long enough not to slow the prefilter down; a logger's bare "ERROR" level is read
# when the line holds another of these.)
NEEDLES = ("Error", "Exception", "Failed:", "Traceback (most recent call last)", "Killed",
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


class ErrorTracker:
    """Bounded: per source the last uncovered error and one frame line; overall a count."""

    def __init__(self) -> None:
        self.count = 0  # error lines seen, covered or not
        self.uncovered: list[ErrorLine] = []  # the last uncovered error of each source
        # the last error a signature matched: if every finding it made is dropped (a SIGKILL
        # the launcher sent), the log still is not clean
        self.last_covered: ErrorLine | None = None
        self._frame: str | None = None
        self._last: ErrorLine | None = None

    def new_source(self) -> None:
        if self._last is not None:
            self.uncovered.append(self._last)
        self._last = None
        self._frame = None

    def finish(self) -> None:
        self.new_source()

    def feed(self, text: str, file: str, lineno: int, *, covered: bool, rank: int | None,
             host: str | None) -> None:
        found = classify(text)
        if '", line ' in text:
            frames = _FRAME.findall(text)  # one-line pastes hold the frames and the error
            if frames:
                path, line, func = frames[-1]
                self._frame = f"{path}:{line}{f' in {func}' if func else ''}"[:300]
        if found is None:
            return
        self.count += 1
        kind, _cls = found
        if covered:
            self.last_covered = ErrorLine(file, lineno, text.strip()[:2000], kind, rank, host)
            return
        if kind == "traceback" and self._last is not None and self._last.kind == "exception":
            return  # keep the exception itself, not the header of a later traceback
        if (self._last is not None and self._last.kind == "exception"
                and kind in ("exit", "killed", "crash", "nccl") and self._last.rank == rank):
            return  # the exit that follows an exception is its echo
        self._last = ErrorLine(file, lineno, text.strip()[:2000], kind, rank, host,
                               self._frame if kind == "exception" else None)
