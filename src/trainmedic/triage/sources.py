"""Where log lines come from: files, folders of per-rank logs, `.gz`, stdin, pasted text.

Only *candidate* lines (those containing a prefilter needle) ever reach Python-level parsing.
Two interchangeable prefilters yield `(line_number, raw_bytes)`:
- `grep -E` (a DFA in C) on plain files: a multi-GB log goes at grep's own speed;
- a chunked pure-Python pass (one combined bytes regex over 1 MiB blocks) for `.gz`, stdin,
  pasted text, or when grep is missing. Both read in binary, in bounded blocks, never whole files.

Hostile input stays bounded. grep holds a whole line in memory, so it runs under an address-space
limit; a file whose line is too long for it is finished by the Python pass, which cuts "lines" at
`MAX_LINE`. Streams piped into grep get a line break every `MAX_LINE` bytes (line numbers are
mapped back). `NO_BREAK` bytes without any line break (`/dev/zero`, a disk image) end the scan of
that source, and a `.gz` that inflates beyond `GZ_MAX_RATIO` times its size (a decompression bomb)
or beyond `GZ_MAX_BYTES` too: both raise `InputCut`, which the scanner reports as a note.
"""

from __future__ import annotations

import bisect
import collections
import contextlib
import functools
import io
import os
import re
import shutil
import subprocess
import threading
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

from trainmedic import children
from trainmedic.errors import UsageError
from trainmedic.triage.fileend import FileEnd
from trainmedic.triage.loss.tfevents import looks_like_tfevents  # binary, yet a loss curve

CHUNK = 1 << 20
GREP_MIN_BYTES = 256 << 10  # below this, starting grep costs more than scanning in Python
MAX_LINE = 8 << 20  # a "line" without a newline longer than this is cut (progress bars)
NO_BREAK = 32 << 20  # this many bytes without \n or \r: not a text log, stop reading it
GREP_MAX_MEMORY = 64 << 20  # address space for grep; lines it cannot hold go to Python
GZ_MAX_RATIO = 250  # real logs compress 10-100x; a bomb ~1000x
GZ_RATIO_AFTER = 256 << 20  # the ratio is only judged after this much output
GZ_MAX_BYTES = 64 << 30
SKIP_SUFFIXES = (".pt", ".pth", ".pkl", ".bin", ".safetensors", ".npy", ".npz", ".png", ".jpg",
                 ".jpeg", ".so", ".whl", ".zip", ".tar", ".idx", ".distcp")

# Notes, runbooks and reports in an incident folder are prose about a failure, not its log.
NOTE_SUFFIXES = (".md", ".markdown", ".mmd", ".rst", ".html")

_RANK_IN_NAME = re.compile(r"(?<![a-z_])(?:rank|local_rank)[_-]?(\d+)", re.I)
_RANK_SUFFIX = re.compile(r"[-_.](\d{1,5})\.(?:out|err|log|txt)(?:\.gz)?$", re.I)
# Slurm's default names carry the job id (and array index), never a rank: slurm-884213.out,
# slurm-884213_7.out
_JOB_NAME = re.compile(r"^slurm-\d+(?:_\d+)?\.(?:out|err)(?:\.gz)?$", re.I)
_TRAINMEDIC_JSON = re.compile(
    rb'^\s*\{\s*"(?:schema_version|\$schema)"'  # every --json output starts so
    rb'|"schema_version":\s*\d+,\s*"findings"'
    rb'|^\s*\{\s*"version":\s*\d+,\s*"id":\s*"[^"]*",\s*"tree":'  # a saved walk
)


# What reading a source may raise besides OSError: a truncated .gz ends early (EOFError), a
# corrupt one fails in zlib (zlib.error, which is not an OSError; gzip.BadGzipFile is one).
READ_ERRORS: tuple[type[BaseException], ...] = (OSError, EOFError, zlib.error)


class InputCut(Exception):
    """A source was only read in part (no line breaks, a decompression bomb); says why."""


_FEED_ERRORS: tuple[type[BaseException], ...] = (*READ_ERRORS, InputCut)


class _GrepLineTooLong(Exception):
    """grep ran out of its memory on a very long line; `lineno` lines were already read."""

    def __init__(self, lineno: int) -> None:
        super().__init__(lineno)
        self.lineno = lineno


@dataclass(frozen=True)
class Source:
    """One log to scan: a path, `-` for stdin, or in-memory text (the TUI paste box)."""

    name: str
    path: str | None = None
    data: bytes | None = None
    rank: int | None = None

    @property
    def gz(self) -> bool:
        return self.path is not None and self.path.endswith(".gz")


