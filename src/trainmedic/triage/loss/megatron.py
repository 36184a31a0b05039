"""Fast reader of Megatron-style iteration lines: whole blocks through C-level regexes.

On a long run's log nearly every line is an iteration line; reading them one by one in Python
is what made triage slow. Here a block of `BLOCK` bytes goes through one `findall` whose pattern
is built for the line layout the log actually has (sniffed from its first iteration line with a
loss): it captures the loss, loss scale and grad norm, and only matches lines whose skipped and
NaN counters are zero. When the block's iteration numbers are regular (first and last step and
the number of lines agree with the log interval) the columns line up without reading each step;
otherwise one more `findall` reads the steps. Any block where the counts still differ (a NaN or
skipped iteration, a line without its loss, a layout change) is read line by line by
`LineReader`, which gives the same result, only slower. The time per iteration is sampled (a
few dozen lines per block): the step-time trend needs no more.

Before that, a block is offered to the quick read (`_Exact`): the first line's exact spacing,
the loss as the only capture and the grad norm bounded in the pattern, which takes a healthy
run's block at about twice the speed and gives the same columns, or declines it.
"""

from __future__ import annotations

import math
import os
import re
from collections import deque
from collections.abc import Callable
from itertools import islice
from operator import itemgetter
from typing import BinaryIO

from trainmedic.triage.lineinfo import clean, segments
from trainmedic.triage.loss.lines import (
    MEGATRON_ITER,
    LineReader,
    megatron_fields,
    megatron_loss_key,
)

Where = tuple[str, int, str]

BLOCK = 4 << 20
TIME_SAMPLES = 64
GRAD_SAMPLE = 64  # grad norms kept of a block whose largest is below the threshold
_ITER_LINE = re.compile(rb"[^\n]*\biteration\s+\d+\s*/\s*\d+\s*\|[^\n]*")
_STEP = re.compile(rb"iteration +(\d+) */")  # a literal first: C-speed skipping
# a line that is only an iteration line (rank / time prefixes allowed); others are passed on
_CLEAN = re.compile(r"^(?:\s|\[[^\]]*\]:?)*iteration\s+\d+\s*/\s*\d+\s*\|(?:[^|]*\|)*\s*$")
# what `_ITER_LINE` finds, for grep: the scanner leaves these lines to this reader
# (an iteration marker within the first 40 characters: the timestamp and rank prefixes; a line
# with more before its marker, output glued in front, still goes through the needle search)
GREP_EXCLUDE = r"^.{0,40}iteration[[:space:]]+[0-9]+[[:space:]]*/[[:space:]]*[0-9]+[[:space:]]*\|"
# the time on an iteration line (searched from the line's first iteration marker to its end:
# one lazy gap from every marker was quadratic on a line repeating "iteration 1/")
_TIME = re.compile(rb"elapsed time per iteration \(ms\): *([0-9.]+)")
_SEG = rb"[^|\n]*\|"
_VAL = rb"([^|\n]*)\|"  # float() ignores the spaces around a value
_ZERO = rb" *0 *\|"
TAIL_VALUES = ("loss scale", "grad norm")
TAIL_ZERO = ("number of skipped iterations", "number of nan iterations")


def _floats(values: list[bytes]) -> list[float]:
    if len(set(values)) == 1:  # a constant column (bf16 loss scale 1.0): convert once
        return [float(values[0])] * len(values)
    return list(map(float, values))


