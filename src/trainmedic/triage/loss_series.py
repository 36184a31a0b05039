"""Loss-series analysis: parse training-progress lines, find spikes, NaNs and scale collapse.

Readers: Megatron-LM iteration lines (`iteration N/ M | ... | lm loss: X | loss scale: S |
grad norm: G | number of skipped iterations: K | number of nan iterations: J |`), Hugging Face
Trainer log dicts (`{'loss': 2.31, 'grad_norm': nan, 'learning_rate': ..., 'epoch': ...}`),
DeepSpeed (`step=10, skipped=6, lr=[...]`, `OVERFLOW! ... reducing to 8`) and plain
`step 100 loss 2.3` / `Iter 25: Train loss 1.59` lines.

Spikes are judged against a rolling median with MAD (robust to noise and to the normal early
decline), not a fixed threshold; the series kept for drawing is downsampled to a bound.
"""

from __future__ import annotations

import math
import re
from collections import deque
from dataclasses import dataclass, field
from statistics import median

WINDOW = 64
MIN_HISTORY = 12
SPIKE_SIGMAS = 6.0
SPIKE_MIN_RATIO = 1.15  # and at least 15 % above the median: tiny-noise series need both
GRAD_SIGMAS = 10.0
GRAD_MIN_RATIO = 4.0
MAX_POINTS = 1024
MAX_EVENTS = 50
MAX_SAVES = 4096

_NUM = r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|nan|NaN|inf|Inf|-inf)"
_MEGATRON_ITER = re.compile(r"\biteration\s+(\d+)\s*/\s*\d+\s*\|")
_HF_DICT = re.compile(r"\{'loss': (" + _NUM + r")(.*?)\}")
_HF_FIELD = re.compile(r"'(grad_norm|learning_rate|epoch|step)': (" + _NUM + r")")
_PLAIN = re.compile(
    r"\b(?:step|iter|iteration|global_step)\b\s*[:=#]?\s*(\d+)\b.*?\b(?:train[_ ])?loss\b"
    r"\s*[:=]?\s*(" + _NUM + r")", re.I,
)
_DS_STEP = re.compile(r"\bstep=(\d+), skipped=(\d+)")
_DS_OVERFLOW = re.compile(r"OVERFLOW!.*?Attempted loss scale: (" + _NUM + r")(?:, reducing to ("
                          + _NUM + r"))?")
_APEX_OVERFLOW = re.compile(r"Gradient overflow\.\s+Skipping step.*?reducing loss scale to ("
                            + _NUM + r")")
_SAVE_INTERVAL = re.compile(r"save[_-]interval\W+(\d+)")
_SAVED = re.compile(r"saved checkpoint (?:from|at) iteration\s+(\d+)", re.I)


def _f(text: str | float) -> float:
    return float(text)


def _field(text: str, key: str) -> float | None:
    """One numeric field of a Megatron line by plain `find` (this runs once per step)."""
    i = text.find(key)
    if i < 0:
        return None
    i += len(key)
    j = text.find("|", i)
    try:
        return float(text[i:j] if j >= 0 else text[i:])
    except ValueError:
        return None


def _fields(text: str) -> dict[str, float]:
    """Numeric `key: value` fields of a Megatron iteration line (split, not regex: per step)."""
    out = {}
    for part in text.split("|")[1:]:
        key, sep, value = part.rpartition(":")
        if sep:
            try:
                out[key.strip()] = float(value)
            except ValueError:
                continue
    return out


@dataclass
class Spike:
    """One spike event: consecutive points far above the rolling baseline."""

    start: int
    peak: int
    peak_value: float
    baseline: float
    end: int | None = None  # first iteration back near the baseline; None = never recovered
    checkpoint_before: int | None = None

    def to_dict(self) -> dict:
        return {"start": self.start, "peak": self.peak, "peak_value": self.peak_value,
                "baseline": self.baseline, "end": self.end, "recovered": self.end is not None,
                "checkpoint_before": self.checkpoint_before}