def rank_from_name(name: str, *, alone: bool = False) -> int | None:
    """The rank a log's file name says it holds. A bare trailing number (`worker-3.log`) counts
    only among several logs (`alone=False`): a single `train_941.log` is more often an issue,
    run or job number than rank 941; `rank3` / `local_rank_3` count always."""
    base = os.path.basename(name)
    if _JOB_NAME.match(base):
        return None
    m = _RANK_IN_NAME.search(base) or (None if alone else _RANK_SUFFIX.search(base))
    return int(m.group(1)) if m else None


def _written_by_us(path: str) -> bool:
    """A report, export or saved walk trainmedic wrote (its evidence quotes log lines)."""
    if not path.endswith(".json"):
        return False
    try:
        with open(path, "rb") as handle:
            head = handle.read(4096)
    except OSError:
        return False
    return _TRAINMEDIC_JSON.search(head) is not None


_HEAD_ERRORS: tuple[type[BaseException], ...] = (UsageError, *READ_ERRORS)


def unreadable_reason(source: Source) -> str | None:
    """Why a file is not a log to read (empty, binary), from its first bytes; None if it is."""
    if source.path is None or source.data is not None:
        return None
    try:
        stream = _open(source)
        try:
            head = stream.read(8192)
        finally:
            stream.close()
    except _HEAD_ERRORS as exc:
        return f"cannot read: {exc}"
    if not head:
        return "empty"
    if len(head) < 8192 and not head.strip(b"\0"):  # the whole file: a zeroed or preallocated one
        return "only NUL bytes, no text"
    if _binary(head) and not looks_like_tfevents(head, os.path.basename(source.path)):
        return "binary, not a text log"
    return None


_TEXT_CONTROLS = frozenset("\t\n\r\x0c\x1b")


def _binary(head: bytes) -> bool:
    """Mostly control bytes besides NUL: a checkpoint, an image, a core file. NUL runs are left
    out (a crashed writer's padding, a preallocated file: the text around them is still a log,
    and a head of NULs only is left to the reader, which stops at `NO_BREAK` bytes without a line
    break); a few stray control bytes (a pasted escape) leave a log a log."""
    text = head.replace(b"\0", b"").decode("utf-8", "replace")
    odd = sum(1 for c in text if c == "\ufffd" or c == "\x7f"
              or (c < " " and c not in _TEXT_CONTROLS))
    return odd > len(text) * 0.3


def expand_paths(paths: list[str], skipped: list[tuple[str, str]] | None = None) -> list[Source]:
    """Files as given, folders recursively (sorted, hidden entries skipped), `-` as stdin.

    Inside a folder, what is not a log is passed over and, when `skipped` is given, named there
    with the reason: unreadable files, notes and reports (Markdown), files trainmedic wrote.
    """
    if skipped is None:
        skipped = []
    sources: list[Source] = []
    for given in paths:
        if given == "-":
            sources.append(Source(name="<stdin>"))
            continue
        if os.path.isdir(given):
            before = len(sources)
            for root, dirs, files in os.walk(given):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                for fname in sorted(files):
                    if fname.startswith(".") or fname.lower().endswith(SKIP_SUFFIXES):
                        continue
                    full = os.path.join(root, fname)
                    # inside a folder, sockets/FIFOs and unreadable files are skipped, not fatal
                    if not os.path.isfile(full):
                        continue
                    if not os.access(full, os.R_OK):
                        skipped.append((full, "permission denied"))
                        continue
                    if fname.lower().endswith(NOTE_SUFFIXES):
                        skipped.append((full, "notes or a report, not a log"))
                        continue
                    if _written_by_us(full):
                        skipped.append((full, "written by trainmedic"))
                        continue
                    sources.append(Source(name=full, path=full, rank=rank_from_name(full)))
            if len(sources) == before:  # "clean" must never mean "read nothing"
                listed = ", ".join(f"{os.path.basename(n)}: {r}" for n, r in skipped[:4])
                raise UsageError(f"{given}: no readable log file in this folder"
                                 + (f" (skipped: {listed})" if skipped else ""))
            continue
        if not os.path.exists(given):
            raise UsageError(f"{given}: no such file or directory")
        if not os.access(given, os.R_OK):
            raise UsageError(f"{given}: permission denied")
        sources.append(Source(name=given, path=given, rank=rank_from_name(given)))
    only = sources[0].path if len(sources) == 1 else None
    if only is not None:
        sources[0] = Source(name=sources[0].name, path=only, rank=rank_from_name(only, alone=True))
    return sources