class Layout:
    """The regexes for one layout of iteration line, and the columns they capture.

    `tail` captures the loss, loss scale and grad norm; `tail_const` takes the loss scale as
    the literal the first line shows (bf16 prints 1.0 for ever; fp16 holds it for long
    stretches), which saves a column while it holds.
    """

    def __init__(self, keys: list[str], loss_key: str, scale: str | None = None,
                 line: str | None = None) -> None:
        tail_keys = keys[keys.index(loss_key) + 1:]
        self.scale = float(scale) if scale else None
        self.tail, self.cols = self._build(loss_key, tail_keys, None)
        self.tail_const: re.Pattern[bytes] | None = None
        self.cols_const: list[str] = []
        if scale and "loss scale" in tail_keys:
            self.tail_const, self.cols_const = self._build(loss_key, tail_keys, scale)
        self.exact = _Exact.of(line, loss_key, scale) if line is not None else None

    @staticmethod
    def _build(loss_key: str, keys: list[str], scale: str | None,
               ) -> tuple[re.Pattern[bytes], list[str]]:
        cols = [loss_key]
        tail = re.escape(loss_key.encode()) + rb":" + _VAL
        for key in keys:
            if key == "loss scale" and scale is not None:
                tail += rb" *loss scale: *" + re.escape(scale.encode()) + rb" *\|"
            elif key in TAIL_VALUES:
                tail += rb" *" + re.escape(key.encode()) + rb":" + _VAL
                cols.append(key)
            elif key in TAIL_ZERO:
                tail += rb" *" + re.escape(key.encode()) + rb":" + _ZERO
            else:
                tail += _SEG
        # to the end of the line: text glued after the last field makes it a slow line
        return re.compile(tail + rb"[ \r]*\n"), cols


