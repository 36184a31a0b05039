"""Detectors over the loss series, streaming and in bounded memory.

- spikes: a point far above the *recent level* (median of the last 16 points; noise from the
  first differences of the last 64, so a falling curve does not hide a spike), recovered when
  the series comes back near the level;
- NaN/inf runs, counted exactly where the log counts them (Megatron's `number of nan
  iterations`), never twice;
- grad-norm explosions (the same robust test, far stricter);
- fp16 loss scale: the start-up search stays silent; afterwards a collapse toward 1 or a burst
  of overflows is an event;
- slow divergence and step-time regressions: a Mann-Kendall trend test over a window of bucket
  means (bounded: at most `BUCKETS` buckets, merged pairwise as the run grows), not a threshold
  on one step.

`batch()` takes whole columns (the Megatron block reader) and skips the per-point work for
chunks that are plainly normal; `point()` is the per-point path every reader can use. Both give
the same result.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Sequence
from functools import partial
from operator import sub

from trainmedic.triage.loss.model import (
    GradExplosion,
    LossAnalysis,
    NanRun,
    ScaleEvent,
    Spike,
    Trend,
)

WINDOW = 64
LEVEL = 8
MIN_HISTORY = 12
REFRESH = 16
SPIKE_SIGMAS = 6.0
SPIKE_MIN_RISE = 0.15  # and at least 15 % above the level (scaled down for averaged points)
GRAD_SIGMAS = 10.0
GRAD_MIN_RATIO = 4.0
MAX_POINTS = 1024
MAX_EVENTS = 50
BUCKETS = 256
CHUNK = 128
DIVERGENCE_MIN_RISE = 0.10  # sustained rise of at least 10 % of the level
TREND_Z = 3.0
STEP_TIME_MIN_RATIO = 1.3
# With fewer than MIN_HISTORY points (a short excerpt pasted into a thread) there is no robust
# level yet; only a jump far beyond anything a healthy run prints counts: the grad norm 50x the
# largest before it, or 20x the largest of at least 3 points before it (a pasted Trainer excerpt:
# 237 after 2.5-5.7), the loss 3x the largest of at least 3 points before it (the first steps
# of a run swing widely; 2 points suffice when the excerpt starts past step SHORT_LOSS_LATE,
# where that swing is over) and at least 1.0 higher.
SHORT_GRAD_RATIO, SHORT_GRAD_MIN = 50.0, 10.0
SHORT_GRAD_RATIO_AFTER, SHORT_GRAD_AFTER = 20.0, 3
SHORT_LOSS_RATIO, SHORT_LOSS_RISE, SHORT_LOSS_AFTER = 3.0, 1.0, 3
SHORT_LOSS_LATE, SHORT_LOSS_AFTER_LATE = 100, 2
# ... and one point before is enough when the jump lands at the loss of a language model that
# predicts a uniform guess over a vocabulary of 10k tokens or more (ln 10000 = 9.21; 10.37 for
# 32000): a run that was at a third of that a step before lost what it had learnt in one
# update (https://github.com/Lightning-AI/litgpt/issues/628: 1.70 -> 11.46 and it stays; a
# healthy run starts at that level and only comes down from it); up to a fifth above ln of the
# largest vocabularies (262144 tokens: 12.48), a fresh model's first losses. A loss far above
# it (a detection loss of 63) is no language model's uniform guess: that needs the history
SHORT_LOSS_CHANCE = (math.log(10000), 1.2 * math.log(262144))
BURST_OVERFLOWS = 3  # halvings of the scale within BURST_STEPS steps after start-up
BURST_STEPS = 50
# a NaN whose last finite grad norms (at most this many after an explosion) include an explosion
# followed it: the tree's "the grad norm jumped by 10x or more right before the NaN"
NAN_AFTER_EXPLOSION = 2
MAX_EVIDENCE = 5

Where = tuple[str, int, str]  # file, line number, line text
Locate = Callable[[int], Where | None]
WhereArg = Where | Callable[[], Where | None] | None


class _Robust:
    """Recent level and noise of a series; `thr` is where an outlier starts."""

    def __init__(self, sigmas: float, min_rise: float) -> None:
        self.win: deque[float] = deque(maxlen=WINDOW)
        self.sigmas = sigmas
        self.min_rise = min_rise
        self.thr = math.inf
        self.level = 0.0
        self.stale = 0

    def refresh(self) -> None:
        vals = list(self.win)
        n = len(vals)
        if n < MIN_HISTORY:
            self.thr = math.inf
            return
        h = min(LEVEL, n)
        level = sorted(vals[-h:])[h // 2]
        if n >= 2 * LEVEL:  # follow the local trend: the median lags it by half its span
            before = sorted(vals[-2 * LEVEL:-LEVEL])[LEVEL // 2]
            level += (level - before) / LEVEL * (LEVEL / 2 + 0.5)
        self.level = level
        diffs = sorted(map(abs, map(sub, vals[1:], vals[:-1])))
        sigma = max(diffs[len(diffs) // 2] * 1.0483, 1e-3 * abs(level), 1e-12)
        thr = level + self.sigmas * sigma
        if level > 0:
            thr = max(thr, level * (1.0 + self.min_rise))
        self.thr = thr
        self.stale = 0

    def outlier(self, x: float) -> bool:
        if self.stale >= REFRESH:
            self.refresh()
        if x <= self.thr:
            return False
        self.refresh()
        return x > self.thr

    def add(self, x: float) -> None:
        self.win.append(x)
        self.stale += 1
        if len(self.win) == MIN_HISTORY:
            self.refresh()

    @property
    def near(self) -> float:
        """Back under this = recovered (half-way between the level and the threshold)."""
        return (self.level + self.thr) / 2 if math.isfinite(self.thr) else math.inf


class _Buckets:
    """Bounded summary of a series for trend tests: means of equal-size groups of points."""

    def __init__(self) -> None:
        self.size = 1
        self.rows: list[list[float]] = []  # [first_step, last_step, sum, n]

    def add(self, step: int, value: float) -> None:
        rows = self.rows
        if rows and rows[-1][3] < self.size:
            r = rows[-1]
            r[1], r[2], r[3] = step, r[2] + value, r[3] + 1
            return
        rows.append([step, step, value, 1])
        if len(rows) > BUCKETS:
            merged = []
            for i in range(0, len(rows) - 1, 2):
                a, b = rows[i], rows[i + 1]
                merged.append([a[0], b[1], a[2] + b[2], a[3] + b[3]])
            if len(rows) % 2:
                merged.append(rows[-1])
            self.rows = merged
            self.size *= 2

    def add_many(self, steps: list[int], values: list[float]) -> None:
        """Same as `add` for each pair, a bucket at a time."""
        i, n = 0, len(values)
        while i < n:
            rows = self.rows
            if rows and rows[-1][3] < self.size:
                r = rows[-1]
                k = min(n - i, int(self.size - r[3]))
                r[1], r[2], r[3] = steps[i + k - 1], r[2] + sum(values[i:i + k]), r[3] + k
                i += k
                continue
            self.add(steps[i], values[i])
            i += 1

    def means(self) -> list[tuple[int, int, float]]:
        return [(int(r[0]), int(r[1]), r[2] / r[3]) for r in self.rows if r[3]]


def mann_kendall_z(values: Sequence[float]) -> float:
    """Mann-Kendall trend statistic (no tie correction): > 3 is a clear upward trend."""
    n = len(values)
    if n < 4:
        return 0.0
    s = 0
    for i in range(n - 1):
        vi = values[i]
        for vj in values[i + 1 :]:
            s += (vj > vi) - (vj < vi)
    var = n * (n - 1) * (2 * n + 5) / 18.0
    if s > 0:
        return (s - 1) / math.sqrt(var)
    if s < 0:
        return (s + 1) / math.sqrt(var)
    return 0.0


class SeriesAnalyzer:
    """Feed points in step order; `finish()` closes runs and runs the trend tests."""

    def __init__(self, analysis: LossAnalysis | None = None) -> None:
        self.a = analysis or LossAnalysis()
        self.interval = 1
        self._loss = _Robust(SPIKE_SIGMAS, SPIKE_MIN_RISE)
        self._grad = _Robust(GRAD_SIGMAS, GRAD_MIN_RATIO - 1.0)
        self._open: Spike | None = None
        self._nan: NanRun | None = None
        self._prev_step: int | None = None
        self._finite = 0  # finite losses so far
        self._loss_buckets = _Buckets()
        self._time_buckets = _Buckets()
        self._startup = True
        self._post_max: float | None = None
        self._prev_scale: float | None = None
        self._decreases: deque[int] = deque()
        self._descent: tuple[int, float] | None = None  # (step, scale) where a fall began
        self._overflows_since: int = 0
        self._burst: ScaleEvent | None = None
        self._first_scale: tuple[int, float] | None = None
        self._descent_count = 0
        self._grad_since_explosion: int | None = None  # finite grad norms since the last one
        self.evidence: dict[str, list[Where]] = {}
        self.finished = False

    # ---- configuration -------------------------------------------------------------------
    def set_interval(self, n: int) -> None:
        """Points average `n` iterations (Megatron --log-interval, HF logging_steps)."""
        n = max(1, int(n))
        if n != self.interval:
            self.interval = n
            self.a.log_interval = n
            self._loss.min_rise = SPIKE_MIN_RISE / math.sqrt(n)

    def _ev(self, kind: str, where: WhereArg) -> None:
        where = _resolve(where)
        if where is not None:
            lst = self.evidence.setdefault(kind, [])
            if len(lst) < MAX_EVIDENCE:
                lst.append(where)

    # ---- per point -----------------------------------------------------------------------
    def point(self, step: int, loss: float | None, *, grad: float | None = None,
              scale: float | None = None, time_ms: float | None = None,
              nan_iters: int = 0, skipped: int = 0, vanished: bool = False,
              spikes: bool = True, where: WhereArg = None) -> None:
        """One logged point. `loss` None = no loss on this line (`vanished`: it should have
        had one, so its average was NaN); `nan_iters`/`skipped` are the log's own counters.
        `spikes=False`: a loss that is counted and drawn but not tested for spikes or a slow
        rise (an RL policy loss near zero that changes sign)."""
        a = self.a
        if a.last_step is not None and step <= a.last_step:
            a.replayed_points += 1
            return
        prev = self._prev_step
        self._prev_step = step
        if skipped:
            a.skipped_iterations += skipped
        if scale is not None:
            self.scale(step, scale, skipped=skipped, where=where)
        if time_ms is not None and math.isfinite(time_ms) and time_ms > 0:
            self._time_buckets.add(step, time_ms)
        bad = ""
        iters = 0
        exact = True
        if loss is not None and not math.isfinite(loss):
            bad, a.nan_points = "loss", a.nan_points + 1
            iters, exact = (nan_iters or self.interval), bool(nan_iters) or self.interval == 1
        elif vanished:
            bad, a.nan_points = "vanished loss", a.nan_points + 1
            iters, exact = (nan_iters or self.interval), bool(nan_iters) or self.interval == 1
        elif nan_iters:
            bad, iters = "counter", nan_iters
        if grad is not None:
            if not math.isfinite(grad):
                a.grad_norm_nan_count += 1
                if not bad:
                    bad, iters, exact = "grad norm", (nan_iters or 1), bool(nan_iters) or (
                        self.interval == 1)
            else:
                a.grad_finite += 1
                self._grad_point(step, grad, where)
        if bad:
            if a.finite_before_nan is None:
                a.finite_before_nan = self._finite
                since = self._grad_since_explosion
                a.grad_exploded_before_nan = since is not None and since <= NAN_AFTER_EXPLOSION
            self._nan_point(step, bad, iters, exact, where)
            if loss is not None and loss == 0.0 and grad is not None and not math.isfinite(grad):
                a.last_zero_loss_with_nan_grad = True
        elif self._nan is not None:
            self._close_nan()
        if bad and loss is None:
            self._keep_raw(step, math.nan)  # no loss on the line: still a mark on the curve
        if loss is not None:
            self._count(step, loss)
            if math.isfinite(loss):
                self._finite += 1
                if spikes:
                    self._loss_point(step, prev, loss, where)
                else:
                    self._keep(step, loss, force=False)
                if not bad:
                    a.last_zero_loss_with_nan_grad = False
            else:
                self._keep(step, loss, force=True)

    def grad_sample(self, values: list[float]) -> None:
        """Recent grad norms of a block whose maximum was below the threshold: the level
        follows them without every value of the block being converted."""
        det = self._grad
        self.a.grad_finite += len(values)
        det.win.extend(values)
        det.refresh()

    def step_time(self, step: int, time_ms: float) -> None:
        """A sampled time per iteration (the block reader reads a few per block)."""
        if math.isfinite(time_ms) and time_ms > 0:
            self._time_buckets.add(step, time_ms)

    def _count(self, step: int, loss: float) -> None:
        a = self.a
        a.count += 1
        if a.first_step is None:
            a.first_step = step
        a.last_step, a.last_loss = step, loss

    def _loss_point(self, step: int, prev: int | None, x: float, where: WhereArg) -> None:
        det = self._loss
        spike = self._open
        late = self.a.first_step is not None and self.a.first_step > SHORT_LOSS_LATE
        at_chance = SHORT_LOSS_CHANCE[0] <= x <= SHORT_LOSS_CHANCE[1]
        if _short_jump(det.win, x, SHORT_LOSS_RATIO, SHORT_LOSS_RISE,
                       1 if at_chance else SHORT_LOSS_AFTER_LATE if late else SHORT_LOSS_AFTER):
            if spike is None and len(self.a.spikes) < MAX_EVENTS:
                self._keep(step, x, force=True)
                first_bad = (prev + 1) if prev is not None and prev < step else step
                self._open = Spike(step, step, x, max(det.win), first_bad=first_bad,
                                   last_bad=step, line=_fl(where)[0], file=_fl(where)[1])
                self.a.spikes.append(self._open)
                self._ev("loss-spike", where)
            return  # spikes never pollute the level
        if len(det.win) >= MIN_HISTORY and det.outlier(x):
            self._keep(step, x, force=True)
            if spike is None:
                if len(self.a.spikes) < MAX_EVENTS:
                    first_bad = (prev + 1) if prev is not None and prev < step else step
                    self._open = Spike(step, step, x, det.level, first_bad=first_bad,
                                       last_bad=step,
                                       line=_fl(where)[0], file=_fl(where)[1])
                    self.a.spikes.append(self._open)
                    self._ev("loss-spike", where)
            else:
                spike.last_bad = step
                if x > spike.peak_value:
                    spike.peak, spike.peak_value = step, x
            return  # spikes never pollute the level
        self._keep(step, x, force=False)
        if spike is not None:
            if x <= det.near:
                spike.end = step
                self._open = None
            else:
                spike.last_bad = step
                return
        det.add(x)
        self._loss_buckets.add(step, x)

    def _grad_point(self, step: int, g: float, where: WhereArg) -> None:
        det = self._grad
        short = _short_jump(det.win, g, SHORT_GRAD_RATIO, SHORT_GRAD_MIN) or _short_jump(
            det.win, g, SHORT_GRAD_RATIO_AFTER, SHORT_GRAD_MIN, SHORT_GRAD_AFTER)
        if short or (len(det.win) >= MIN_HISTORY and det.outlier(g)):
            self._grad_since_explosion = 0
            if len(self.a.grad_explosions) < MAX_EVENTS:
                self.a.grad_explosions.append(GradExplosion(
                    step, g, max(det.win) if short else det.level, *_fl(where)))
                self._ev("grad-norm-explosion", where)
            return
        if self._grad_since_explosion is not None:
            self._grad_since_explosion += 1
        det.add(g)

    def _nan_point(self, step: int, what: str, iters: int, exact: bool,
                   where: WhereArg) -> None:
        a = self.a
        a.nan_iterations += iters
        run = self._nan
        if run is None:
            self._nan = NanRun(step, step, 1, iters, exact, what,
                               *_fl(where))
            if len(a.nan_runs) < MAX_EVENTS:
                a.nan_runs.append(self._nan)
            self._ev("loss-nan", where)
        else:
            run.end, run.points, run.iterations = step, run.points + 1, run.iterations + iters
            run.exact = run.exact and exact

    def _close_nan(self) -> None:
        self._nan = None

    # ---- loss scale ----------------------------------------------------------------------
    def scale(self, step: int | None, scale: float, *, skipped: int = 0, overflow: bool = False,
              before: float | None = None, where: WhereArg = None) -> None:
        """A loss-scale observation: a Megatron column value, or an fp16 overflow line's new
        scale (`overflow=True`, DeepSpeed / apex)."""
        a = self.a
        if not math.isfinite(scale):
            return
        step = step if step is not None else (self._prev_step or 0)
        if overflow:
            a.overflow_events += 1
        a.loss_scale_last = scale
        a.loss_scale_max = scale if a.loss_scale_max is None else max(a.loss_scale_max, scale)
        a.loss_scale_min = scale if a.loss_scale_min is None else min(a.loss_scale_min, scale)
        if self._prev_scale is None and before is not None and math.isfinite(before):
            self._prev_scale = before  # DeepSpeed names the scale it tried: the first value
            a.loss_scale_max = max(a.loss_scale_max or before, before)
        prev = self._prev_scale
        self._prev_scale = scale
        if self._startup:
            # The start-up search halves the scale until gradients fit; it ends when the scale
            # holds or grows, or once training makes progress (a finite loss was logged). No
            # start-up search goes down to single digits: that is a collapse whenever it comes.
            if self._first_scale is None:
                self._first_scale = (step, prev if prev is not None else scale)
            if scale <= 16.0 and prev is not None and scale < prev:
                self._startup = False
                self._post_max = self._first_scale[1]
                self._descent = self._first_scale
                if prev > 0 and self._first_scale[1] > prev:  # the halvings already seen
                    self._descent_count = round(math.log2(self._first_scale[1] / prev))
            else:
                if (prev is not None and scale >= prev and not overflow) or self.a.count > 0:
                    self._startup = False
                    self._post_max = scale
                return
        if self._post_max is None or scale > self._post_max:
            self._post_max = scale
        fell = prev is not None and scale < prev
        if not fell:
            self._descent = None
            self._descent_count = 0
            return
        halvings = max(1, skipped, round(math.log2(prev / scale)) if prev and scale > 0 else 1)
        if self._descent is None:
            self._descent = (step, prev if prev is not None else scale)
        self._descent_count += halvings
        for _ in range(min(halvings, 64)):
            self._decreases.append(step)
        while self._decreases and self._decreases[0] < step - BURST_STEPS * self.interval:
            self._decreases.popleft()
        assert self._descent is not None
        start, start_scale = self._descent
        hi = self._post_max or start_scale
        # a reduction into single digits with no higher scale in the log: the fall came before
        # the excerpt (no start-up search or healthy run reduces a dynamic scale that far)
        if scale <= 1.0 or (scale <= 16.0 and hi / scale >= 8.0) or (scale < 10.0 and hi <= 16.0):
            last = a.scale_events[-1] if a.scale_events else None
            if last is not None and last.kind == "scale-collapse" and last.end >= start:
                last.end, last.scale_to = step, min(last.scale_to, scale)
                last.overflows = self._descent_count
            elif len(a.scale_events) < MAX_EVENTS:
                burst = self._burst
                if burst is not None and burst.end >= start:  # the same fall: one event
                    a.scale_events.remove(burst)
                    self._burst = None
                    start, start_scale = min(start, burst.start), max(start_scale,
                                                                       burst.scale_from)
                a.scale_events.append(ScaleEvent("scale-collapse", start, step, start_scale,
                                                 scale, self._descent_count, *_fl(where)))
                self._ev("loss-scale-collapse", where)
            return
        if len(self._decreases) >= BURST_OVERFLOWS:
            burst = self._burst
            if burst is not None and burst.end >= step - BURST_STEPS * self.interval:
                burst.end, burst.scale_to = step, scale
                burst.overflows += halvings
            elif len(a.scale_events) < MAX_EVENTS:
                self._burst = ScaleEvent("overflow-burst", self._decreases[0], step,
                                         start_scale, scale, len(self._decreases),
                                         *_fl(where))
                a.scale_events.append(self._burst)
                self._ev("overflow-burst", where)

    # ---- columns (fast path) -------------------------------------------------------------
    def batch(self, steps: list[int], losses: list[float], grads: list[float] | None = None,
              scales: list[float] | None = None, times: list[float] | None = None,
              skipped: list[int] | None = None, nans: list[int] | None = None,
              locate: Locate | None = None) -> None:
        """Aligned columns of consecutive points (every entry has a loss)."""
        n = len(steps)
        loss_det, grad_det = self._loss, self._grad
        a = self.a
        i = 0
        while i < n:
            j = min(n, i + CHUNK)
            c = losses[i:j]
            s = steps[i:j]
            total = sum(c)
            ok = (self._open is None and self._nan is None and total - total == 0.0
                  and len(loss_det.win) >= MIN_HISTORY and max(c) <= loss_det.thr
                  and a.last_step is not None and s[0] > a.last_step
                  and s[-1] - s[0] == (j - i - 1) * (s[1] - s[0] if j - i > 1 else 1) > 0
                  and not self._startup_pending(scales))
            g = grads[i:j] if grads is not None else None
            if ok and g is not None:
                gt = sum(g)
                ok = gt - gt == 0.0 and len(grad_det.win) >= MIN_HISTORY and max(g) <= grad_det.thr
            if ok and scales is not None:
                sc = scales[i:j]
                ok = min(sc) == max(sc) == self._prev_scale
            if ok and nans is not None:
                ok = not any(nans[i:j])
            if ok and skipped is not None:
                ok = not any(skipped[i:j])
            if ok:
                self._fast(s, c, g, times[i:j] if times is not None else None)
            else:
                for k in range(i, j):
                    self.point(steps[k], losses[k],
                               grad=grads[k] if grads is not None else None,
                               scale=scales[k] if scales is not None else None,
                               time_ms=times[k] if times is not None else None,
                               nan_iters=nans[k] if nans is not None else 0,
                               skipped=skipped[k] if skipped is not None else 0,
                               where=partial(locate, k) if locate is not None else None)
            i = j

    def _startup_pending(self, scales: list[float] | None) -> bool:
        return scales is not None and self._startup

    def _fast(self, s: list[int], c: list[float], g: list[float] | None,
              t: list[float] | None) -> None:
        """A chunk with nothing to report: update the state in bulk."""
        a = self.a
        loss_det = self._loss
        n = len(c)
        base = a.count
        a.count += n
        self._finite += n
        a.last_step, a.last_loss = s[-1], c[-1]
        self._prev_step = s[-1]
        loss_det.win.extend(c)
        loss_det.stale += n
        if loss_det.stale >= REFRESH:
            loss_det.refresh()
        if g is not None:
            a.grad_finite += n
            if self._grad_since_explosion is not None:
                self._grad_since_explosion += n
            self._grad.win.extend(g)
            self._grad.stale += n
            if self._grad.stale >= REFRESH:
                self._grad.refresh()
        k = (-base) % a.stride  # the same points `_keep` takes, even when the stride doubles
        while k < n:
            self._keep_raw(s[k], c[k])
            k += 1
            k += (-(base + k)) % a.stride
        self._loss_buckets.add_many(s, c)
        if t is not None and min(t) > 0:
            self._time_buckets.add_many(s, t)

    # ---- the series kept for drawing -----------------------------------------------------
    def _keep(self, step: int, value: float, *, force: bool) -> None:
        """Bounded series: every `stride`-th point; spikes and NaNs are always kept."""
        if (self.a.count - 1) % self.a.stride and not force:
            return
        self._keep_raw(step, value)

    def _keep_raw(self, step: int, value: float) -> None:
        a = self.a
        if a.points and a.points[-1][0] == step:
            return
        a.points.append((step, value))
        if len(a.points) >= MAX_POINTS:
            pairs = zip(a.points[0::2], a.points[1::2], strict=False)
            a.points = [max(p, key=lambda sv: sv[1] if math.isfinite(sv[1]) else math.inf)
                        for p in pairs]
            a.stride *= 2

    # ---- end of input --------------------------------------------------------------------
    def finish(self) -> None:
        if self.finished:
            return
        self.finished = True
        self._nan = None
        self._forgive_startup_overflow()
        self.a.divergence = self._divergence()
        self.a.step_time = self._step_time()
        for sp in self.a.spikes:
            sp.checkpoint_before = self.a.checkpoint_before(sp.first_bad or sp.start)

    def _forgive_startup_overflow(self) -> None:
        """A NaN grad norm on the first logged point only, with finite grad norms after it and
        never a NaN loss: the step was skipped (an fp16 loss scaler's first overflow, the
        scale still searching down), so it is no NaN event."""
        a = self.a
        runs = a.nan_runs
        if (len(runs) == 1 and runs[0].what == "grad norm" and runs[0].points == 1
                and a.finite_before_nan == 0 and a.nan_points == 0 and a.grad_finite >= 1
                and a.grad_norm_nan_count == 1 and a.count >= 2):
            a.nan_iterations -= runs[0].iterations
            a.nan_runs = []
            a.grad_norm_nan_count = 0
            a.startup_grad_overflow = True
            self.evidence.pop("loss-nan", None)

    def _divergence(self) -> Trend | None:
        rows = self._loss_buckets.means()
        n = len(rows)
        if n < 16:
            return None
        skip = max(1, n // 20)  # the first 5 %: warm-up
        body = rows[skip:]
        lo = min(range(len(body)), key=lambda k: body[k][2])
        window = body[lo:]
        if len(window) < max(8, n // 20):
            return None
        vals = [m for _a, _b, m in window]
        start_level = vals[0]
        tail = sorted(vals[-5:])[len(vals[-5:]) // 2]
        rise = tail - start_level
        if start_level <= 0 or rise < DIVERGENCE_MIN_RISE * abs(start_level):
            return None
        jumps = max(map(sub, vals[1:], vals[:-1]))
        if jumps > 0.5 * rise:
            return None  # one jump, not a slow climb: the spike detector's business
        z = mann_kendall_z(vals)
        if z < TREND_Z:
            return None
        return Trend("divergence", window[0][0], window[-1][1], start_level, tail, z)

    def _step_time(self) -> Trend | None:
        rows = self._time_buckets.means()
        n = len(rows)
        if n < 16:
            return None
        body = rows[max(1, n // 20):]
        k = max(3, len(body) // 5)
        before = sorted(m for _a, _b, m in body[:k])[k // 2]
        after = sorted(m for _a, _b, m in body[-k:])[k // 2]
        if before <= 0 or after / before < STEP_TIME_MIN_RATIO:
            return None
        vals = [m for _a, _b, m in body]
        z = mann_kendall_z(vals)
        if z < TREND_Z:
            return None
        start = next((r[0] for r in body if r[2] >= before * 1.15), body[0][0])
        return Trend("step-time", start, body[-1][1], before, after, z)


def _short_jump(win: deque[float], x: float, ratio: float, rise: float,
                least: int = 1) -> bool:
    """Too few points for a robust level, but `x` is far above every one of the (at least
    `least`) points before it."""
    if len(win) < least or len(win) >= MIN_HISTORY:
        return False
    top = max(win)
    return top > 0 and x >= ratio * top and x - top >= rise


def _resolve(where: WhereArg) -> Where | None:
    """A point's file:line is looked up only when an event needs it."""
    return where() if callable(where) else where


def _fl(where: WhereArg) -> tuple[int | None, str | None]:
    w = _resolve(where)
    return (w[1], w[0]) if w else (None, None)