def _open(source: Source) -> BinaryIO:
    import sys

    if source.data is not None:
        return io.BytesIO(source.data)
    if source.path is None:
        return sys.stdin.buffer
    try:
        if source.gz:
            # a bounded GzipFile reads bytes as a BinaryIO does; typeshed does not declare it one
            return _BoundedGzip(source.path, source.name)  # type: ignore[return-value]
        return open(source.path, "rb")
    except OSError as exc:
        raise UsageError(f"{source.name}: cannot read: {exc.strerror or exc}") from exc


class _CountingReader(io.RawIOBase):
    """A file that counts the bytes read from it (the compressed side of a .gz)."""

    def __init__(self, raw: BinaryIO) -> None:
        self.raw = raw
        self.count = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:  # Any: typeshed's WriteableBuffer is private
        data = self.raw.read(len(buffer))
        buffer[: len(data)] = data
        self.count += len(data)
        return len(data)

    def close(self) -> None:
        self.raw.close()
        super().close()


class _BoundedGzip:
    """gzip.open that stops (InputCut) at a bomb's ratio or at GZ_MAX_BYTES of output."""

    def __init__(self, path: str, name: str) -> None:
        import gzip

        self.name = name
        self.compressed = _CountingReader(open(path, "rb"))  # noqa: SIM115 - closed in close()
        self.gz = gzip.GzipFile(fileobj=io.BufferedReader(self.compressed), mode="rb")
        self.out = 0

    def read(self, n: int = -1) -> bytes:
        data = self.gz.read(n)
        self.out += len(data)
        packed = max(1, self.compressed.count)
        if self.out > GZ_MAX_BYTES or (self.out > GZ_RATIO_AFTER
                                       and self.out > GZ_MAX_RATIO * packed):
            raise InputCut(
                f"{self.name}: stopped after {self.out >> 20} MiB of output: it inflates over "
                f"{min(self.out // packed, 9999)}x its size (a "
                "decompression bomb?); to scan it anyway: zcat FILE | trainmedic triage -")
        return data

    def close(self) -> None:
        self.gz.close()
        self.compressed.close()


def _no_break_cut(name: str, offset: int) -> InputCut:
    return InputCut(f"{name}: stopped reading at byte {offset}: {NO_BREAK >> 20} MiB without a "
                    "line break (binary data, not a text log?)")


class _BreakWatch:
    """Counts the bytes since the last \\n or \\r of a stream, block by block."""

    def __init__(self) -> None:
        self.run = 0
        self.offset = 0

    def feed(self, block: bytes) -> bool:
        """False once NO_BREAK bytes went by without a line break."""
        self.offset += len(block)
        last = max(block.rfind(b"\n"), block.rfind(b"\r"))
        self.run = self.run + len(block) if last < 0 else len(block) - last - 1
        return self.run <= NO_BREAK


def python_candidates(stream: BinaryIO, needles: re.Pattern[bytes], *, name: str = "<stream>",
                      after: int = 0, side: SideLines | None = None,
                      ) -> Iterator[tuple[int, bytes]]:
    """Yield (1-based line number, line bytes) of lines with a needle; bounded memory.

    Lines up to number `after` are skipped (grep already read them). With `side`, `needles`
    are all the needles, and a line with none of the first pass's (`side.first`) goes to
    `side.take` instead (only a generic error word on it)."""
    first = side.first() if side is not None else None
    lineno = 1  # number of the line that starts at buf[0]
    buf = b""
    watch = _BreakWatch()
    while True:
        chunk = stream.read(CHUNK)
        eof = not chunk
        if eof:
            if not buf:
                return
            end = len(buf)  # a truncated last line is still scanned
        else:
            if not watch.feed(chunk):
                raise _no_break_cut(name, watch.offset)
            buf += chunk
            end = buf.rfind(b"\n") + 1
            if end == 0:
                if len(buf) < MAX_LINE:
                    continue
                end = len(buf)  # pathological: no newline at all; cut here
        pos = 0
        counted = 0
        search = needles.search
        while True:
            m = search(buf, pos, end)
            if m is None:
                break
            start = buf.rfind(b"\n", 0, m.start()) + 1
            stop = buf.find(b"\n", m.end(), end)
            stop = end if stop < 0 else stop
            lineno += buf.count(b"\n", counted, start)
            counted = start
            if lineno > after:
                if first is None or first.search(buf, start, stop):
                    yield lineno, buf[start:stop]
                elif side is not None and side.path is None:  # else searched again if needed
                    side.take(lineno, buf[start:stop])
            pos = stop + 1
            if pos >= end:
                break
        lineno += buf.count(b"\n", counted, end)
        buf = buf[end:]
        if eof:
            return


def trie_pattern(needles: list[str]) -> re.Pattern[bytes]:
    """One regex for many literals, factored as a trie (3x faster than a flat alternation).
    Built once per set of needles (every pasted text's scanner asks for the same few)."""
    return _trie_pattern(tuple(needles))


