"""Step times from progress lines, the loss standing still, InfiniBand configured but absent:
whole-log analyses.

Slow training often shows only as a trend: the time per step (or epoch) climbs steadily on a
fixed workload. The readers take the common forms: Megatron's timer lines (`forward-compute` +
`backward-compute`), `time this epoch=`, `time(s):`,
`Iteration duration:`; Megatron's `elapsed time per iteration` is the loss package's
(`step-time-regression`). The wait for data is read where a line prints it next to the step
time (mmengine/detectron2 `time:`/`data_time:`, `data_s:`/`updt_s:`, AverageMeter
`Time`/`Data` columns, Megatron's batch-generator timer). Bounded: the series is kept at most
`MAX_POINTS` long by halving.

A loss that does not move at all - the same value, step after step - means the model is not
learning (a plateau at the loss of a uniform guess, or no update at all). It is read from the
loss series the loss tracker keeps.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from statistics import median
from typing import Any

# Megatron's timer summary line ("time (ms) | forward-compute: ..."), not the per-rank timer
# lines that repeat on every step of a long log
NEEDLES = ("time (ms) |", "time this epoch", "time(s):", "Iteration duration:", "data_time: ",
           "SamplesPerSec=",
           "load_data_time", "data_wait_time", " data_s:", ")\tData ", ") Data ", ") Batch ")
MAX_POINTS = 512
MIN_POINTS = 4
CREEP_RATIO = 1.15  # the last third's median step time over the first third's
CREEP_TAU = 0.4  # and a steady rise (Kendall's tau of time against order)

# a number, not any run of digits and dots: float("1.2.3") raises
_NUM = r"\d+(?:\.\d+)?"
_READERS = (
    ("epoch", re.compile(r"time this epoch\s*=\s*(" + _NUM + r")")),
    ("interval", re.compile(r"time\(s\):\s*(" + _NUM + r")")),
    ("iteration", re.compile(r"Iteration duration:\s*(" + _NUM + r")")),
)
_TIMERS = re.compile(r"(?:forward|backward)-compute: (" + _NUM + r")")
# mmengine/mmcv and detectron2 print the iteration time and, inside it, the wait for the batch
# (some printers put " - " or ", " between the fields)
_DATA_TIME = re.compile(r"\btime:\s*(" + _NUM + r")\s*[-,|]?\s*data_time:\s*(" + _NUM + r")")
# AverageMeter columns, the current value then the running average: PyTorch's ImageNet example
# (`Time 0.791 (2.189)  Data 0.677 (2.070)`) and semantic-segmentation trainers built on it
# (`Data 0.002 (0.574) Batch 0.818 (3.887)`)
_METER_TIME_DATA = re.compile(r"\bTime\s+(" + _NUM + r")\s+\(" + _NUM + r"\)\s+Data\s+("
                              + _NUM + r")\s+\(")
_METER_DATA_BATCH = re.compile(r"\bData\s+(" + _NUM + r")\s+\(" + _NUM + r"\)\s+Batch\s+("
                               + _NUM + r")\s+\(")
# Megatron's one-line timer summary (--timing-log-level 2): batch-generator is inside
# forward-backward
_MEG_BATCH = re.compile(r"batch-generator: (" + _NUM + r")")
_MEG_FB = re.compile(r"forward-backward: (" + _NUM + r")")
_STEP = re.compile(r"\b(?:step|iter|iteration)\b\s*[:=]?\s*(\d{1,12})\b", re.I)
DATA_MIN_POINTS = 3
DATA_SHARE = 0.4  # the median share of an iteration spent waiting for data that is a finding
# A few long stalls also starve the GPUs while the median stays low: a step that waits at least
# STALL_RATIO times its own compute time (and STALL_MIN seconds) for its batch, with the waits
# taking at least STALL_SHARE of all the time read. The first reading is left out: the workers
# are still starting (unless its line names a later step: the excerpt begins mid-run).
STALL_RATIO, STALL_MIN, STALL_SHARE = 10.0, 2.0, 0.5
# other trainers print the wait and the step as separate fields: the wait first, then the
# compute alone (`load_data_time: 19.6, train_step_time: 0.686`, `updt_s:0.302 data_s:13.330`)
# or the whole iteration (`iter_time: 0.645(0.645)  data_wait_time: 0.000(0.000)`)
_FIELD = re.compile(r"\b([a-z_]+)\s*[:=]\s*(\d+(?:\.\d+)?)")
_WAIT_KEYS = ("data_wait_time", "load_data_time", "data_s")
_COMPUTE_KEYS = ("train_step_time", "updt_s", "update_s")  # the step without the wait
_TOTAL_KEYS = ("iter_time",)  # the step with the wait


@dataclass
class StepTimes:
    source: str | None = None
    values: list[float] = field(default_factory=list)
    stride: int = 1  # every stride-th reading is kept
    seen: int = 0
    first: tuple[str, int, str] | None = None  # (file, line, text) of the first reading
    last: tuple[str, int, str] | None = None
    data: list[float] = field(default_factory=list)  # data_time / time per reading (bounded)
    data_lines: list[tuple[str, int, str]] = field(default_factory=list)  # first and last
    waits: list[tuple[float, float]] = field(default_factory=list)  # (wait, whole step) seconds
    first_mid_run: bool = False  # the first wait reading names a step after the first

    def feed(self, text: str, file: str, lineno: int) -> bool:
        if "data_time: " in text and "load_data_time" not in text:
            m = _DATA_TIME.search(text)
            return self._data(m.group(2), m.group(1), file, lineno, text) if m else False
        if "Data " in text and ("Time " in text or "Batch " in text):
            m = _METER_TIME_DATA.search(text)
            if m:
                return self._data(m.group(2), m.group(1), file, lineno, text)
            m = _METER_DATA_BATCH.search(text)
            if m:
                return self._data(m.group(1), m.group(2), file, lineno, text)
        if "data_wait_time" in text or "load_data_time" in text or " data_s:" in text:
            pair = _wait_fields(text)
            return self._data(*pair, file, lineno, text) if pair else False
        if "batch-generator: " in text and "time (ms) |" in text:
            b, fb = _MEG_BATCH.search(text), _MEG_FB.search(text)
            if b and fb:
                self._data(b.group(1), fb.group(1), file, lineno, text)
        value, kind = _reading(text)
        if value is None or kind is None:
            return False
        if self.source is None:
            self.source = kind
        elif kind != self.source:
            return False  # one form per log: a second one is another quantity
        self.seen += 1
        if self.first is None:
            self.first = (file, lineno, text.strip()[:500])
        self.last = (file, lineno, text.strip()[:500])
        if (self.seen - 1) % self.stride == 0:
            self.values.append(value)
            if len(self.values) >= MAX_POINTS:
                self.values = self.values[::2]
                self.stride *= 2
        return True

    def _data(self, wait: str, step: str, file: str, lineno: int, text: str) -> bool:
        try:
            w, s = float(wait), float(step)
        except ValueError:
            return False
        if s <= 0 or len(self.data) >= MAX_POINTS:
            return True
        if not self.data:
            m = _STEP.search(text)
            self.first_mid_run = m is not None and int(m.group(1)) > 1
        self.data.append(min(1.0, w / s))
        self.waits.append((w, max(w, s)))
        where = (file, lineno, text.strip()[:500])
        self.data_lines[1:] = [where] if self.data_lines else []
        if not self.data_lines:
            self.data_lines.append(where)
        return True

    def data_wait(self) -> dict[str, Any] | None:
        """Iterations that mostly wait for the next batch (the median share), or a run whose
        few long stalls for data take most of the time; None otherwise."""
        if len(self.data) < DATA_MIN_POINTS:
            return None
        share = median(self.data)
        if share >= DATA_SHARE:
            return {"share": share, "points": len(self.data)}
        rest = self.waits if self.first_mid_run else self.waits[1:]
        stalls = [w for w, s in rest if w >= STALL_MIN and w >= STALL_RATIO * (s - w)]
        total = sum(s for _w, s in rest)
        if stalls and total > 0 and sum(w for w, _s in rest) / total >= STALL_SHARE:
            return {"share": sum(w for w, _s in rest) / total, "points": len(self.data),
                    "stalls": len(stalls), "longest": max(stalls)}
        return None

    def spikes(self) -> dict[str, Any] | None:
        """A flat step time with a few steps far above it (a pause now and then), or None."""
        v = self.values
        if len(v) < SPIKE_MIN_POINTS or self.stride > 1:
            return None
        usual = median(v)
        high = [x for x in v if x >= SPIKE_RATIO * usual]
        if usual <= 0 or not high or len(high) * 5 > len(v) or self.creep() is not None:
            return None
        return {"spikes": len(high), "ratio": max(high) / usual, "points": len(v)}

    def creep(self) -> dict[str, Any] | None:
        """A steady rise of the step time, or None."""
        v = self.values
        if len(v) < MIN_POINTS:
            return None
        third = max(1, len(v) // 3)
        early, late = median(v[:third]), median(v[-third:])
        if early <= 0 or late < early * CREEP_RATIO or _tau(v) < CREEP_TAU:
            return None
        return {"early": early, "late": late, "ratio": late / early, "points": self.seen,
                "form": self.source}


def _wait_fields(text: str) -> tuple[str, str] | None:
    """(wait, whole step) as printed, from a line with the wait and the step as separate
    fields, or None."""
    fields = dict(_FIELD.findall(text))
    wait = next((fields[k] for k in _WAIT_KEYS if k in fields), None)
    if wait is None:
        return None
    total = next((fields[k] for k in _TOTAL_KEYS if k in fields), None)
    if total is not None:
        return wait, total
    compute = next((fields[k] for k in _COMPUTE_KEYS if k in fields), None)
    try:
        return (wait, str(float(wait) + float(compute))) if compute is not None else None
    except ValueError:
        return None


# DeepSpeed's throughput timer: `epoch=0/micro_step=10/global_step=10,
# RunningAvgSamplesPerSec=..., CurrSamplesPerSec=...` (older releases: `0/2650,
# SamplesPerSec=13.19`); the current figure, not the running average that lags it. Read as
# seconds per sample, so a falling throughput is a creeping step time.
_DS_THROUGHPUT = re.compile(r"(?:CurrSamplesPerSec|(?<![A-Za-z])SamplesPerSec)=(" + _NUM + r")")


def _reading(text: str) -> tuple[float | None, str | None]:
    """(seconds or milliseconds, the form) of one progress line."""
    if "SamplesPerSec=" in text:
        m = _DS_THROUGHPUT.search(text)
        value = float(m.group(1)) if m else 0.0
        return (1.0 / value, "throughput") if value > 0 else (None, None)
    if "time (ms) |" in text:
        parts = _TIMERS.findall(text)
        return (sum(float(p) for p in parts), "megatron-timers") if parts else (None, None)
    for kind, rx in _READERS:
        m = rx.search(text)
        if m:
            return float(m.group(1)), kind
    return None, None


def _tau(v: list[float]) -> float:
    """Kendall's tau of the values against their order (1: always rising)."""
    n = len(v)
    pairs = concordant = 0
    for i in range(n):
        for j in range(i + 1, n):
            if v[j] != v[i]:
                pairs += 1
                concordant += 1 if v[j] > v[i] else -1
    return concordant / pairs if pairs else 0.0