@dataclass
class LossAnalysis:
    """Everything the report, the CLI and a sparkline need about the loss series."""

    points: list[tuple[int, float]] = field(default_factory=list)  # downsampled (step, loss)
    stride: int = 1
    count: int = 0
    first_step: int | None = None
    last_step: int | None = None
    last_loss: float | None = None
    spikes: list[Spike] = field(default_factory=list)
    nan_steps: list[int] = field(default_factory=list)  # first few steps with NaN/inf
    nan_count: int = 0
    grad_norm_nan_count: int = 0
    grad_explosions: list[tuple[int, float, float]] = field(default_factory=list)
    loss_scale_max: float | None = None
    loss_scale_last: float | None = None
    loss_scale_min: float | None = None
    skipped_iterations: int = 0  # Megatron "number of skipped iterations" summed / DS skipped
    nan_iterations: int = 0
    overflow_events: int = 0
    missing_loss_steps: int = 0  # Megatron lines whose loss vanished (NaN averages are omitted)
    save_interval: int | None = None
    saves: list[int] = field(default_factory=list)
    source: str | None = None  # which format was parsed

    @property
    def loss_scale_collapsed(self) -> bool:
        hi, lo = self.loss_scale_max, self.loss_scale_min
        if hi is None or lo is None or hi < 2.0:
            return False  # bf16/fp32 runs print a constant 1.0
        # fp16 warm-up lowers 2^32 to ~2^16 and is normal; a scale driven to single digits is not
        return lo <= 1.0 or (lo <= 16.0 and hi / lo >= 64.0)

    def checkpoint_before(self, step: int) -> int | None:
        saved = [s for s in self.saves if s < step]
        if saved:
            return max(saved)
        if self.save_interval:
            guess = ((step - 1) // self.save_interval) * self.save_interval
            return guess if guess > 0 else None
        return None

    def recovery(self, spike: Spike) -> str:
        """The concrete way back from a spike: resume before it and skip the data behind it."""
        end = spike.end if spike.end is not None else spike.peak
        skip = f"--skip-train-iteration-range {spike.start}:{end}"
        ckpt = spike.checkpoint_before or self.checkpoint_before(spike.start)
        if ckpt is not None:
            how = "saved" if ckpt in self.saves else f"by --save-interval {self.save_interval}"
            return (f"resume from the checkpoint of iteration {ckpt} ({how}) with {skip}")
        return (f"resume from the last checkpoint saved before iteration {spike.start} (look for "
                f"'saved checkpoint ... iteration N' lines) with {skip}")

    def to_dict(self) -> dict:
        return {
            "format": self.source, "count": self.count, "first_step": self.first_step,
            "last_step": self.last_step, "last_loss": _json_float(self.last_loss),
            "stride": self.stride,
            "points": [[s, _json_float(v)] for s, v in self.points],
            "spikes": [dict(sp.to_dict(), recovery=self.recovery(sp)) for sp in self.spikes],
            "nan_steps": self.nan_steps, "nan_count": self.nan_count,
            "grad_norm_nan_count": self.grad_norm_nan_count,
            "grad_explosions": [{"step": s, "grad_norm": g, "baseline": b}
                                for s, g, b in self.grad_explosions],
            "loss_scale": {"max": self.loss_scale_max, "min": self.loss_scale_min,
                           "last": self.loss_scale_last, "collapsed": self.loss_scale_collapsed},
            "skipped_iterations": self.skipped_iterations, "nan_iterations": self.nan_iterations,
            "overflow_events": self.overflow_events, "save_interval": self.save_interval,
            "missing_loss_steps": self.missing_loss_steps,
            "saves": self.saves[-20:],
        }


def _json_float(v: float | None) -> float | str | None:
    if v is None or math.isfinite(v):
        return v
    return str(v)


class _Robust:
    """Rolling median/MAD baseline; recomputed every few points (cheap on millions of steps)."""

    def __init__(self, sigmas: float, min_ratio: float) -> None:
        self.window: deque[float] = deque(maxlen=WINDOW)
        self.sigmas = sigmas
        self.min_ratio = min_ratio
        self._threshold = math.inf
        self._median = 0.0
        self._stale = 0

    def _refresh(self) -> None:
        med = median(self.window)
        mad = median(abs(x - med) for x in self.window)
        sigma = max(1.4826 * mad, 1e-3 * abs(med), 1e-9)
        self._median = med
        self._threshold = max(med + self.sigmas * sigma, med * self.min_ratio
                              if med > 0 else med + self.sigmas * sigma)
        self._stale = 0

    def is_outlier(self, x: float) -> tuple[bool, float]:
        if len(self.window) < MIN_HISTORY:
            return False, self._median
        if self._stale >= 32:
            self._refresh()
        if x <= self._threshold:
            return False, self._median
        self._refresh()
        return x > self._threshold, self._median

    def add(self, x: float) -> None:
        self.window.append(x)
        self._stale += 1
        if len(self.window) == MIN_HISTORY:
            self._refresh()

    @property
    def near(self) -> float:
        """Back under this value = recovered (half-way threshold)."""
        return (self._median + self._threshold) / 2 if math.isfinite(self._threshold) else 0.0


class LossTracker:
    """Streaming consumer of candidate lines; `analysis` holds the bounded result."""

    def __init__(self) -> None:
        self.analysis = LossAnalysis()
        self._loss = _Robust(SPIKE_SIGMAS, SPIKE_MIN_RATIO)
        self._grad = _Robust(GRAD_SIGMAS, GRAD_MIN_RATIO)
        self._open: Spike | None = None
        self._hf_index = 0
        self._had_loss = False
        self._last_step = -1

    # ---- parsing -------------------------------------------------------------------------
    def feed(self, text: str) -> bool:
        """Parse one line; True when it carried training progress."""
        a = self.analysis
        if "iteration" in text:
            m = _MEGATRON_ITER.search(text)
            if m:
                self._megatron(int(m.group(1)), text)
                return True
            m = _SAVED.search(text)
            if m:
                if len(a.saves) < MAX_SAVES:
                    a.saves.append(int(m.group(1)))
                return True
        if "'loss': " in text:
            m = _HF_DICT.search(text)
            if m:
                self._hf(m.group(1), m.group(2))
                return True
        if "interval" in text:
            m = _SAVE_INTERVAL.search(text)
            if m:
                a.save_interval = int(m.group(1))
                return True
        if "OVERFLOW!" in text or "Gradient overflow" in text:
            m = _DS_OVERFLOW.search(text) or _APEX_OVERFLOW.search(text)
            if m:
                a.overflow_events += 1
                new = m.group(m.lastindex or 1)
                self._scale(_f(new))
                return True
        if "step=" in text:
            m = _DS_STEP.search(text)
            if m:
                a.source = a.source or "deepspeed"
                a.skipped_iterations = int(m.group(2))
                return True
        m = _PLAIN.search(text)
        if m:
            a.source = a.source or "plain"
            self.point(int(m.group(1)), _f(m.group(2)))
            return True
        return False

    def _megatron(self, step: int, text: str) -> None:
        a = self.analysis
        a.source = a.source or "megatron"
        loss = _field(text, "| lm loss:")
        if loss is None and "loss:" in text:  # BERT/MoE/other loss keys: the slow, general way
            fields = _fields(text)
            loss = next((v for k, v in fields.items() if k.endswith("loss") and k != "loss scale"),
                        None)
        scale = _field(text, "| loss scale:")
        if scale is not None:
            self._scale(scale)
        grad = _field(text, "| grad norm:")
        skipped = _field(text, "| number of skipped iterations:")
        nans = _field(text, "| number of nan iterations:")
        if skipped is not None:
            a.skipped_iterations += int(float(skipped))
        if nans is not None and float(nans) > 0:
            a.nan_iterations += int(float(nans))
            self._nan(step)
        if grad is not None:
            self.grad(step, _f(grad))
        if loss is not None:
            self._had_loss = True
            self.point(step, _f(loss))
        elif self._had_loss and not skipped:
            # Megatron prints a loss only if its average is > 0: a NaN average is silently
            # omitted, so a step that lost its "lm loss" field is a NaN step (unless the whole
            # interval was skipped by the fp16 scaler, which also leaves no loss to print).
            a.missing_loss_steps += 1
            self.point(step, math.nan)

    def _hf(self, loss: str, rest: str) -> None:
        a = self.analysis
        a.source = a.source or "hf-trainer"
        extra = dict(_HF_FIELD.findall(rest))
        self._hf_index += 1
        step = int(float(extra["step"])) if "step" in extra else self._hf_index
        if "grad_norm" in extra:
            self.grad(step, _f(extra["grad_norm"]))
        self.point(step, _f(loss))

    # ---- analysis ------------------------------------------------------------------------
    def _scale(self, scale: float) -> None:
        a = self.analysis
        if not math.isfinite(scale):
            return
        a.loss_scale_last = scale
        a.loss_scale_max = scale if a.loss_scale_max is None else max(a.loss_scale_max, scale)
        a.loss_scale_min = scale if a.loss_scale_min is None else min(a.loss_scale_min, scale)

    def _nan(self, step: int) -> None:
        a = self.analysis
        a.nan_count += 1
        if len(a.nan_steps) < 20:
            a.nan_steps.append(step)

    def grad(self, step: int, value: float) -> None:
        a = self.analysis
        if not math.isfinite(value):
            a.grad_norm_nan_count += 1
            return
        outlier, base = self._grad.is_outlier(value)
        if outlier:
            if len(a.grad_explosions) < MAX_EVENTS:
                a.grad_explosions.append((step, value, base))
            return
        self._grad.add(value)

    def point(self, step: int, value: float) -> None:
        a = self.analysis
        a.count += 1
        if a.first_step is None:
            a.first_step = step
        a.last_step, a.last_loss = step, value
        if not math.isfinite(value):
            self._keep(step, value, force=True)
            self._nan(step)
            return
        spike = self._open
        outlier, base = self._loss.is_outlier(value)
        self._keep(step, value, force=outlier)
        if outlier:
            if spike is None:
                if len(a.spikes) < MAX_EVENTS:
                    self._open = Spike(step, step, value, base,
                                       checkpoint_before=a.checkpoint_before(step))
                    a.spikes.append(self._open)
            elif value > spike.peak_value:
                spike.peak, spike.peak_value = step, value
            return  # spikes never pollute the baseline
        if spike is not None and value <= self._loss.near:
            spike.end = step
            self._open = None
        self._loss.add(value)

    def _keep(self, step: int, value: float, *, force: bool) -> None:
        """Bounded series for drawing: decimate by 2 when full, keeping the larger value.

        Spike and NaN points are always kept, so a sparkline can mark them.
        """
        a = self.analysis
        if step == self._last_step:
            return
        self._last_step = step
        if a.count % a.stride and not force:
            return
        a.points.append((step, value))
        if len(a.points) >= MAX_POINTS:
            pairs = zip(a.points[0::2], a.points[1::2], strict=False)
            a.points = [max(p, key=lambda sv: sv[1] if math.isfinite(sv[1]) else math.inf)
                        for p in pairs]
            a.stride *= 2
