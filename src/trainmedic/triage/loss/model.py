"""The loss analysis as typed records: what the CLI prints, `--json` carries and a screen draws.

Every event carries global training steps (never a log-line index). `LossAnalysis.to_dict()` is
the `--json` shape; `from_dict()` reads it back tolerantly (missing keys take their defaults).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any


def json_float(v: float | None) -> float | str | None:
    """JSON has no NaN/inf: those travel as the strings "nan", "inf", "-inf"."""
    if v is None or math.isfinite(v):
        return v
    return str(v)


def _float(v: Any) -> float | None:
    if v is None:
        return None
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def _int(v: Any) -> int | None:
    try:
        return None if v is None else int(v)
    except (TypeError, ValueError):
        return None


def _build(cls, data: Any):
    """Tolerant constructor: unknown keys are ignored, bad values become defaults."""
    if not isinstance(data, dict):
        return None
    kwargs = {}
    for f in fields(cls):
        if f.name in data:
            kwargs[f.name] = data[f.name]
    try:
        return cls(**kwargs)
    except TypeError:
        return None


@dataclass
class Spike:
    """Consecutive points far above the recent level. Steps are global training steps."""

    start: int  # first logged step above the threshold
    peak: int
    peak_value: float
    baseline: float
    end: int | None = None  # first logged step back near the level; None = never recovered
    first_bad: int | None = None  # first iteration the start line covers (log-interval > 1)
    last_bad: int | None = None  # last logged step still above the level
    checkpoint_before: int | None = None
    line: int | None = None
    file: str | None = None

    @property
    def recovered(self) -> bool:
        return self.end is not None

    def to_dict(self) -> dict:
        return {"kind": "spike", "start": self.start, "step": self.start, "peak": self.peak,
                "peak_value": json_float(self.peak_value), "baseline": self.baseline,
                "end": self.end, "recovered": self.end is not None,
                "first_bad": self.first_bad, "last_bad": self.last_bad,
                "checkpoint_before": self.checkpoint_before, "file": self.file,
                "line": self.line}

    @classmethod
    def from_dict(cls, data: Any) -> Spike | None:
        if not isinstance(data, dict) or _int(data.get("start")) is None:
            return None
        return cls(start=int(data["start"]), peak=_int(data.get("peak")) or int(data["start"]),
                   peak_value=_float(data.get("peak_value")) or 0.0,
                   baseline=_float(data.get("baseline")) or 0.0, end=_int(data.get("end")),
                   first_bad=_int(data.get("first_bad")), last_bad=_int(data.get("last_bad")),
                   checkpoint_before=_int(data.get("checkpoint_before")),
                   line=_int(data.get("line")), file=data.get("file"))


@dataclass
class NanRun:
    """Consecutive logged points whose loss or grad norm was NaN/inf (or Megatron counted NaNs).

    `iterations` is exact where the log counts them (Megatron's `number of nan iterations`);
    elsewhere it is the number of logged points.
    """

    start: int
    end: int
    points: int = 1
    iterations: int = 1
    exact: bool = True
    what: str = "loss"  # loss | grad norm | counter
    line: int | None = None
    file: str | None = None

    def to_dict(self) -> dict:
        return {"kind": "nan", "step": self.start, "start": self.start, "end": self.end,
                "points": self.points, "iterations": self.iterations, "exact": self.exact,
                "what": self.what, "file": self.file, "line": self.line}

    @classmethod
    def from_dict(cls, data: Any) -> NanRun | None:
        return _build(cls, {k: v for k, v in (data or {}).items() if k not in ("kind", "step")}
                      if isinstance(data, dict) else None)


@dataclass
class GradExplosion:
    step: int
    value: float
    baseline: float
    line: int | None = None
    file: str | None = None

    def to_dict(self) -> dict:
        return {"kind": "grad-explosion", "step": self.step, "grad_norm": self.value,
                "baseline": self.baseline, "file": self.file, "line": self.line}

    @classmethod
    def from_dict(cls, data: Any) -> GradExplosion | None:
        if not isinstance(data, dict) or _int(data.get("step")) is None:
            return None
        return cls(int(data["step"]), _float(data.get("grad_norm")) or 0.0,
                   _float(data.get("baseline")) or 0.0, _int(data.get("line")), data.get("file"))


@dataclass
class ScaleEvent:
    """fp16 loss-scale trouble after the start-up search: a collapse or a mid-run overflow burst."""

    kind: str  # "scale-collapse" | "overflow-burst"
    start: int
    end: int
    scale_from: float
    scale_to: float
    overflows: int = 0
    line: int | None = None
    file: str | None = None

    def to_dict(self) -> dict:
        return {"kind": self.kind, "step": self.start, "start": self.start, "end": self.end,
                "scale_from": self.scale_from, "scale_to": self.scale_to,
                "overflows": self.overflows, "file": self.file, "line": self.line}

    @classmethod
    def from_dict(cls, data: Any) -> ScaleEvent | None:
        return _build(cls, {k: v for k, v in data.items() if k != "step"}
                      if isinstance(data, dict) else None)


@dataclass
class Trend:
    """A sustained rise over a window (slow divergence of the loss, or growing step time)."""

    kind: str  # "divergence" | "step-time"
    start: int
    end: int
    before: float
    after: float
    z: float  # Mann-Kendall statistic of the window
    line: int | None = None
    file: str | None = None

    @property
    def ratio(self) -> float:
        return self.after / self.before if self.before else math.inf

    def to_dict(self) -> dict:
        return {"kind": self.kind, "step": self.start, "start": self.start, "end": self.end,
                "before": self.before, "after": self.after, "ratio": json_float(self.ratio),
                "z": round(self.z, 2), "file": self.file, "line": self.line}

    @classmethod
    def from_dict(cls, data: Any) -> Trend | None:
        return _build(cls, {k: v for k, v in data.items() if k not in ("step", "ratio")}
                      if isinstance(data, dict) else None)


@dataclass
class Recovery:
    """How to get back: for the framework that wrote the log, never another framework's flags."""

    framework: str
    action: str  # "skip-data" | "fix-scaler" | "resume"
    text: str  # one paragraph for people
    command: str | None = None  # flags / call to paste, for that framework
    checkpoint: int | None = None  # a step that the log says was saved
    checkpoint_path: str | None = None
    skip: list[tuple[int, int]] = field(default_factory=list)  # inclusive step ranges
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"framework": self.framework, "action": self.action, "text": self.text,
                "command": self.command, "checkpoint": self.checkpoint,
                "checkpoint_path": self.checkpoint_path,
                "skip": [[a, b] for a, b in self.skip], "notes": list(self.notes)}

    @classmethod
    def from_dict(cls, data: Any) -> Recovery | None:
        if not isinstance(data, dict):
            return None
        skip = [(int(a), int(b)) for a, b in data.get("skip") or []
                if _int(a) is not None and _int(b) is not None]
        return cls(framework=str(data.get("framework", "unknown")),
                   action=str(data.get("action", "resume")), text=str(data.get("text", "")),
                   command=data.get("command"), checkpoint=_int(data.get("checkpoint")),
                   checkpoint_path=data.get("checkpoint_path"), skip=skip,
                   notes=[str(n) for n in data.get("notes") or []])