# NCCL's INFO lines: the job asks for InfiniBand (an HCA list, IB explicitly enabled) but NCCL
# finds no IB device, and no rank of the log uses IB: it runs over TCP sockets instead.
IB_NEEDLES = ("NET/IB : No device found", "NCCL_IB_HCA set", "NCCL_IB_DISABLE set by environment",
              "Using network IB", "NET/IB : Using")


@dataclass
class IbExpected:
    no_device: tuple[str, int, str] | None = None  # (file, line, text) of the first one
    expected: tuple[str, int, str] | None = None
    ib_used: bool = False

    def feed(self, text: str, file: str, lineno: int) -> None:
        where = (file, lineno, text.strip()[:500])
        if "NET/IB : No device found" in text and self.no_device is None:
            self.no_device = where
        if self.expected is None and ("NCCL_IB_HCA set" in text or re.search(
                r"NCCL_IB_DISABLE set by environment to 0\b", text)):
            self.expected = where
        if "Using network IB" in text or "NET/IB : Using" in text:
            self.ib_used = True

    def missing(self) -> list[tuple[str, int, str]] | None:
        """The lines that show IB asked for and not found (none of the log's ranks using it),
        or None."""
        if self.no_device is None or self.expected is None or self.ib_used:
            return None
        return [self.expected] if self.expected == self.no_device else [self.expected,
                                                                          self.no_device]


