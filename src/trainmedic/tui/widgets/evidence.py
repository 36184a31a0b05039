"""The side panel: what the machine and the log say, next to the question being answered."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.widgets import Static

if TYPE_CHECKING:
    from trainmedic.probes.base import ProbeResult
    from trainmedic.triage.attachment import TriageAttachment

# Words, not only colours: the panel must read the same with NO_COLOR set.
STATUS_MARK = {"ok": ("ok  ", "green"), "warn": ("WARN", "yellow"),
               "fail": ("FAIL", "red"), "unavailable": ("n/a ", "dim"),
               "unknown": ("??  ", "magenta")}
SHOWN_EVIDENCE = 6


class EvidencePanel(Static):
    """Probe statuses, the suggestion with its evidence, and the triage finding."""

    def show(self, *, probes: list[ProbeResult], running: list[str],
             suggestion: tuple[str, list[str]] | None, triage: TriageAttachment | None,
             history: list[str] | None = None) -> None:
        text = Text()
        finding = triage.finding if triage is not None else None
        if finding is not None:
            text.append("Log triage\n", style="bold")
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
        if not text.plain:
            text.append("No evidence yet.\n", style="dim")
            text.append("Probes run when a question has rules; log triage adds the lines it "
                        "matched.", style="dim")
        self.update(text)
