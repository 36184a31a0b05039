"""The side panel: what the machine and the log say, next to the question being answered.

It scrolls on its own and takes focus (tab), so a long triage excerpt never hides the probes
below it; the walk hides it while it has nothing to say, so the question gets the width.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

if TYPE_CHECKING:
    from trainmedic.probes.base import ProbeResult
    from trainmedic.triage.attachment import TriageAttachment

# Words, not only colours: the panel must read the same with NO_COLOR set.
STATUS_MARK = {"ok": ("ok  ", "green"), "warn": ("WARN", "yellow"),
               "fail": ("FAIL", "red"), "unavailable": ("n/a ", "dim"),
               "unknown": ("??  ", "magenta")}
SHOWN_EVIDENCE = 6
EMPTY = ("No evidence yet: what the probes of a question find, and the log lines a triage "
         "matched, appear here.")


class EvidencePanel(VerticalScroll, can_focus=True):
    """Probe statuses, the suggestion with its evidence, and the triage finding."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]  # Widget's own keywords
        self.empty = True
        self.text = Text()

    def compose(self) -> ComposeResult:
        yield Static(Text(EMPTY, style="dim"), id="evidence-text")

    def show(self, *, probes: list[ProbeResult], running: list[str],
             suggestion: tuple[str, list[str]] | None, triage: TriageAttachment | None,
             history: list[str] | None = None) -> None:
        text = Text()
        finding = triage.finding if triage is not None else None
        if finding is not None:
            text.append("Log triage", style="bold")
            text.append(f"  {finding.kind}, {round(finding.confidence * 100)}%\n", style="dim")
            text.append(finding.summary + "\n")
            for e in finding.evidence[:SHOWN_EVIDENCE]:
                text.append(f"  {e.where}: {e.text}\n", style="italic")
            text.append("\n")
        if suggestion is not None:
            answer, lines = suggestion
            text.append("Suggested\n", style="bold")
            text.append(f"→ {answer}\n", style="bold green")
            for line in lines:
                text.append(f"  {line}\n")
            text.append("\n")
        if probes or running:
            text.append("Probes\n", style="bold")
            for p in probes:
                mark, style = STATUS_MARK.get(p.status, ("?   ", ""))
                text.append(f"{mark} ", style=style)
                text.append(f"{p.name}: ", style="bold")
                text.append(f"{p.summary}\n")
            if running:
                text.append(f"… running {', '.join(running)}\n", style="italic")
            text.append("\n")
        if history:
            text.append("Evidence on the way\n", style="bold")
            for line in history:
                text.append(f"  {line}\n")
        text.rstrip()
        self.empty = not text.plain
        self.text = text if text.plain else Text(EMPTY, style="dim")
        self.query_one("#evidence-text", Static).update(self.text)