PLATEAU_SPREAD = 0.002  # max - min within 0.2% of the value
PLATEAU_MIN = 3


REPEAT_MIN = 4  # consecutive losses equal to those one period earlier
# of at least this many different values printed with 3 significant digits or more (a flat
# loss is `plateau`'s; a loss printed as 0.09 or 0.1 repeats by chance)
REPEAT_DISTINCT = 4


def _precise(v: float) -> bool:
    digits = format(abs(v), ".12g").split("e")[0].replace(".", "").lstrip("0")
    return len(digits) >= 3


def repeat(points: list[tuple[int, float]]) -> dict[str, Any] | None:
    """The losses printed for one pass over the data, printed again exactly (to every digit) for
    the next: the same batches in the same order give the same loss, so the weights did not
    change in between. Healthy training moves every loss a little; a run of `REPEAT_MIN`
    different values repeating by chance does not happen."""
    vals = [v for _s, v in points]
    n = len(vals)
    # only the distances at which some value recurs can be periods (one pass, not n^2)
    last: dict[float, int] = {}
    gaps: Counter[int] = Counter()
    for i, v in enumerate(vals):
        if v in last and i - last[v] >= 2:
            gaps[i - last[v]] += 1
        last[v] = i
    for period in sorted(p for p, count in gaps.items() if count >= REPEAT_MIN):
        run = 0
        for i in range(period, n):
            if vals[i] == vals[i - period] and vals[i] == vals[i]:
                run += 1
                seen = vals[i - run + 1:i + 1]
                if run >= REPEAT_MIN and len({x for x in seen if _precise(x)}) >= REPEAT_DISTINCT:
                    first = i - run + 1
                    while i + 1 < n and vals[i + 1] == vals[i + 1 - period]:
                        i += 1
                    return {"period": period, "from_step": points[first][0],
                            "to_step": points[i][0], "points": i - first + 1,
                            "earlier_step": points[first - period][0]}
            else:
                run = 0
    return None


