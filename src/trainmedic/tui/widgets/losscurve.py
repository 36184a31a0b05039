"""The loss curve of a triaged log: a text sparkline with its events marked on the line below.

Drawn with `trainmedic.triage.sparkline` (the CLI's own), at the widget's width, so the marks
line up with the bars: an event's column is the bucket its first point falls in, a window
(a spike until it came back, a NaN run, a divergence) covers its columns. What is marked comes
from `LossAnalysis.marks()`; under the curve each kind says what it was and the concrete way back.

    ^ spike   ! NaN/inf   * gradient-norm explosion   s fp16 scale trouble   ~ divergence
    R the checkpoint to roll back to
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.widget import Widget

if TYPE_CHECKING:
    from trainmedic.triage.loss_series import LossAnalysis, Spike

LABEL = "loss "
# mark kind -> (character, style); earlier kinds win a column that two would share
MARKS = {
    "rollback": ("R", "bold green"), "nan": ("!", "bold red"), "spike": ("^", "bold red"),
    "grad-explosion": ("*", "bold yellow"), "scale-collapse": ("s", "yellow"),
    "overflow-burst": ("s", "yellow"), "divergence": ("~", "bold magenta"),
    "step-time": ("t", "dim"),
}
WINDOWS = {"spike", "nan", "divergence"}  # kinds drawn over every column they cover


def column_of(steps: list[int], step: int, width: int) -> int:
    """The sparkline column (0-based, `width` buckets) of the first point at or after `step`."""
    bucket = max(1, math.ceil(len(steps) / width))
    index = next((i for i, s in enumerate(steps) if s >= step), len(steps) - 1)
    return index // bucket


def spike_columns(steps: list[int], spikes: list[Spike], width: int) -> list[int]:
    """Columns (0-based, in a sparkline of `width` buckets) where each spike starts."""
    if not steps:
        return []
    return [column_of(steps, spike.start, width) for spike in spikes]


def marker_line(columns: list[int], width: int) -> str:
    line = [" "] * width
    for c in columns:
        if 0 <= c < width:
            line[c] = "^"
    return "".join(line).rstrip()


def mark_line(steps: list[int], marks: list[dict[str, Any]], width: int) -> Text:
    """The line under the curve: one character per column, the strongest mark wins."""
    cells: list[tuple[str, str] | None] = [None] * width
    rank = {kind: i for i, kind in enumerate(MARKS)}
    for mark in sorted(marks, key=lambda m: -rank.get(m["kind"], len(MARKS))):
        char = MARKS.get(mark["kind"])
        if char is None or not steps:
            continue
        first = column_of(steps, int(mark["step"]), width)
        last = first
        if mark["kind"] in WINDOWS and isinstance(mark.get("to"), int):
            last = max(first, column_of(steps, mark["to"], width))
        for col in range(first, min(last, width - 1) + 1):
            cells[col] = char
    text = Text()
    for cell in cells:
        if cell is None:
            text.append(" ")
        else:
            text.append(cell[0], style=cell[1])
    text.rstrip()
    return text


def render_loss(loss: LossAnalysis, width: int) -> Text:
    """The whole block: heading, curve, marks, then one line per event with the way back."""
    from trainmedic.triage.sparkline import sparkline

    points = list(loss.points)
    steps = [s for s, _v in points]
    width = max(10, width - len(LABEL))
    curve = sparkline([v for _s, v in points], width=width)
    marks = loss.marks()
    spikes = list(loss.spikes)
    text = Text()
    made_by = loss.framework if loss.framework not in (None, "unknown") else loss.source
    text.append(f"Loss curve ({made_by or '?'}, {loss.count} points, "
                f"steps {loss.first_step}..{loss.last_step})", style="bold")
    kinds = sorted({m["kind"] for m in marks}, key=list(MARKS).index) if marks else []
    if kinds:
        text.append("  " + " ".join(f"{MARKS[k][0]} {k}" for k in kinds if k in MARKS),
                    style="bold")
    text.append("\n")
    text.append(LABEL, style="dim")
    text.append(curve)
    under = mark_line(steps, marks, len(curve))
    if under.plain:
        text.append("\n" + " " * len(LABEL))
        text.append(under)
    for spike in spikes[:3]:
        end = spike.end if spike.end is not None else "? (never recovered)"
        text.append(f"\n^ steps {spike.start}..{end}: peak {spike.peak_value:.3g} at "
                    f"{spike.peak} (baseline {spike.baseline:.3g})", style="bold")
        way = loss.recovery(spike)
        if way:
            text.append(f"\n  {way}")
    if len(spikes) > 3:
        text.append(f"\n  … {len(spikes) - 3} more spike(s): `trainmedic triage --json`",
                    style="dim")
    for run in loss.nan_runs[:3]:
        text.append(f"\n! NaN/inf {run.what} at steps {run.start}..{run.end} "
                    f"({run.points} point{'' if run.points == 1 else 's'})", style="bold red")
    if loss.divergence is not None:
        d = loss.divergence
        text.append(f"\n~ diverging from step {d.start} to {d.end}: {d.before:.3g} -> "
                    f"{d.after:.3g}", style="bold magenta")
    rollback = next((m for m in marks if m["kind"] == "rollback"), None)
    if rollback is not None:
        text.append(f"\nR roll back to the checkpoint of step {rollback['step']}",
                    style="bold green")
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