@functools.lru_cache(maxsize=16)
def _trie_pattern(needles: tuple[str, ...]) -> re.Pattern[bytes]:
    trie: dict = {}
    for needle in needles:
        node = trie
        for byte in needle.encode():
            node = node.setdefault(byte, {})
        node[-1] = {}

    def build(node: dict) -> bytes:
        if list(node) == [-1]:
            return b""
        alts = [re.escape(bytes([b])) + build(node[b]) for b in sorted(k for k in node if k >= 0)]
        body = alts[0] if len(alts) == 1 else b"(?:" + b"|".join(alts) + b")"
        if -1 in node:
            body = (b"(?:" + body + b")?") if len(alts) == 1 else body + b"?"
        return body

    return re.compile(build(trie))


def _ere(needles: list[str]) -> str:
    """One ERE alternation: GNU grep's DFA runs it faster than -F with ~100 -e literals."""
    return "|".join(re.sub(r"([.^$*+?()\[\]{}|\\])", r"\\\1", n) for n in needles)


def grep_available() -> str | None:
    return shutil.which("grep")


def _feed(stream: BinaryIO, sink: BinaryIO, errors: list[BaseException], breaks: list[int],
          name: str, tee: LastMatches | None = None) -> None:
    """Copy a stream (gzip, stdin, generated) into grep's stdin, block by block.

    grep holds a whole line in memory: after MAX_LINE bytes without a newline one is inserted,
    and the grep line it ends is put in `breaks` (before grep can print it) so the reader can
    map grep's line numbers back."""
    lines = 0  # newlines written so far
    since_newline = 0
    watch = _BreakWatch()
    try:
        while True:
            block = stream.read(CHUNK)
            if not block:
                break
            if not watch.feed(block):
                errors.append(_no_break_cut(name, watch.offset))
                break
            newlines = block.count(b"\n")
            lines += newlines
            since_newline = (since_newline + len(block) if not newlines
                             else len(block) - block.rfind(b"\n") - 1)
            sink.write(block)
            if tee is not None:
                tee.write(block)
            if since_newline >= MAX_LINE:
                lines += 1
                breaks.append(lines)
                sink.write(b"\n")
                if tee is not None:
                    tee.write(b"\n")
                since_newline = 0
    except BrokenPipeError:
        pass  # grep is gone (killed on timeout): the reader reports it
    except _FEED_ERRORS as exc:  # a truncated or corrupt .gz, a bomb
        errors.append(exc)
    finally:
        with contextlib.suppress(OSError):
            sink.close()
        if tee is not None:
            tee.close_input()


def grep_candidates(
    path: str | None, needles: list[str], grep: str, *, stream: BinaryIO | None = None,
    timeout: float | None = None, name: str | None = None, exclude: str | None = None,
    tee: LastMatches | None = None,
) -> Iterator[tuple[int, bytes]]:
    """Run `grep -a -n -E` over a plain file (or a stream piped into it); yield its matches.

    grep (a DFA in C) does the prefilter at its own speed; only the matching lines cross into
    Python, as (line number, bytes). grep starts at once (not at the first `next`), so it can
    run while the caller reads the same file another way. `exclude` (an ERE, plain files only):
    a first grep drops the lines it matches, and numbers the others, so the needle search never
    spends time on lines the caller reads itself.
    """
    ere = _ere(needles)
    args = [grep, "-a", "-n", "-E", "-e", ere]
    if path is not None:
        args += ["--", path]
    if timeout is None:
        size = os.path.getsize(path) if path is not None else 0
        # far above grep's speed; only a hang hits it (streams: a generous hour)
        timeout = 60.0 + size / 20e6 if path is not None else 3600.0
    env = dict(os.environ, LC_ALL="C")
    # each grep in its own process group, stopped at the deadline or when trainmedic is told
    # to end (trainmedic.children)
    first: subprocess.Popen | None = None
    if exclude is not None and path is not None and stream is None:
        first = children.spawn([grep, "-a", "-n", "-v", "-E", "-e", exclude, "--", path],
                               env=env)
        args = [grep, "-a", "-E", "-e", ere]  # reads "N:line" from the first grep
    try:
        proc = children.spawn(args, stdin=first.stdout if first is not None else (
                                  subprocess.PIPE if stream is not None else subprocess.DEVNULL),
                              env=env)
    except BaseException:
        if first is not None:
            children.stop(first)
        raise
    for started in (proc, first):
        if started is not None:
            _limit_memory(started.pid)
    if first is not None and first.stdout is not None:
        first.stdout.close()  # the second grep holds it now

    def kill() -> None:
        children.stop(proc)
        if first is not None:
            children.stop(first)

    timer = threading.Timer(timeout, kill)
    timer.daemon = True
    timer.start()
    feed_errors: list[BaseException] = []
    breaks: list[int] = []  # grep line numbers that end at a newline the feeder inserted
    feeder = None
    name = name or path or "<stream>"
    if stream is not None:
        assert proc.stdin is not None
        feeder = threading.Thread(target=_feed, args=(stream, proc.stdin, feed_errors, breaks,
                                                      name, tee), daemon=True)
        if tee is not None:
            tee.breaks = breaks
        feeder.start()
    return _output(proc, first, timer, feeder, feed_errors, breaks, name, path, timeout)


