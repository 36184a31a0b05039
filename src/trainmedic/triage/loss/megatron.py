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
"""

from __future__ import annotations

import re
from collections.abc import Callable
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
_ITER_LINE = re.compile(rb"[^\n]*\biteration\s+\d+\s*/\s*\d+\s*\|[^\n]*")
_STEP = re.compile(rb"iteration +(\d+) */")  # a literal first: C-speed skipping
_TIME = re.compile(rb"iteration +(\d+) */[^\n]*?elapsed time per iteration \(ms\): *([0-9.]+)")
_SEG = rb"[^|\n]*\|"
_VAL = rb"([^|\n]*)\|"  # float() ignores the spaces around a value
_ZERO = rb" *0 *\|"
TAIL_VALUES = ("loss scale", "grad norm")
TAIL_ZERO = ("number of skipped iterations", "number of nan iterations")


def _floats(values: tuple[bytes, ...]) -> list[float]:
    if len(set(values)) == 1:  # a constant column (bf16 loss scale 1.0): convert once
        return [float(values[0])] * len(values)
    return list(map(float, values))


class Layout:
    """The regex for one layout of iteration line, and the columns it captures."""

    def __init__(self, keys: list[str], loss_key: str) -> None:
        tail_keys = keys[keys.index(loss_key):]
        self.cols: list[str] = [loss_key]
        tail = re.escape(loss_key.encode()) + rb":" + _VAL
        wanted = [k for k, key in enumerate(tail_keys) if key in TAIL_VALUES + TAIL_ZERO]
        for key in tail_keys[1 : max(wanted, default=0) + 1]:
            if key in TAIL_VALUES:
                tail += rb" *" + re.escape(key.encode()) + rb":" + _VAL
                self.cols.append(key)
            elif key in TAIL_ZERO:
                tail += rb" *" + re.escape(key.encode()) + rb":" + _ZERO
            else:
                tail += _SEG
        self.tail = re.compile(tail)


def sniff_layout(text: str) -> Layout | None:
    m = MEGATRON_ITER.search(text)
    if m is None:
        return None
    fields = megatron_fields(text[m.end():])
    key = megatron_loss_key(fields)
    if key is None or "global_step" in fields:  # NeMo 2 counts iterations per epoch
        return None
    return Layout(list(fields), key)


def _last_step(block: bytes) -> int | None:
    end = len(block)
    for _ in range(64):
        i = block.rfind(b"iteration ", 0, end)
        if i < 0:
            return None
        m = _STEP.match(block, i)
        if m:
            return int(m.group(1))
        end = i
    return None


class BlockReader:
    """Reads one plain file of Megatron-style lines into the reader's series."""

    def __init__(self, reader: LineReader, name: str) -> None:
        self.r = reader
        self.name = name
        self.layout: Layout | None = None
        self.lines_read = 0
        self.fast_blocks = self.slow_blocks = 0

    def read(self, stream: BinaryIO) -> None:
        base_line = 1
        rest = b""
        while True:
            chunk = stream.read(BLOCK)
            if not chunk:
                if rest:
                    self._block(rest, base_line)
                return
            data = rest + chunk if rest else chunk
            end = data.rfind(b"\n") + 1
            if end == 0:
                rest = data
                if len(rest) > 4 * BLOCK:  # no newline at all: give up on the fast path
                    self._slow(rest, base_line)
                    rest = b""
                continue
            block = data[:end]
            rest = data[end:]
            self._block(block, base_line)
            base_line += block.count(b"\n")

    def _block(self, block: bytes, base_line: int) -> None:
        if self.layout is None:
            self.layout = self._sniff(block)
        if self.r.first_progress_line is None:
            # the first lines go one by one: they set the format, hints and log interval
            self._slow_lines(block, base_line, limit=8)
            start = self._after_first(block, 8)
            if start is None:
                return
            base_line += block.count(b"\n", 0, start)
            block = block[start:]
        lay = self.layout
        if lay is not None and self._fast(block, base_line, lay):
            self.fast_blocks += 1
            return
        self.slow_blocks += 1
        self._slow(block, base_line)

    def _after_first(self, block: bytes, n: int) -> int | None:
        """Offset of the line after the first `n` iteration lines (None: no more of them)."""
        for k, m in enumerate(_ITER_LINE.finditer(block), 1):
            if k == n:
                end = block.find(b"\n", m.end())
                return None if end < 0 else end + 1
        return None

    def _sniff(self, block: bytes) -> Layout | None:
        for m in _ITER_LINE.finditer(block):
            lay = sniff_layout(m.group().decode("utf-8", "replace"))
            if lay is not None:
                return lay
        return None

    def _fast(self, block: bytes, base_line: int, lay: Layout) -> bool:
        rows = lay.tail.findall(block)
        n = len(rows)
        if not n:
            return not _STEP.search(block)  # nothing to read here at all
        first = _STEP.search(block)
        last = _last_step(block)
        if first is None or last is None:
            return False
        step0 = int(first.group(1))
        a = self.r.a
        if a.last_step is not None and step0 <= a.last_step:
            return False  # a resume replays steps: the per-line path counts them
        interval = self.r.s.interval
        if (last - step0) == (n - 1) * interval:
            steps = list(range(step0, last + 1, interval))
        else:
            steps = list(map(int, _STEP.findall(block)))
            if len(steps) != n or steps != sorted(steps):
                return False
        cols = list(zip(*rows, strict=True)) if len(lay.cols) > 1 else [tuple(rows)]
        by = dict(zip(lay.cols, cols, strict=True))
        try:
            losses = _floats(by[lay.cols[0]])
            grads = _floats(by["grad norm"]) if "grad norm" in by else None
            scales = _floats(by["loss scale"]) if "loss scale" in by else None
        except ValueError:
            return False
        times = self._times(block)
        fmts = self.r.formats  # the first lines, read one by one, named the format
        fmt = max(fmts, key=lambda k: fmts[k]) if fmts else "megatron"
        fmts[fmt] = fmts.get(fmt, 0) + n
        self.r._megatron_had_loss = True
        self.lines_read += n
        self.r.s.batch(steps, losses, grads, scales, None, locate=self._locator(block, base_line))
        for step, t in times:
            self.r.s.step_time(step, t)
        return True

    def _times(self, block: bytes) -> list[tuple[int, float]]:
        out = []
        size = len(block)
        pos = -1
        for k in range(TIME_SAMPLES):
            m = _TIME.search(block, max(pos + 1, k * size // TIME_SAMPLES))
            if m is None:
                break
            pos = m.start()
            out.append((int(m.group(1)), float(m.group(2))))
        return out

    def _locator(self, block: bytes, base_line: int) -> Callable[[int], Where | None]:
        lay = self.layout
        assert lay is not None
        starts: list[int] = []

        def locate(index: int) -> Where | None:
            if not starts:
                starts.extend(m.start() for m in lay.tail.finditer(block))
            if index >= len(starts):
                return None
            pos = starts[index]
            line_start = block.rfind(b"\n", 0, pos) + 1
            line_end = block.find(b"\n", pos)
            text = block[line_start: line_end if line_end >= 0 else len(block)]
            return (self.name, base_line + block.count(b"\n", 0, line_start),
                    clean(text.decode("utf-8", "replace")))

        return locate

    def _slow(self, block: bytes, base_line: int) -> None:
        self._slow_lines(block, base_line, limit=None)

    def _slow_lines(self, block: bytes, base_line: int, limit: int | None) -> None:
        line = base_line
        pos = 0
        for done, m in enumerate(_ITER_LINE.finditer(block), 1):
            line += block.count(b"\n", pos, m.start())
            pos = m.start()
            for seg in segments(m.group().decode("utf-8", "replace")):
                self.r.feed(clean(seg), line)
            self.lines_read += 1
            if limit is not None and done >= limit:
                return
