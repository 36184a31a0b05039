"""The loss curve of a triaged log: a text sparkline with each spike marked `^` beneath it.

Drawn with `trainmedic.triage.sparkline` (the CLI's own), at the widget's width, so the marks
line up with the bars: a spike's column is the bucket its first point falls in. Under the curve,
each spike's iteration range and the concrete way back (`LossAnalysis.recovery`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.widget import Widget

if TYPE_CHECKING:
    from trainmedic.triage.loss_series import LossAnalysis, Spike

LABEL = "loss "


def spike_columns(steps: list[int], spikes: list[Spike], width: int) -> list[int]:
    """Columns (0-based, in a sparkline of `width` buckets) where each spike starts."""
    if not steps:
        return []
    bucket = max(1, math.ceil(len(steps) / width))
    cols = []
    for spike in spikes:
        index = next((i for i, s in enumerate(steps) if s >= spike.start), len(steps) - 1)
        cols.append(index // bucket)
    return cols


def marker_line(columns: list[int], width: int) -> str:
    line = [" "] * width
    for c in columns:
        if 0 <= c < width:
            line[c] = "^"
    return "".join(line).rstrip()


def render_loss(loss: LossAnalysis, width: int) -> Text:
    """The whole block: heading, curve, marks, one line per spike (at most 3) with recovery."""
    from trainmedic.triage.sparkline import sparkline

    points = list(loss.points)
    steps = [s for s, _v in points]
    width = max(10, width - len(LABEL))
    curve = sparkline([v for _s, v in points], width=width)
    spikes = list(loss.spikes)
    text = Text()
    text.append(f"Loss curve ({loss.source or '?'}, {loss.count} points, iterations "
                f"{loss.first_step}..{loss.last_step})", style="bold")
    if spikes:
        text.append(f"  {len(spikes)} spike(s) marked ^", style="bold red")
    text.append("\n")
    text.append(LABEL, style="dim")
    text.append(curve)
    marks = marker_line(spike_columns(steps, spikes, len(curve)), len(curve))
    if marks:
        text.append("\n" + " " * len(LABEL))
        text.append(marks, style="bold red")
    for spike in spikes[:3]:
        end = spike.end if spike.end is not None else "? (never recovered)"
        text.append(f"\n^ iterations {spike.start}..{end}: peak {spike.peak_value:.3g} at "
                    f"{spike.peak} (baseline {spike.baseline:.3g})", style="bold")
        text.append(f"\n  {loss.recovery(spike)}")
    if len(spikes) > 3:
        text.append(f"\n  … {len(spikes) - 3} more spike(s): `trainmedic triage --json`",
                    style="dim")
    if loss.nan_steps:
        text.append(f"\n! NaN/inf loss at iteration(s) {', '.join(map(str, loss.nan_steps[:5]))}",
                    style="bold red")
    return text


class LossCurve(Widget):
    """Shows `render_loss` at its own width; hidden until a log with a loss series is read."""

    DEFAULT_CSS = """
    LossCurve {
        height: auto;
        padding: 0 1;
    }
    """

    def __init__(self, **kwargs: Any) -> None:  # Any: Widget's own keyword arguments
        super().__init__(**kwargs)
        self.loss: LossAnalysis | None = None

    def show(self, loss: LossAnalysis | None) -> None:
        self.loss = loss if loss is not None and loss.points else None
        self.display = self.loss is not None
        self.refresh(layout=True)

    def on_resize(self) -> None:
        self.refresh(layout=True)  # the curve is drawn to the width: redraw at the new one

    def render(self) -> Text:
        if self.loss is None:
            return Text("")
        return render_loss(self.loss, self.content_size.width or 60)