RECUR_MIN_POINTS = 12  # logged losses: enough that a pool of a few values shows itself
RECUR_DIGITS = 4  # significant digits a recurring value needs (3.5551, not 3.7 or 0.12)
RECUR_SHARE = 0.5  # of the losses must be such a value that came before at another step


def recurring(points: list[tuple[int, float]]) -> dict[str, Any] | None:
    """The losses drawn, in any order, from a small pool of exact values (to 4 significant
    digits or more), each value coming back at later steps: with shuffled batches of the same
    data the same batch gives the same loss only while the weights stay as they were
    (https://github.com/Lightning-AI/litgpt/issues/834: LoRA under DDP, 22 losses from 8 values).
    `repeat` needs the batches in the same order; this needs only the same batches. Lines that
    print one step's loss twice (every rank, a bar and a log line) are one reading: a value
    counts as back only at another step, after a different value in between."""
    steps: list[int] = []
    vals: list[float] = []
    for step, v in points:
        if not math.isfinite(v):
            return None
        if vals and (v == vals[-1] or step == steps[-1]):
            continue
        steps.append(step)
        vals.append(v)
    n = len(vals)
    if n < RECUR_MIN_POINTS:
        return None
    seen: dict[float, set[int]] = {}
    back = 0
    for step, v in zip(steps, vals, strict=True):
        earlier = seen.setdefault(v, set())
        if earlier - {step} and _digits(v) >= RECUR_DIGITS:
            back += 1
        earlier.add(step)
    pool = [v for v, at in seen.items() if len(at) >= 2 and _digits(v) >= RECUR_DIGITS]
    if len(pool) < REPEAT_DISTINCT or back < RECUR_SHARE * n:
        return None
    return {"from_step": steps[0], "to_step": steps[-1], "points": n,
            "values": len(seen), "recurring": len(pool), "back": back}