def _output(proc: subprocess.Popen, first: subprocess.Popen | None, timer: threading.Timer,
            feeder: threading.Thread | None, feed_errors: list[BaseException],
            breaks: list[int], name: str, path: str | None, timeout: float,
            ) -> Iterator[tuple[int, bytes]]:
    """grep's matches as (line number, bytes), read in bounded pieces; errors become one line."""
    lineno = 0
    try:
        assert proc.stdout is not None
        partial = False  # the previous read stopped inside a very long line
        readline = proc.stdout.readline
        while True:
            # bounded reads: a progress bar rewritten with \r for hours is one giant "line"
            raw = readline(MAX_LINE)
            if not raw:
                break
            if partial:
                line = raw
            else:
                colon = raw.find(b":")
                lineno = int(raw[:colon])
                if breaks:  # each inserted break before this line made grep count one more
                    lineno -= bisect.bisect_left(breaks, lineno)
                line = raw[colon + 1 :]
            partial = not raw.endswith(b"\n")
            yield lineno, line if partial else line[:-1]
        err = proc.stderr.read() if proc.stderr is not None else b""
        code = proc.wait()
        if first is not None:
            first_err = first.stderr.read() if first.stderr else b""
            first_code = first.wait()
            if first_code not in (0, 1) and code in (0, 1):
                code, err = first_code, first_err
    finally:
        timer.cancel()
        for p in (proc, first):
            if p is not None:
                if p.poll() is None:
                    children.stop(p)
                children.release(p)
        if first is not None and first.stderr:
            first.stderr.close()
        if feeder is not None:
            feeder.join(timeout=5)
        if proc.stdout is not None:
            proc.stdout.close()
        if proc.stderr is not None:
            proc.stderr.close()
    if feed_errors:
        if isinstance(feed_errors[0], InputCut):
            raise feed_errors[0]
        raise UsageError(f"{name}: cannot read: {feed_errors[0]}")
    if code not in (0, 1):
        if code < 0:
            raise UsageError(f"{name}: scan did not finish within {timeout:.0f} s")
        message = err.decode("utf-8", "replace").strip().splitlines()
        if path is not None and message and "memory exhausted" in message[-1]:
            raise _GrepLineTooLong(lineno)
        raise UsageError(f"{name}: cannot read: {message[-1] if message else 'grep failed'}")


def _limit_memory(pid: int) -> None:
    """Give grep an address-space limit (Linux): a line it cannot hold fails it, not the host.

    Set just after the start rather than in a preexec_fn (which is unsafe with threads, and the
    TUI scans in a worker thread); grep cannot have read much in the microseconds between."""
    import resource

    prlimit = getattr(resource, "prlimit", None)
    if prlimit is None:
        return
    with contextlib.suppress(OSError, ValueError):
        prlimit(pid, resource.RLIMIT_AS, (GREP_MAX_MEMORY, GREP_MAX_MEMORY))


def _lower_priority(pid: int) -> None:
    """Lower a child's CPU priority (raise its niceness by SIDE_NICE), where the OS allows."""
    with contextlib.suppress(OSError, AttributeError):
        os.setpriority(os.PRIO_PROCESS, pid, os.getpriority(os.PRIO_PROCESS, pid) + SIDE_NICE)


Combined = Callable[[], re.Pattern[bytes]]

SIDE_KEEP = 256  # lines set aside that are kept per source: the last ones
SIDE_CUT = 64 << 10  # bytes of a line set aside that are kept
# a plain file this large is searched for its lines left aside beside the first pass (below,
# searching it again afterwards, if needed at all, costs at most a few tenths of a second)
EARLY_MIN_BYTES = 64 << 20
SIDE_NICE = 10  # that search runs at this much lower priority: the first pass goes first
TAIL_PEEK = 4 << 20  # bytes at a large file's end that may hold all the lines it would keep