class _Exact:
    """The quick read of a block: the layout's tail with the first line's exact spacing, one
    capture (the loss), and the grad norm held under a bound in the pattern itself.

    Flexible spacing (` *` around every value) and a second capture group (a tuple per line,
    which the cyclic GC walks) cost more than half of the read, and a healthy run's blocks need
    neither: when every iteration line of a block matches with its grad norm of one length and
    at or below the detector's threshold, `_grads` would keep only a sample of the last values,
    so only those are read. Any other block is read by `Layout.tail` as before: the result is
    the same either way, only the time differs.
    """

    def __init__(self, head: bytes, key: bytes, after: bytes, decimals: int, width: int) -> None:
        self.head = head  # the loss key, its value (captured) and the fields to the grad norm
        self.key = key  # the grad norm's key and the spaces before its value
        self.after = after  # from after the grad norm's value to the end of the line
        self.decimals = decimals
        self.width = width  # digits before the point of the first line's grad norm
        self.grads = re.compile(head.replace(_VAL, _SEG, 1) + key + rb"([0-9.]+)" + after)
        self._bounded: dict[tuple[str, int], re.Pattern[bytes] | None] = {}

    @classmethod
    def of(cls, line: str, loss_key: str, scale: str | None) -> _Exact | None:
        """From the text after an iteration marker; None when its layout is not one this can
        hold exactly (no grad norm, a loss scale not shown as one value, glued text, ...)."""
        parts = line.split("|")
        keys = [p.rpartition(":")[0].strip() for p in parts]
        if loss_key not in keys or keys.count("grad norm") != 1 or parts[-1].strip(" \r"):
            return None
        head = re.escape(loss_key.encode()) + b":" + _VAL
        key = after = b""
        decimals = width = 0
        for part, name in zip(parts[keys.index(loss_key) + 1:-1],
                              keys[keys.index(loss_key) + 1:-1], strict=True):
            raw_key, _, value = part.rpartition(":")
            if name == "grad norm":
                m = re.fullmatch(r"( *)(\d+)\.(\d+)( *)", value)
                if m is None or key:
                    return None
                key = re.escape((raw_key + ":" + m.group(1)).encode())
                after = re.escape(m.group(4).encode()) + rb"\|"
                decimals, width = len(m.group(3)), len(m.group(2))
                continue
            if name == "loss scale":
                if not scale:
                    return None
                piece = re.escape(part.encode()) + rb"\|"
            elif name in TAIL_ZERO:
                m = re.fullmatch(r"( *)(\d+)( *)", value)
                if m is None:
                    return None
                zero = m.group(1) + " " * (len(m.group(2)) - 1) + "0" + m.group(3)
                piece = re.escape((raw_key + ":" + zero).encode()) + rb"\|"
            else:
                piece = _SEG
            if key:
                after += piece
            else:
                head += piece
        if not key:
            return None
        return cls(head, key, after + rb"[ \r]*\n", decimals, width)

    def bounded(self, thr: float, width: int) -> re.Pattern[bytes] | None:
        """The block pattern that admits grad norms of `width` digits at or below `thr`
        (rounded down to two significant digits, so a few patterns serve a whole run); None
        when no such value can be."""
        if not math.isfinite(thr) or thr < 0:
            return None
        num, den = thr.as_integer_ratio()  # exact: thr * 10**d in floats may round up
        scaled = num * 10 ** self.decimals // den
        cut = 10 ** max(0, len(str(scaled)) - 2)
        bound = _point(scaled // cut * cut, self.decimals)
        key = (bound, width)
        if key not in self._bounded:
            value = _at_most(bound, width)
            self._bounded[key] = None if value is None else re.compile(
                self.head + self.key + value + self.after)
        return self._bounded[key]


def _point(scaled: int, decimals: int) -> str:
    """A scaled integer with its decimal point put back: (810, 3) -> "0.810"."""
    digits = str(scaled).zfill(decimals + 1)
    return digits[:len(digits) - decimals] + ("." + digits[-decimals:] if decimals else "")


def _at_most(bound: str, width: int) -> bytes | None:
    """A regex for fixed-point numbers with `width` digits before the point and as many after
    it as `bound`, whose value is at most `bound`: digit by digit, as text compares them when
    the lengths are equal."""
    whole = bound.partition(".")[0]
    if width < len(whole):
        return re.sub(r"\d", r"\\d", "9" * width + bound[len(whole):]).replace(".", r"\.").encode()
    if width > len(whole):
        return None
    alts = []
    for j, ch in enumerate(bound):
        if ch == ".":
            continue
        low = 1 if j == 0 and width > 1 else 0
        if int(ch) > low:
            rest = re.sub(r"\d", r"\\d", bound[j + 1:]).replace(".", r"\.")
            alts.append(re.escape(bound[:j]) + f"[{low}-{int(ch) - 1}]" + rest)
    alts.append(re.escape(bound))
    return ("(?:" + "|".join(alts) + ")").encode()


def sniff_layout(text: str) -> Layout | None:
    m = MEGATRON_ITER.search(text)
    if m is None:
        return None
    fields = megatron_fields(text[m.end():])
    key = megatron_loss_key(fields)
    if key is None or "global_step" in fields:  # NeMo 2 counts iterations per epoch
        return None
    return Layout(list(fields), key, fields.get("loss scale"), text[m.end():])


def _last_step(block: bytes, start: int, end: int) -> tuple[int, int] | None:
    """(step, offset) of the last iteration marker of a block."""
    for _ in range(64):
        i = block.rfind(b"iteration ", start, end)
        if i < 0:
            return None
        m = _STEP.match(block, i, end)
        if m:
            return int(m.group(1)), i
        end = i
    return None


def _grads(raw: list[bytes] | None, thr: float) -> list[float] | tuple | None:
    """All grad norms, or (a sample,) when the block's largest is below `thr`.

    Values of one length in `{:.3f}` compare as text as they do as numbers, so the block's
    maximum is found without converting every value.
    """
    if raw is None:
        return None
    if math.isfinite(thr) and len(set(map(len, raw))) == 1:
        top = max(raw)
        if top.strip()[:1].isdigit() and float(top) <= thr:
            return (list(map(float, raw[-GRAD_SAMPLE:])),)
    return _floats(raw)


def _times(block: bytes, start: int, end: int) -> list[tuple[int, float]]:
    out = []
    size = end - start
    pos = start - 1
    for k in range(TIME_SAMPLES):
        found = _time_after(block, max(pos + 1, start + k * size // TIME_SAMPLES), end)
        if found is None:
            break
        pos, step, ms = found
        out.append((step, ms))
    return out


def _time_after(block: bytes, pos: int, end: int) -> tuple[int, int, float] | None:
    """(offset, step, time) of the first iteration marker from `pos` whose line goes on to the
    time per iteration. Only a line's first marker can: every later one's rest of the line is
    part of the first's. So each line is searched once, and a line without a time is skipped
    whole, however many markers it repeats."""
    while (step := _STEP.search(block, pos, end)) is not None:
        eol = block.find(b"\n", step.end(), end)
        eol = end if eol < 0 else eol
        ms = _TIME.search(block, step.end(), eol)
        if ms is not None:
            return step.start(), int(step.group(1)), float(ms.group(1))
        pos = eol
    return None


def extract(block: bytes, start: int, end: int, lay: Layout, interval: int, grad_thr: float,
            state: dict) -> tuple | str | None:
    """The columns of `block[start:end]`: (steps, losses, grads, scales, times, n), "empty"
    when it holds no iteration line, None when it must be read line by line.

    Needs nothing of the series but its log interval, so a worker process can run it."""
    first = _STEP.search(block, start, end)
    if first is None:
        return None if lay.tail.search(block, start, end) else "empty"
    found = _last_step(block, start, end)
    if found is None:
        return None
    last, last_at = found
    step0 = int(first.group(1))
    regular = (last - step0) % interval == 0
    expect = (last - step0) // interval + 1 if regular else None
    if expect is not None and lay.tail_const is not None:
        quick = _quick(block, start, end, lay, grad_thr, state, expect,
                       (first.start(), last_at))
        if quick is not None:
            return list(range(step0, last + 1, interval)), *quick
    rows, names = None, lay.cols
    if lay.tail_const is not None and not state.get("const_failed"):
        rows = lay.tail_const.findall(block, start, end)
        names = lay.cols_const
        if expect is not None and len(rows) != expect:
            state["const_failed"] = True  # the scale moved: capture it from now on
            rows = None
    if rows is None:
        rows, names = lay.tail.findall(block, start, end), lay.cols
    n = len(rows)
    if regular and n == expect:
        steps: list[int] | range = range(step0, last + 1, interval)
    else:
        steps = list(map(int, _STEP.findall(block, start, end)))
        if len(steps) != n or steps != sorted(steps):
            return None
    # one column at a time: zip(*rows) makes a tuple per line
    by = {name: list(map(itemgetter(k), rows)) for k, name in enumerate(names)} \
        if len(names) > 1 else {names[0]: rows}
    try:
        losses = _floats(by[names[0]])
        grads = _grads(by.get("grad norm"), grad_thr)
        scales = _floats(by["loss scale"]) if "loss scale" in by else None
    except ValueError:
        return None
    raw = by.get("grad norm")
    if raw:  # the quick read's next bound: as many digits as these grad norms have
        state["grad_width"] = len(raw[-1].strip().partition(b".")[0])
    return list(steps), losses, grads, scales, _times(block, start, end), n


def _quick(block: bytes, start: int, end: int, lay: Layout, grad_thr: float, state: dict,
           expect: int, ends: tuple[int, int]) -> tuple | None:
    """`extract`'s columns after the steps, by `_Exact` (None: this block needs the full read).

    Accepted only where the full read would read the same `expect` lines (its constant-scale
    tail, or once the scale has moved, its tail that captures the scale: the same value on
    every line here) and `_grads` would keep a sample of the grad norms, so the columns are the
    ones it would give. `ends`: offsets of the first and last iteration markers, whose lines are
    tried first, so a block the quick read cannot take (an fp16 scale that moved) costs little.
    """
    exact = lay.exact
    if exact is None or lay.scale is None:
        return None
    pattern = exact.bounded(grad_thr, state.get("grad_width", exact.width))
    if pattern is None:
        return None
    for at in ends:
        eol = block.find(b"\n", at, end)
        if eol < 0 or pattern.search(block, at, eol + 1) is None:
            return None
    raw = pattern.findall(block, start, end)
    if len(raw) != expect:
        return None
    try:
        losses = list(map(float, raw))
        grads = _last_grads(block, start, end, exact, min(GRAD_SAMPLE, expect))
    except ValueError:
        return None
    if grads is None:
        return None
    scales = [lay.scale] * expect if state.get("const_failed") else None
    return losses, (grads,), scales, _times(block, start, end), expect


def _last_grads(block: bytes, start: int, end: int, exact: _Exact, k: int) -> list[float] | None:
    """The grad norms of the last `k` iteration lines of a block the quick read accepted."""
    span = k * 512
    while True:
        a = max(start, end - span)
        found = exact.grads.findall(block, a, end)
        if len(found) >= k:
            return list(map(float, found[-k:]))
        if a == start:
            return None
        span *= 4


PARALLEL_MIN = 64 << 20  # files at least this large are read by several processes (4+ CPUs)
SEGMENT = 4 * BLOCK
MAX_WORKERS = 8


def _segment(task: tuple) -> list[tuple]:
    """Worker: the blocks of the lines that start in [a, b) of the file (`extract` each).

    Returns per block (first byte, end byte, columns); columns are packed as arrays of numbers
    so that they cross the pipe cheaply."""
    path, a, b, lay, interval = task
    out: list[tuple] = []
    state: dict = {}
    with open(path, "rb") as f:
        if a > 0:  # the first line that starts at or after a
            f.seek(a - 1)
            a = a - 1 + len(f.readline())
        pos = a
        while pos < b:
            f.seek(pos)
            data = f.read(min(BLOCK, b - pos))
            if not data:
                break
            if pos + len(data) >= b:  # the last piece: finish the line that holds byte b - 1
                if not data.endswith(b"\n"):
                    data += f.readline()
                cut = len(data)
            else:
                cut = data.rfind(b"\n") + 1
                if cut == 0:  # one line longer than a block
                    data += f.readline()
                    cut = len(data)
            out.append((pos, pos + cut, _pack(extract(data, 0, cut, lay, interval, math.inf,
                                                      state))))
            pos += cut
    return out


def _pack(cols: tuple | str | None) -> tuple | str | None:
    from array import array

    if cols is None or isinstance(cols, str):
        return cols
    steps, losses, grads, scales, times, n = cols
    return (array("q", steps).tobytes(), array("d", losses).tobytes(),
            None if grads is None else array("d", grads).tobytes(),
            None if scales is None else array("d", scales).tobytes(), times, n)


def _unpack(packed: tuple) -> tuple:
    from array import array

    def floats(raw: bytes | None) -> list[float] | None:
        if raw is None:
            return None
        arr = array("d")
        arr.frombytes(raw)
        return arr.tolist()

    steps = array("q")
    steps.frombytes(packed[0])
    return (steps.tolist(), floats(packed[1]), floats(packed[2]), floats(packed[3]), packed[4],
            packed[5])


def _workers(size: int) -> int:
    import multiprocessing
    import os

    if size < PARALLEL_MIN or "fork" not in multiprocessing.get_all_start_methods():
        return 0
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (
        os.cpu_count() or 1)
    # the main process feeds the detectors meanwhile; on two cores the workers only compete
    # with it and with grep (measured: slower than one process), so from four
    return min(MAX_WORKERS, cpus - 1) if cpus >= 4 else 0


class _LineNumbers:
    """Line numbers on demand: newlines are counted only when a line must be named (an event,
    a block read line by line), from the nearest offset already known."""

    def __init__(self, stream: BinaryIO) -> None:
        self.stream = stream
        self.marks: list[tuple[int, int]] = [(0, 1)]  # (byte offset, line number there)
        self.seekable = stream.seekable()

    def at(self, offset: int) -> int:
        import bisect

        k = bisect.bisect_right(self.marks, (offset, 1 << 62)) - 1
        pos, line = self.marks[k]
        if pos == offset:
            return line
        here = self.stream.tell()
        try:
            self.stream.seek(pos)
            while pos < offset:
                data = self.stream.read(min(BLOCK, offset - pos))
                if not data:
                    break
                line += data.count(b"\n")
                pos += len(data)
        finally:
            self.stream.seek(here)
        self.marks.insert(k + 1, (offset, line))
        return line


class BlockReader:
    """Reads one plain file of Megatron-style lines into the reader's series."""

    def __init__(self, reader: LineReader, name: str,
                 other: Callable[[int, str], None] | None = None) -> None:
        self.r = reader
        self.name = name
        self.other = other  # iteration lines with something else on them (glued output)
        self.layout: Layout | None = None
        self.lines_read = 0
        self.fast_blocks = self.slow_blocks = 0
        self._state: dict = {}  # `extract`'s, from block to block (const_failed, grad_width)
        self._lines: _LineNumbers | None = None
        self._eager_line = 1  # for streams that cannot seek: counted as they are read

    def _line_at(self, offset: int) -> int:
        return self._lines.at(offset) if self._lines is not None else self._eager_line

    def read(self, stream: BinaryIO, path: str | None = None) -> None:
        seekable = stream.seekable()
        if seekable:
            self._lines = _LineNumbers(stream)
        off = 0  # file offset of data[0]
        rest = b""
        again = 0  # seekable: the bytes of the line the last block cut, read again (no copy)
        size = os.path.getsize(path) if path else 0
        workers = _workers(size) if path else 0
        while True:
            if workers and self.layout is not None and self.r.first_progress_line is not None:
                self._parallel(stream, path, off, size, workers)
                return
            chunk = stream.read(BLOCK + again)
            if len(chunk) <= again:  # nothing after the cut line: the end
                rest = rest or chunk
                if rest:
                    self._block(rest, 0, len(rest), off)
                return
            data = rest + chunk if rest else chunk  # the line cut by the previous read
            again = 0
            end = data.rfind(b"\n") + 1
            if end == 0:
                rest = data
                if len(rest) > 4 * BLOCK:  # no newline at all: read such a "line" as it is
                    self._slow(rest, 0, len(rest), off)
                    off += len(rest)
                    rest = b""
                continue
            self._block(data, 0, end, off)
            off += end
            if seekable:  # the same blocks as `rest + chunk` would give
                rest = b""
                again = len(data) - end
                if again:
                    stream.seek(off)
            else:
                self._eager_line += data.count(b"\n", 0, end)
                rest = data[end:]

    def _parallel(self, stream: BinaryIO, path: str | None, start: int, size: int,
                  workers: int) -> None:
        """The rest of the file by `workers` processes; columns come back in file order."""
        import multiprocessing

        assert path is not None and self.layout is not None
        tasks = [(path, a, min(a + SEGMENT, size), self.layout, self.r.s.interval)
                 for a in range(start, size, SEGMENT)]
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            # a few segments in flight at a time: memory stays bounded when the workers are
            # faster than the detectors here
            todo = iter(tasks)
            pending = deque(pool.apply_async(_segment, (t,)) for t in islice(todo, 2 * workers))
            while pending:
                blocks = pending.popleft().get()
                nxt = next(todo, None)
                if nxt is not None:
                    pending.append(pool.apply_async(_segment, (nxt,)))
                for first, end, packed in blocks:
                    if packed == "empty":
                        continue
                    if isinstance(packed, tuple) and self._apply(_unpack(packed),
                                                          self._reread_locator(stream, first,
                                                                               end)):
                        self.fast_blocks += 1
                        continue
                    stream.seek(first)
                    block = stream.read(end - first)
                    self.slow_blocks += 1
                    self._slow(block, 0, len(block), first)

    def _reread_locator(self, stream: BinaryIO, first: int, end: int,
                        ) -> Callable[[int], Where | None]:
        """Line lookups of a block read by a worker: the block is read again if one is needed."""
        cache: list[Callable[[int], Where | None]] = []

        def locate(index: int) -> Where | None:
            if not cache:
                here = stream.tell()
                stream.seek(first)
                block = stream.read(end - first)
                stream.seek(here)
                cache.append(self._locator(block, 0, len(block), first))
            return cache[0](index)

        return locate

    def _block(self, block: bytes, start: int, end: int, off: int) -> None:
        """`block[start:end]` holds whole lines; `off` is the file offset of `block[0]`."""
        if self.layout is None:
            self.layout = self._sniff(block, start, end)
        if self.r.first_progress_line is None:
            # the first lines go one by one: they set the format, hints and log interval
            self._slow_lines(block, start, end, off, limit=8)
            after = self._after_first(block, start, end, 8)
            if after is None:
                return
            start = after
        lay = self.layout
        if lay is not None and self._fast(block, start, end, off, lay):
            self.fast_blocks += 1
            return
        self.slow_blocks += 1
        self._slow(block, start, end, off)

    def _after_first(self, block: bytes, start: int, end: int, n: int) -> int | None:
        """Offset of the line after the first `n` iteration lines (None: no more of them)."""
        for k, m in enumerate(_ITER_LINE.finditer(block, start, end), 1):
            if k == n:
                nl = block.find(b"\n", m.end(), end)
                return None if nl < 0 else nl + 1
        return None

    def _sniff(self, block: bytes, start: int, end: int) -> Layout | None:
        for m in _ITER_LINE.finditer(block, start, end):
            lay = sniff_layout(m.group().decode("utf-8", "replace"))
            if lay is not None:
                return lay
        return None

    def _fast(self, block: bytes, start: int, end: int, off: int, lay: Layout) -> bool:
        cols = extract(block, start, end, lay, self.r.s.interval, self.r.s._grad.thr,
                       self._state)
        if isinstance(cols, str):
            return True  # no iteration line in this block
        if cols is None:
            return False
        return self._apply(cols, self._locator(block, start, end, off))

    def _apply(self, cols: tuple, locate: Callable[[int], Where | None]) -> bool:
        """Feed the series with one block's columns (read here or by a worker)."""
        steps, losses, grads, scales, times, n = cols
        s = self.r.s
        a = self.r.a
        if a.last_step is not None and steps[0] <= a.last_step:
            return False  # a resume replays steps: the per-line path counts them
        lay = self.layout
        if scales is None and lay is not None and lay.scale is not None and (
                s._prev_scale != lay.scale):
            return False  # the constant scale must be the one the series knows
        fmts = self.r.formats  # the first lines, read one by one, named the format
        fmt = max(fmts, key=lambda k: fmts[k]) if fmts else "megatron"
        fmts[fmt] = fmts.get(fmt, 0) + n
        self.r._megatron_had_loss = True
        self.lines_read += n
        sample = isinstance(grads, tuple)
        s.batch(steps, losses, None if sample else grads, scales, None, locate=locate)
        if sample:
            s.grad_sample(grads[0])
        for step, t in times:
            s.step_time(step, t)
        return True

    def _locator(self, block: bytes, start: int, end: int, off: int,
                 ) -> Callable[[int], Where | None]:
        starts: list[int] = []

        def locate(index: int) -> Where | None:
            if not starts:
                starts.extend(m.start() for m in _STEP.finditer(block, start, end))
            if index >= len(starts):
                return None
            pos = starts[index]
            line_start = block.rfind(b"\n", 0, pos) + 1
            line_end = block.find(b"\n", pos)
            text = block[line_start: line_end if line_end >= 0 else len(block)]
            line = (self._line_at(off + line_start) if self._lines is not None
                    else self._eager_line + block.count(b"\n", start, line_start))
            return (self.name, line, clean(text.decode("utf-8", "replace")))

        return locate

    def _slow(self, block: bytes, start: int, end: int, off: int) -> None:
        self._slow_lines(block, start, end, off, limit=None)

    def _slow_lines(self, block: bytes, start: int, end: int, off: int,
                    limit: int | None) -> None:
        line = self._line_at(off + start) if self._lines is not None else self._eager_line
        pos = start
        for done, m in enumerate(_ITER_LINE.finditer(block, start, end), 1):
            line += block.count(b"\n", pos, m.start())
            pos = m.start()
            text = m.group().decode("utf-8", "replace")
            if self.other is not None and not _CLEAN.match(clean(text)):
                self.other(line, text)
            for seg in segments(text):
                self.r.feed(clean(seg), line)
            self.lines_read += 1
            if limit is not None and done >= limit:
                return