def _digits(v: float) -> int:
    return len(format(abs(v), ".12g").split("e")[0].replace(".", "").lstrip("0"))


def plateau(points: list[tuple[int, float]]) -> dict[str, Any] | None:
    """The loss at one value to its printed precision for the last points of the run (at least
    `PLATEAU_MIN` points over most of the series, or two points hundreds of steps apart that
    are exactly equal). `identical` when it never moved from the first point on, or from the
    second with at least `PLATEAU_MIN` equal points (the first epoch's average still holds the
    steps before the weights stopped changing)."""
    vals = [v for _s, v in points if v == v and abs(v) != float("inf")]
    if len(vals) < 2 or len(vals) != len(points):
        return None
    start = len(vals) - 1
    while start > 0:
        window = vals[start - 1:]
        mid = median(window)
        if mid == 0 or max(window) - min(window) > PLATEAU_SPREAD * abs(mid):
            break
        start -= 1
    tail = vals[start:]
    span = points[-1][0] - points[start][0]
    exact = len(set(tail)) == 1
    long_enough = (len(tail) >= PLATEAU_MIN and len(tail) * 2 >= len(vals)) or (
        exact and len(tail) >= 2 and span >= 100)
    if not long_enough or median(tail) == 0:
        return None
    return {"value": median(tail), "from_step": points[start][0], "to_step": points[-1][0],
            "points": len(tail),
            "same_from": points[0][0] if vals[0] == vals[-1] else points[1][0],
            "identical": start <= 1 and len(set(vals[1:])) == 1 and (
                (exact and start == 0) or len(vals) - 1 >= PLATEAU_MIN)}


# A cross-entropy over k equally likely answers is ln(k): the loss of a model that predicts the
# uniform distribution, i.e. has learnt nothing. The class counts people train on most, and the
# vocabularies of the common tokenizers (LLaMA/Mistral 32000, GPT-2 50257, Llama 3 128256).
CHANCE_CLASSES = (2, 10, 100, 1000, 32000, 50257, 128256)
CHANCE_MIN = 8  # readings: a run, not a few noisy batches
CHANCE_NEAR = 0.04  # the late readings' median within 4% of ln(k), none more than 4% below it
CHANCE_FALL_TAU = -0.5  # and the late readings not on their way down (Kendall's tau)
CHANCE_EARLY_STEP = 10  # not the first steps of a run, where every classifier starts there
CHANCE_EARLY_STEP_VOCAB = 100  # a language model's warm-up takes longer to leave ln(vocab)


CHANCE_EXACT = 0.001  # a loss frozen at one value: within 0.1% of ln(k) is ln(k)


def frozen_at_chance(value: float) -> int | None:
    """The class count k when a loss frozen at `value` is ln(k) itself (see `CHANCE_CLASSES`):
    a uniform guess scores ln(k) on every batch, so identical losses there do not show that the
    weights stopped changing, only that the output ignores the input."""
    for k in CHANCE_CLASSES:
        level = math.log(k)
        if abs(value - level) <= CHANCE_EXACT * level:
            return k
    return None