class SideLines:
    """The lines a first pass leaves aside: those whose only needle is a generic error word
    (`Error`, `Exception`, a frame line). A retry loop prints them by the million, and only
    the last error of a source is ever reported, so they are not read one by one: the Python
    pass hands them to `take` (it sees them anyway), a stream fed to grep is searched for them
    by a second pipeline at the same time (`tail`), and a plain file is searched again only if
    the answer needs them (`path`, `last()`). Each way keeps the last `SIDE_KEEP` lines.

    A plain file of `EARLY_MIN_BYTES` or more is looked at first at its end (`search_file`):
    - its last `TAIL_PEEK` bytes hold SIDE_KEEP such lines (a retry loop's log): they are the
      ones kept, read there, and no search is needed;
    - they hold none: the run ended well, or hung quietly (a big log's common case, where the
      guess needs them), and the search starts now, beside the first pass, on another core, at
      a lower priority, instead of a second full read after it. The price is CPU for nothing
      when a cause turns up all the same (it is stopped when the file has ended with one,
      `collect`, but by then it has read about as much as the first pass);
    - they hold a few: a run that failed at the end, where a cause is likely found: searched
      again after the first pass, and only if the guess needs it.
    An answer never depends on the way: a search stopped or failed (grep out of its memory), or
    a file that changed, leaves the file to be searched again if the answer needs it."""

    def __init__(self, needles: list[str], pattern: Combined, first: Combined) -> None:
        self.needles = needles  # every error word (a line holding one may be an error)
        self.pattern = pattern  # the same, for Python
        self.first = first  # the first pass's needles, for Python
        self.taken: collections.deque[tuple[int, bytes]] = collections.deque(maxlen=SIDE_KEEP)
        self.tail: LastMatches | None = None
        self.path: str | None = None
        self.name = ""
        # the plain file's search, begun with the scan (or found at its end)
        self.early: LastMatches | _TailMatches | None = None
        self.found: list[tuple[int, bytes]] | None = None  # what it found
        self.tail_end: _TailMatches | None = None

    def search_file(self, path: str, name: str) -> None:
        """The first pass reads the plain file `path` by grep: its lines left aside are the
        ones to search for again; a large file's search starts now, beside the first pass."""
        self.path, self.name = path, name
        if self.early is None and os.path.getsize(path) >= EARLY_MIN_BYTES:
            at_end, errors_at_end = _TailMatches.peek(path, self.pattern())
            if at_end is not None:
                self.early = at_end
            elif not errors_at_end:  # no error at its end: a run that ended well, or hung
                self.early = LastMatches.start(self.needles, path=path, nice=True)

    def take(self, lineno: int, line: bytes) -> None:
        """A line the Python pass set aside."""
        self.taken.append((lineno, line[:SIDE_CUT]))

    def collect(self, needed: bool = True) -> None:
        """The source ended: the second pipeline's lines are read now, and its processes end.
        A plain file's search is stopped instead when they are not `needed` (a cause was
        found); if the answer needs them after all, `last()` searches again."""
        if self.tail is not None:
            tail, self.tail = self.tail, None
            self.taken.extend(tail.result() or [])
        if self.early is not None:
            early, self.early = self.early, None
            if isinstance(early, _TailMatches):
                self.tail_end = early  # numbered only if asked for
            elif needed:
                self.found = early.result()  # None if it failed: searched again if needed
            else:
                early.stop()

    def abandon(self) -> None:
        """The scan failed: stop the second pipeline."""
        for running in (self.tail, self.early):
            if isinstance(running, LastMatches):
                running.stop()
        self.tail = self.early = None

    def last(self) -> list[tuple[int, bytes]]:
        """The last lines holding an error word: from the second pipeline (or the file's end),
        or searched again in the plain file (grep, else Python); [] when the lines were taken
        already."""
        if self.tail is not None:
            return self.tail.result() or []
        if self.tail_end is not None:
            self.found, self.tail_end = self.tail_end.result(), None
        if self.found is not None:
            return self.found
        if self.path is None:
            return []
        grep = grep_available()
        if grep and os.path.getsize(self.path) >= GREP_MIN_BYTES:
            found = LastMatches.start(self.needles, path=self.path)
            result = found.result() if found is not None else None
            if result is not None:
                return result
        kept: collections.deque[tuple[int, bytes]] = collections.deque(maxlen=SIDE_KEEP)
        try:
            with open(self.path, "rb") as stream:
                kept.extend((n, line[:SIDE_CUT]) for n, line in
                            python_candidates(stream, self.pattern(), name=self.name))
        except (OSError, InputCut):
            pass  # what was read is kept; the first pass already said why it stopped
        return list(kept)


