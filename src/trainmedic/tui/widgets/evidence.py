"""The side panel: what the machine and the log say, next to the question being answered."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widgets import Static

# Words, not only colours: the panel must read the same with NO_COLOR set.
STATUS_MARK = {"ok": ("ok  ", "green"), "warn": ("WARN", "yellow"),
               "fail": ("FAIL", "red"), "unavailable": ("n/a ", "dim")}


class EvidencePanel(Static):
    """Probe statuses, the suggestion with its evidence, and triage findings."""

    def show(self, *, probes: list[dict[str, Any]], running: list[str],
             suggestion: tuple[str, list[str]] | None, triage: dict | None,
             history: list[str] | None = None) -> None:
        text = Text()
        if triage:
            text.append("Log triage\n", style="bold")
            text.append(str(triage.get("summary", "")) + "\n")
            evidence = triage.get("evidence")  # from a saved walk: may be hand-edited
            for line in (evidence if isinstance(evidence, list) else [])[:6]:
                text.append(f"  {line}\n", style="italic")
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
                mark, style = STATUS_MARK.get(str(p.get("status")), ("?   ", ""))
                text.append(f"{mark} ", style=style)
                text.append(f"{p.get('name')}: ", style="bold")
                text.append(f"{p.get('summary', '')}\n")
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
