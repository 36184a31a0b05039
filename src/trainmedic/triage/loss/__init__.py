"""The loss curve, from every place it is written: readers, detectors and the way back.

- `lines`: text logs line by line (Megatron family, HF Trainer, DeepSpeed, Lightning/NeMo,
  torchtitan, verl, DLLogger, plain);
- `megatron`: the fast block reader for logs made of Megatron iteration lines;
- `metrics`, `tfevents`: trainer_state.json, CSV, JSONL, W&B exports, TensorBoard events;
- `detect`: spikes, NaN runs, grad-norm explosions, fp16 loss scale, slow divergence, step time;
- `recovery`: the rollback in the framework that wrote the log;
- `model`: the typed result (`LossAnalysis`, `to_dict`/`from_dict`).
`LossTracker` ties them together for the scanner: several sources feed one series.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import BinaryIO

from trainmedic.triage.loss.detect import MAX_POINTS, SeriesAnalyzer
from trainmedic.triage.loss.lines import LineReader
from trainmedic.triage.loss.model import (
    GradExplosion,
    LossAnalysis,
    NanRun,
    Recovery,
    ScaleEvent,
    Spike,
    Trend,
)

METRIC_FORMATS = {"tfevents": "tensorboard", "trainer-state": "hf-trainer-state",
                  "jsonl": "jsonl", "csv": "csv"}


class LossTracker:
    """Streaming consumer of every loss source of one triage; `finish()` gives the analysis.

    Text logs (several per-rank files of one job) feed one series; each metrics file is a run of
    its own (a folder of exports usually holds different runs). `analysis` is the primary run
    after `finish()`; `runs` holds every run that has points.
    """

    def __init__(self) -> None:
        self.analysis = LossAnalysis()
        self.series = SeriesAnalyzer(self.analysis)
        self.lines = LineReader(self.series)
        self.block_lines = 0
        self._metric_runs: list[SeriesAnalyzer] = []
        self.runs: list[tuple[LossAnalysis, dict]] = []

    @property
    def evidence(self) -> dict[str, list[tuple[str, int, str]]]:
        return self.series.evidence

    def begin(self, name: str) -> None:
        """A new source starts (per-source counters such as HF's entry index reset)."""
        self.lines.begin(name)

    def feed(self, text: str, lineno: int = 0) -> bool:
        """One clean text line; True when it was about training progress."""
        return self.lines.feed(text, lineno)

    def read_megatron(self, stream: BinaryIO, name: str,
                      other: Callable[[int, str], None] | None = None,
                      path: str | None = None) -> None:
        """A whole file of Megatron-style lines through the fast block reader; `other` gets
        the iteration lines that carry something else too (output glued on the line)."""
        from trainmedic.triage.loss.megatron import BlockReader

        reader = BlockReader(self.lines, name, other)
        reader.read(stream, path)
        self.block_lines += reader.lines_read

    def read_metrics(self, kind: str, stream: BinaryIO, name: str) -> int:
        from trainmedic.triage.loss import metrics

        series = SeriesAnalyzer(LossAnalysis())
        n = metrics.read(kind, stream, series, name)
        if n:
            series.a.source = METRIC_FORMATS.get(kind, kind)
            series.a.framework = "hf-trainer" if kind == "trainer-state" else "unknown"
            series.a.notes.append(f"read from {name}")
            self._metric_runs.append(series)
        return n

    def finish(self) -> LossAnalysis:
        """Close every run, name formats and frameworks, plan recoveries, pick the primary."""
        from trainmedic.triage.loss.recovery import for_spike, plan

        if self.runs:
            return self.analysis
        self.lines.flush()
        self.series.finish()
        text = self.series.a
        if self.lines.formats:
            text.source = max(self.lines.formats, key=lambda k: self.lines.formats[k])
            text.framework = self.lines.framework()
        candidates = [self.series] if text.count or text.nan_runs or text.scale_events else []
        for series in self._metric_runs:
            series.finish()
            if series.a.framework == "unknown" and "megatron" in self.lines.formats:
                series.a.framework = self.lines.framework()
            candidates.append(series)
        for series in candidates:
            series.a.recoveries = plan(series.a)
            series.a.spike_recoveries = [for_spike(series.a, sp) for sp in series.a.spikes]
            self.runs.append((series.a, series.evidence))
        if candidates:
            primary = next((s for s in candidates if s.a.events()), None) or max(
                candidates, key=lambda s: s.a.count)
            self.analysis, self.series = primary.a, primary
        return self.analysis


__all__ = ["MAX_POINTS", "GradExplosion", "LossAnalysis", "LossTracker", "NanRun", "Recovery",
           "ScaleEvent", "Spike", "Trend"]