@dataclass
class LossAnalysis:
    """Everything the report, `--json` and a curve need about the loss series (bounded size)."""

    points: list[tuple[int, float]] = field(default_factory=list)  # downsampled (step, loss)
    stride: int = 1
    count: int = 0
    first_step: int | None = None
    last_step: int | None = None
    last_loss: float | None = None
    source: str | None = None  # the log format read: megatron, hf-trainer, tensorboard, ...
    framework: str | None = None  # megatron-lm, megatron-deepspeed, hf-trainer, lightning, ...
    log_interval: int = 1  # iterations averaged by one logged point (Megatron --log-interval)
    spikes: list[Spike] = field(default_factory=list)
    nan_runs: list[NanRun] = field(default_factory=list)
    nan_iterations: int = 0  # exact where the log counts them
    nan_points: int = 0  # logged points with a NaN/inf loss (or a vanished Megatron loss)
    grad_norm_nan_count: int = 0
    grad_explosions: list[GradExplosion] = field(default_factory=list)
    loss_scale_max: float | None = None
    loss_scale_min: float | None = None
    loss_scale_last: float | None = None
    scale_events: list[ScaleEvent] = field(default_factory=list)
    skipped_iterations: int = 0
    overflow_events: int = 0
    divergence: Trend | None = None
    step_time: Trend | None = None
    save_interval: int | None = None
    saves: list[int] = field(default_factory=list)
    save_paths: dict[int, str] = field(default_factory=dict)
    replayed_points: int = 0  # points whose step was not after the last one (resumes, ranks)
    recoveries: list[Recovery] = field(default_factory=list)
    # the way back for each spike, in the order of `spikes` (filled with `recoveries`)
    spike_recoveries: list[Recovery] = field(default_factory=list)
    last_zero_loss_with_nan_grad: bool = False
    # the latest progress lines in a row that print the learning rate (grad norm) as exactly 0:
    # a run that cannot learn; internal to the lr-zero analysis, not part of the report
    lr_zero_tail: int = 0
    grad_zero_tail: int = 0
    lr_zero_run: int = 0  # the longest run anywhere printed as an exact zero ("0", "0.0")
    # finite grad-norm readings, and finite losses logged before the first NaN: whether the log
    # can say what the grad norm did before a NaN (internal to the loss-nan outcome, not reported)
    grad_finite: int = 0
    finite_before_nan: int | None = None
    # a grad-norm explosion among the last finite grad norms before the first NaN (internal to
    # the loss-nan outcome, not reported)
    grad_exploded_before_nan: bool = False
    # the only NaN was the grad norm of the first logged point, finite after it and the loss
    # never NaN: an fp16 scaler's first overflow (that step was skipped), not a NaN event
    startup_grad_overflow: bool = False
    first_epoch: float | None = None  # the epoch the first HF Trainer dict names (mid-run excerpts)
    notes: list[str] = field(default_factory=list)

    # -- views the report and screens use -------------------------------------------------
    @property
    def nan_steps(self) -> list[int]:
        """First steps of the NaN runs (at most 20): what a curve marks with `!`."""
        return [r.start for r in self.nan_runs[:20]]

    @property
    def nan_count(self) -> int:
        return self.nan_points

    @property
    def loss_scale_collapsed(self) -> bool:
        return any(e.kind == "scale-collapse" for e in self.scale_events)

    @property
    def missing_loss_steps(self) -> int:
        return sum(r.points for r in self.nan_runs if r.what == "vanished loss")

    def checkpoint_before(self, step: int) -> int | None:
        """The last checkpoint the log says was saved before `step` (never a guess)."""
        saved = [s for s in self.saves if s < step]
        return max(saved) if saved else None

    def recovery(self, spike: Spike | None = None) -> str:
        """One line: the way back for a spike (the first recovery if none is given)."""
        rec = self.recoveries[0] if self.recoveries else None
        if spike is not None:
            index = next((i for i, s in enumerate(self.spikes) if s is spike), None)
            if index is not None and index < len(self.spike_recoveries):
                rec = self.spike_recoveries[index]
        if rec is None:
            return ""
        return rec.text + (f" {rec.command}" if rec.command and rec.command not in rec.text
                           else "")

    def events(self) -> list[dict]:
        """Every event with its global step, in step order (what `--json` and marks carry)."""
        out = [s.to_dict() for s in self.spikes] + [r.to_dict() for r in self.nan_runs]
        out += [g.to_dict() for g in self.grad_explosions]
        out += [e.to_dict() for e in self.scale_events]
        out += [t.to_dict() for t in (self.divergence, self.step_time) if t is not None]
        out.sort(key=lambda e: (e["step"], e["kind"]))
        return out

    def marks(self) -> list[dict]:
        """What a curve should draw: event marks, windows and the rollback checkpoint."""
        marks: list[dict] = []
        for s in self.spikes:
            marks.append({"kind": "spike", "step": s.start, "to": s.end or s.last_bad})
        for r in self.nan_runs:
            marks.append({"kind": "nan", "step": r.start, "to": r.end})
        for g in self.grad_explosions:
            marks.append({"kind": "grad-explosion", "step": g.step, "to": None})
        for e in self.scale_events:
            marks.append({"kind": e.kind, "step": e.start, "to": e.end})
        for t in (self.divergence, self.step_time):
            if t is not None:
                marks.append({"kind": t.kind, "step": t.start, "to": t.end})
        for rec in self.recoveries[:1]:
            if rec.checkpoint is not None:
                marks.append({"kind": "rollback", "step": rec.checkpoint, "to": None})
        return sorted(marks, key=lambda m: m["step"])

    def to_dict(self) -> dict:
        return {
            "format": self.source, "framework": self.framework,
            "log_interval": self.log_interval, "count": self.count,
            "first_step": self.first_step, "last_step": self.last_step,
            "last_loss": json_float(self.last_loss), "stride": self.stride,
            "points": [[s, json_float(v)] for s, v in self.points],
            "events": self.events(), "marks": self.marks(),
            "spikes": [dict(sp.to_dict(), recovery=self.recovery(sp)) for sp in self.spikes],
            "nan_runs": [r.to_dict() for r in self.nan_runs],
            "nan_iterations": self.nan_iterations, "nan_points": self.nan_points,
            "nan_steps": self.nan_steps, "nan_count": self.nan_points,
            "grad_norm_nan_count": self.grad_norm_nan_count,
            "grad_explosions": [g.to_dict() for g in self.grad_explosions],
            "loss_scale": {"max": self.loss_scale_max, "min": self.loss_scale_min,
                           "last": self.loss_scale_last, "collapsed": self.loss_scale_collapsed},
            "scale_events": [e.to_dict() for e in self.scale_events],
            "divergence": self.divergence.to_dict() if self.divergence else None,
            "step_time": self.step_time.to_dict() if self.step_time else None,
            "skipped_iterations": self.skipped_iterations,
            "overflow_events": self.overflow_events, "save_interval": self.save_interval,
            "saves": self.saves, "save_paths": self._referenced_paths(),
            "replayed_points": self.replayed_points,
            "recoveries": [r.to_dict() for r in self.recoveries],
            "spike_recoveries": [r.to_dict() for r in self.spike_recoveries],
            "notes": list(self.notes),
        }

    def _referenced_paths(self) -> dict[str, str]:
        """Paths of the checkpoints a recovery names (not every save: they repeat)."""
        steps = {s.checkpoint_before for s in self.spikes}
        steps |= {r.checkpoint for r in self.recoveries}
        steps |= {self.checkpoint_before(s.first_bad or s.start) for s in self.spikes}
        return {str(k): self.save_paths[k] for k in sorted(x for x in steps if x is not None)
                if k in self.save_paths}

    @classmethod
    def from_dict(cls, data: Any) -> LossAnalysis:
        """Tolerant reader of `to_dict()` output (saved reports, older versions)."""
        a = cls()
        if not isinstance(data, dict):
            return a
        pts = []
        for p in data.get("points") or []:
            if isinstance(p, list | tuple) and len(p) == 2 and _int(p[0]) is not None:
                v = _float(p[1])
                pts.append((int(p[0]), v if v is not None else math.nan))
        a.points = pts
        a.stride = _int(data.get("stride")) or 1
        a.count = _int(data.get("count")) or 0
        a.first_step, a.last_step = _int(data.get("first_step")), _int(data.get("last_step"))
        a.last_loss = _float(data.get("last_loss"))
        a.source, a.framework = data.get("format"), data.get("framework")
        a.log_interval = _int(data.get("log_interval")) or 1
        a.spikes = [s for s in map(Spike.from_dict, data.get("spikes") or []) if s]
        a.nan_runs = [r for r in map(NanRun.from_dict, data.get("nan_runs") or []) if r]
        a.nan_iterations = _int(data.get("nan_iterations")) or 0
        a.nan_points = _int(data.get("nan_points", data.get("nan_count"))) or 0
        a.grad_norm_nan_count = _int(data.get("grad_norm_nan_count")) or 0
        a.grad_explosions = [g for g in map(GradExplosion.from_dict,
                                            data.get("grad_explosions") or []) if g]
        raw_scale = data.get("loss_scale")
        scale: dict = raw_scale if isinstance(raw_scale, dict) else {}
        a.loss_scale_max, a.loss_scale_min = _float(scale.get("max")), _float(scale.get("min"))
        a.loss_scale_last = _float(scale.get("last"))
        a.scale_events = [e for e in map(ScaleEvent.from_dict, data.get("scale_events") or [])
                          if e]
        a.divergence = Trend.from_dict(data.get("divergence"))
        a.step_time = Trend.from_dict(data.get("step_time"))
        a.skipped_iterations = _int(data.get("skipped_iterations")) or 0
        a.overflow_events = _int(data.get("overflow_events")) or 0
        a.save_interval = _int(data.get("save_interval"))
        a.saves = [s for s in (_int(x) for x in data.get("saves") or []) if s is not None]
        raw_paths = data.get("save_paths")
        paths: dict = raw_paths if isinstance(raw_paths, dict) else {}
        a.save_paths = {k: str(v) for k, v in ((_int(k), v) for k, v in paths.items())
                        if k is not None}
        a.replayed_points = _int(data.get("replayed_points")) or 0
        a.recoveries = [r for r in map(Recovery.from_dict, data.get("recoveries") or []) if r]
        a.spike_recoveries = [
            r for r in map(Recovery.from_dict, data.get("spike_recoveries") or []) if r]
        a.notes = [str(n) for n in data.get("notes") or []]
        return a