class LastMatches:
    """`grep -n | cut | tail`: the last SIDE_KEEP lines holding a needle, each cut to SIDE_CUT
    bytes, found in C at grep's speed and in bounded memory (grep runs under its limit; cut
    reads a line as a stream; tail holds the short lines it keeps)."""

    def __init__(self, procs: list[subprocess.Popen], timeout: float) -> None:
        self.procs = procs
        self.breaks: list[int] = []  # set by the feeder of a stream (its inserted newlines)
        self.failed = False
        self.timer = threading.Timer(timeout, self._kill)
        self.timer.daemon = True
        self.timer.start()

    @classmethod
    def start(cls, needles: list[str], *, path: str | None = None,
              nice: bool = False) -> LastMatches | None:
        """Search `path`, or (without one) what `write` feeds; None if a tool is missing.
        `nice`: at a lower CPU priority, so it takes only what the first pass leaves over."""
        grep, cut, tail = grep_available(), shutil.which("cut"), shutil.which("tail")
        if not (grep and cut and tail):
            return None
        ere = _ere(needles)
        env = dict(os.environ, LC_ALL="C")
        procs: list[subprocess.Popen] = []
        try:
            first = children.spawn([grep, "-a", "-n", "-E", "-e", ere,
                                    *(["--", path] if path is not None else [])],
                                   stdin=subprocess.PIPE if path is None else subprocess.DEVNULL,
                                   env=env)
            procs.append(first)
            _limit_memory(first.pid)
            procs.append(children.spawn([cut, "-c", f"1-{SIDE_CUT}"], stdin=first.stdout,
                                        env=env))
            procs.append(children.spawn([tail, "-n", str(SIDE_KEEP)], stdin=procs[1].stdout,
                                        env=env))
        except OSError:
            for proc in procs:
                children.stop(proc)
                children.release(proc)
            return None
        finally:
            for proc in procs[:2]:
                if proc.stdout is not None:
                    proc.stdout.close()  # the next one in the pipe holds it
        if nice:
            for proc in procs:
                _lower_priority(proc.pid)
        size = os.path.getsize(path) if path is not None else 0
        return cls(procs, 60.0 + size / 20e6 if path is not None else 3600.0)

    def write(self, block: bytes) -> None:
        stdin = self.procs[0].stdin
        if self.failed or stdin is None:
            return
        try:
            stdin.write(block)
        except OSError:  # grep is gone (out of its memory, or stopped): no side lines then
            self.failed = True

    def close_input(self) -> None:
        stdin = self.procs[0].stdin
        if stdin is not None:
            with contextlib.suppress(OSError):
                stdin.close()

    def _kill(self) -> None:
        self.failed = True
        for proc in self.procs:
            children.stop(proc)

    def stop(self) -> None:
        self.timer.cancel()
        self._kill()
        for proc in self.procs:
            children.release(proc)
            for pipe in (proc.stdout, proc.stderr, proc.stdin):
                if pipe is not None:
                    with contextlib.suppress(OSError):
                        pipe.close()

    def result(self) -> list[tuple[int, bytes]] | None:
        """(line number, line) of the last matches; None when the pipeline failed."""
        tail = self.procs[-1]
        try:
            assert tail.stdout is not None
            out = tail.stdout.read()  # at most SIDE_KEEP lines of SIDE_CUT bytes
            codes = []
            for proc in self.procs:
                if proc.stderr is not None:
                    proc.stderr.read()
                codes.append(proc.wait())
        finally:
            self.timer.cancel()
            for proc in self.procs:
                if proc.poll() is None:
                    children.stop(proc)
                children.release(proc)
                for pipe in (proc.stdout, proc.stderr, proc.stdin):
                    if pipe is not None:
                        with contextlib.suppress(OSError):
                            pipe.close()
        if self.failed or codes[0] not in (0, 1) or any(codes[1:]):
            return None
        return _numbered(out, self.breaks)


def _numbered(out: bytes, breaks: list[int]) -> list[tuple[int, bytes]]:
    """(line number, line) from `grep -n | cut | tail`'s output."""
    lines = []
    for raw in out.splitlines():
        number, sep, line = raw.partition(b":")
        if not sep or not number.isdigit():
            continue  # a line cut inside its number (cannot happen below SIDE_CUT)
        lineno = int(number)
        if breaks:
            lineno -= bisect.bisect_left(breaks, lineno)
        lines.append((lineno, line))
    return lines