def chance(points: list[tuple[int, float]]) -> dict[str, Any] | None:
    """The loss sitting at ln(k) for a plausible class count k (see `CHANCE_CLASSES`) over the
    second half of the readings: the model still predicts a uniform guess. A healthy run starts
    near ln(k) and falls through it, so the late readings must not go below it (a floor, not a
    passing value), must not be falling, and must come after the first steps of the run."""
    finite = [(s, v) for s, v in points if v == v and abs(v) != float("inf")]
    if len(finite) < CHANCE_MIN:
        return None
    late = finite[len(finite) // 2:]
    values = [v for _s, v in late]
    mid, low = median(values), min(values)
    for k in CHANCE_CLASSES:
        level = math.log(k)
        if abs(mid - level) > CHANCE_NEAR * level or low < level * (1 - CHANCE_NEAR):
            continue
        if late[-1][0] < (CHANCE_EARLY_STEP_VOCAB if k > 1000 else CHANCE_EARLY_STEP):
            return None
        if _tau(values) <= CHANCE_FALL_TAU:
            return None
        return {"value": mid, "classes": k, "chance": level, "points": len(late),
                "from_step": late[0][0], "to_step": late[-1][0]}
    return None


# ---- a run reported as slow: where the log's own numbers point ----------------------------
# Read only when the user says the run is slow (`--symptom slow`): these numbers are ordinary in
# a healthy log (a small model's MFU is low, compute is most of every step), so they never make
# a finding on their own; they answer the slow-training tree's questions for a run known slow.

# the phases of a per-step timer breakdown, by the timer's name (Megatron's timers, and the
# `Data: ... | Forward: ... | Total: ...` lines hand-written loops print)
_PHASES = (
    ("data", re.compile(r"batch-generator|data-iterator|broadcast-data|^data(?:[_ -]?(?:time|"
                        r"load(?:ing)?|wait))?$|^load[_-]?data")),
    ("pipeline", re.compile(r"^(?:forward|backward)-(?:send|recv)")),
    ("dp-sync", re.compile(r"grads-all-reduce|all-grads-sync|params-all-reduce|params-all-gather"
                           r"|grads-reduce-scatter")),
    ("optimizer", re.compile(r"^optimizer$")),
    ("compute", re.compile(r"^(?:forward|backward)(?:-compute)?$")),
    ("total", re.compile(r"^(?:forward-backward|total|step|iteration|iter|batch)(?:[_ ]time)?$")),
)
# the tree's nodes for a phase with an unusual share (slow-training#timer's answers)
PHASE_NODES = {"data": "dataloader", "pipeline": "pp-bubble", "dp-sync": "dp-overlap",
               "optimizer": "optimizer-step", "compute": "compute-bound"}
# the share of a step that is unusual for a phase: the next batch should be ready (prefetched),
# the gradient sync mostly overlapped, the optimizer a few percent; compute is most of a step
PHASE_UNUSUAL = {"data": 0.10, "pipeline": 0.25, "dp-sync": 0.25, "optimizer": 0.20,
                 "compute": 0.5}
_MEG_MINMAX = re.compile(r"^\s*([a-z][\w-]*)\s*\.{3,}:\s*\(\s*(" + _NUM + r"),\s*(" + _NUM
                         + r")\s*\)")
_TIMER_FIELD = re.compile(r"(?:^|[|\]]|\s)\s*([A-Za-z][\w -]{0,40}?)\s*:\s*(" + _NUM
                          + r")\s*(ms|s)\b")
_MEG_FIELD = re.compile(r"(?<![\w-])([a-z][\w-]*): (" + _NUM + r")")  # from a word's start only
_MFU = re.compile(r"\bmfu[:=]?\s*(-?" + _NUM + r")\s*%", re.I)
MFU_LOW = 5.0  # percent of peak: well-tuned dense training reaches 35-55%
SPIKE_RATIO = 3.0  # a step this many times the median step is a pause, not noise
SPIKE_MIN_POINTS = 8
_FIRST_STEP = re.compile(r"\b(?:batch|step|iter|iteration)\b\s*[:=]?\s*[01]\b", re.I)


@dataclass
class TailHint:
    """Where a reported symptom leads by the log's own numbers (`--symptom`)."""

    node: str  # a node of the symptom's tree
    why: str
    lines: list[tuple[int, str]]  # (line number, text) of the readings that show it


def _phase(name: str) -> str | None:
    key = name.strip().lower()
    return next((phase for phase, rx in _PHASES if rx.search(key)), None)


def _timer_reading(text: str) -> dict[str, float] | None:
    """{phase: time} of one per-step timer breakdown line (the longest timer of each phase,
    nested timers such as batch-generator around broadcast-data are not added up)."""
    if "time (ms) |" in text:
        pairs = [(k, float(v)) for k, v in _MEG_FIELD.findall(text)]
    else:
        pairs = [(k, float(v) * (1000.0 if unit == "s" else 1.0))
                 for k, v, unit in _TIMER_FIELD.findall(text)]
    out: dict[str, float] = {}
    for name, value in pairs:
        phase = _phase(name)
        if phase is not None:
            _add_phase(out, phase, value)
    return out if len(out) >= 2 else None


def _add_phase(phases: dict[str, float], phase: str, value: float) -> None:
    """Forward and backward compute add up; a phase's nested timers (batch-generator around
    broadcast-data) do not: the longest stands for it."""
    phases[phase] = phases.get(phase, 0.0) + value if phase == "compute" else max(
        phases.get(phase, 0.0), value)


def _unusual_phase(readings: list[tuple[dict[str, float], bool]]) -> tuple[str, float] | None:
    """The phase with an unusual share of the step (median over the readings), or None. The
    data time of a run's first step is left out: the loader's workers are still starting."""
    shares: dict[str, list[float]] = {}
    for phases, first in readings:
        total = phases.get("total") or sum(v for k, v in phases.items() if k != "total")
        if total <= 0:
            continue
        for phase, value in phases.items():
            if phase != "total" and not (phase == "data" and first):
                shares.setdefault(phase, []).append(min(1.0, value / total))
    for phase in ("data", "pipeline", "dp-sync", "optimizer", "compute"):
        if phase in shares and median(shares[phase]) >= PHASE_UNUSUAL[phase]:
            return phase, median(shares[phase])
    return None


def slow_hint(lines: list[tuple[int, str]]) -> TailHint | None:
    """For a run reported slow: the slow-training node the log's own numbers lead to, by the
    tree's questions - a timer breakdown with one phase taking an unusual share, a step time
    that creeps up or pauses now and then, or a model-FLOPs utilisation far below what the GPU
    gives - or None when the lines do not show any."""
    readings: list[tuple[dict[str, float], bool]] = []
    timer_lines: list[tuple[int, str, str | None]] = []  # and the phase of a block's line
    block: dict[str, float] = {}
    block_lines: list[tuple[int, str, str | None]] = []
    mfu: list[float] = []
    mfu_lines: list[tuple[int, str]] = []
    steps = StepTimes()
    for lineno, text in lines:
        m = _MEG_MINMAX.match(text)
        if m:  # Megatron's multi-line "(min, max) time across ranks (ms)" block
            phase = _phase(m.group(1))
            if phase is not None:
                _add_phase(block, phase, float(m.group(3)))
                block_lines.append((lineno, text, phase))
            continue
        if len(block) >= 2:
            readings.append((block, False))
            timer_lines += block_lines
        block, block_lines = {}, []
        phases = _timer_reading(text)
        if phases is not None:
            readings.append((phases, _FIRST_STEP.search(text) is not None))
            timer_lines.append((lineno, text, None))
        for m in _MFU.finditer(text):
            if float(m.group(1)) >= 0:  # nanoGPT prints -100% before it has measured
                mfu.append(float(m.group(1)))
                mfu_lines.append((lineno, text))
        steps.feed(text, "", lineno)
    if len(block) >= 2:
        readings.append((block, False))
        timer_lines += block_lines
    creep = steps.creep()
    if creep is not None:  # the step time changes through the run: the tree's own answer
        return TailHint("step-time-creep", f"the step time grows from {creep['early']:.4g} to "
                        f"{creep['late']:.4g}", [(w[1], w[2]) for w in (steps.first, steps.last)
                                                 if w is not None])
    unusual = _unusual_phase(readings)
    if unusual is not None:
        phase, share = unusual
        what = ("the time goes to the model's own compute" if phase == "compute" else
                "an unusual share for it")
        return TailHint(PHASE_NODES[phase], f"the per-step timers give {phase} {share:.0%} of "
                        f"the step: {what}", [(n, t) for n, t, p in timer_lines
                                              if p in (None, phase)][-3:])
    pauses = steps.spikes()
    if pauses is not None:
        return TailHint("manual-gc", f"{pauses['spikes']} step(s) take {pauses['ratio']:.1f}x "
                        "the usual step time: pauses, not a slower run", [])
    if mfu and median(mfu) < MFU_LOW:
        return TailHint("compute-bound", f"the model-FLOPs utilisation is {median(mfu):.3g}% "
                        "of the GPU's peak", mfu_lines[-3:])
    return None


LR_ZERO_REPORTED = 2  # progress lines in a row printing a learning rate of 0


def not_learning_hint(lines: list[tuple[int, str]]) -> TailHint | None:
    """For a run reported as not learning: the learning rate printed as 0 on its last progress
    lines (at least two in a row) answers the flat-loss question "is the learning rate tiny or
    zero?" - lr-too-small. Alone, two such lines are a schedule's edge as often as a fault
    (`analyses.LR_ZERO_MIN` asks for more)."""
    from trainmedic.triage.loss import LossTracker

    tracker = LossTracker()
    tracker.begin("tail")
    read: list[tuple[int, str]] = []
    for lineno, text in lines:
        if tracker.feed(text, lineno):
            read.append((lineno, text))
    loss = tracker.finish()
    if loss.lr_zero_tail < LR_ZERO_REPORTED:
        return None
    return TailHint("lr-too-small", f"the learning rate is printed as 0 on the last "
                    f"{loss.lr_zero_tail} progress lines", read[-3:])


# PyTorch Lightning's DDP set-up: every process prints "Initializing distributed: GLOBAL_RANK: g,
# MEMBER: g+1/W" (Lightning 1.0: "initializing ddp: ...") right before init_process_group, and
# rank 0 prints "All distributed processes registered. Starting with W processes" (1.0: "All DDP
# processes registered. Starting ddp with W processes") once the whole world joined.
WORLD_NEEDLES = ("GLOBAL_RANK: ", "processes registered")
_WORLD_MEMBER = re.compile(
    r"(?:[Ii]nitializing ddp|Initializing distributed): GLOBAL_RANK: (\d+), MEMBER: \d+/(\d+)")


@dataclass
class WorldJoin:
    """Which global ranks announced themselves before the process group formed, and whether
    it formed: two processes claiming one global rank (node ranks or task counts that repeat),
    or rank 0 waiting on a world part of which never came."""

    members: dict[int, list[tuple[str, int, str]]] = field(default_factory=dict)
    world: int | None = None
    registered: bool = False

    def feed(self, text: str, file: str, lineno: int) -> None:
        if "processes registered" in text:
            self.registered = True
            return
        m = _WORLD_MEMBER.search(text)
        if m is None or len(self.members) >= 4096:
            return
        world = int(m.group(2))
        if self.world is not None and world != self.world:
            return  # another run's announcement in the same log
        self.world = world
        seen = self.members.setdefault(int(m.group(1)), [])
        if len(seen) < 2:  # twice is all `duplicated` needs: memory stays bounded on any log
            seen.append((file, lineno, text.strip()[:500]))

    def duplicated(self) -> tuple[list[int], list[tuple[str, int, str]]] | None:
        """Global ranks announced by more than one process, while the world never formed."""
        if self.registered:
            return None
        twice = sorted(r for r, seen in self.members.items() if len(seen) > 1)
        if not twice:
            return None
        return twice, [line for r in twice[:2] for line in self.members[r][:2]]

    def partial(self) -> tuple[int, int, list[tuple[str, int, str]]] | None:
        """(members seen, world size, lines) when rank 0 announced itself but the log holds
        fewer members than the world and rank 0 never saw the world complete."""
        if self.registered or self.world is None or 0 not in self.members:
            return None
        if len(self.members) >= self.world or self.duplicated() is not None:
            return None
        return len(self.members), self.world, self.members[0][:1]