class _TailMatches:
    """The last SIDE_KEEP lines holding a needle, when the end of a plain file holds that many
    (a retry loop's log): found in its last TAIL_PEEK bytes in Python, and numbered (`FileEnd`:
    the file's line breaks counted at memory speed) only when they are asked for. They are what
    `LastMatches` gives: `grep -n | cut | tail`'s output is rebuilt and read the same way."""

    def __init__(self, end: FileEnd, kept: list[tuple[int, bytes]]) -> None:
        self.end = end
        self.kept = kept  # (index among the peek's whole lines, line)

    @classmethod
    def peek(cls, path: str, pattern: re.Pattern[bytes]) -> tuple[_TailMatches | None, int]:
        """The lines, and how many the file's end holds: None when fewer than SIDE_KEEP (or
        when it cannot be read: 0)."""
        end = FileEnd.read(path, TAIL_PEEK)
        if end is None:
            return None, 0
        block = end.block
        start = 0 if end.offset == 0 else block.find(b"\n") + 1
        if end.offset and start == 0:
            return None, 0  # no line starts in it
        pieces = block[start:].split(b"\n")
        if pieces[-1] == b"":
            pieces.pop()  # the file ends with a line break: no line after it
        kept = [(i, line) for i, line in enumerate(pieces) if pattern.search(line)]
        if len(kept) < SIDE_KEEP:
            return None, len(kept)
        return cls(end.without_block(), kept[-SIDE_KEEP:]), len(kept)

    def result(self) -> list[tuple[int, bytes]] | None:
        """(line number, line) of the last matches; None when the file changed (a log still
        being written: its grep is the one to trust) or cannot be counted."""
        first = self.end.first_line()
        if first is None:
            return None
        if self.end.offset:
            first += 1  # the peek's lines start after the line its first byte cuts
        out = b"".join((b"%d:" % (first + i) + line)[:SIDE_CUT] + b"\n" for i, line in self.kept)
        return _numbered(out, [])


def candidates(
    source: Source, needles: list[str], combined: Combined, *, use_grep: bool = True,
    side: SideLines | None = None,
) -> Iterator[tuple[int, bytes]]:
    """Candidate lines of one source, by the fastest prefilter that applies.

    `combined` gives the needles' Python pattern; it is asked for only when grep cannot do the
    pass (compiling a few hundred needles costs tens of milliseconds of every start). With
    `side`, `needles` are the first pass's and `combined` every needle: the lines left aside
    are found as `SideLines` says."""
    grep = grep_available() if use_grep else None
    if source.path is not None and not os.path.isfile(source.path):
        raise UsageError(f"{source.name}: not a regular file")
    after = 0
    if (grep and source.data is None and source.path is not None and not source.gz
            and os.path.getsize(source.path) >= GREP_MIN_BYTES):
        if side is not None:
            side.search_file(source.path, source.name)  # searched again if needed
        try:
            yield from grep_candidates(source.path, needles, grep, name=source.name)
            return
        except _GrepLineTooLong as too_long:  # the Python pass finishes what grep could not
            after, grep = too_long.lineno, None
    stream = _open(source)
    try:
        if grep and source.data is None and (source.gz or source.path is None):
            tee = LastMatches.start(side.needles) if side is not None else None
            if side is not None and tee is None:  # no cut or tail: Python reads it all
                yield from python_candidates(stream, combined(), name=source.name, side=side)
                return
            if side is not None:
                side.tail = tee
            yield from grep_candidates(None, needles, grep, stream=stream, name=source.name,
                                       tee=tee)
        else:
            yield from python_candidates(stream, combined(), name=source.name, after=after,
                                         side=side)
    except READ_ERRORS as exc:  # gzip: truncated, corrupt, or not gzip at all
        raise UsageError(f"{source.name}: cannot read: {exc}") from exc
    finally:
        if source.path is not None or source.data is not None:
            stream.close()


def start_candidates(
    source: Source, needles: list[str], combined: Combined, *, use_grep: bool = True,
    exclude: str | None = None, side: SideLines | None = None,
) -> Iterator[tuple[int, bytes]]:
    """Like `candidates`, but a grep for a plain file starts now, before the first `next`."""
    grep = grep_available() if use_grep else None
    if (grep and source.data is None and source.path is not None and not source.gz
            and os.path.isfile(source.path) and os.path.getsize(source.path) >= GREP_MIN_BYTES):
        started = grep_candidates(source.path, needles, grep, name=source.name, exclude=exclude)
        if side is not None:
            side.search_file(source.path, source.name)
        return _finish_in_python(started, source, combined, side)
    return candidates(source, needles, combined, use_grep=use_grep, side=side)


def _finish_in_python(lines: Iterator[tuple[int, bytes]], source: Source,
                      combined: Combined, side: SideLines | None = None,
                      ) -> Iterator[tuple[int, bytes]]:
    """grep's lines; if grep cannot hold a line, the Python pass reads on from where it
    stopped."""
    try:
        yield from lines
    except _GrepLineTooLong as too_long:
        assert source.path is not None
        with open(source.path, "rb") as stream:
            yield from python_candidates(stream, combined(), name=source.name,
                                         after=too_long.lineno, side=side)
