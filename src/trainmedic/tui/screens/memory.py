"""Memory estimate: what `trainmedic memory --script` says, in the app.

Paste the launch command or give the path of the launch script; the estimate runs in a thread
(the card size comes from the gpu probe, as on the command line) and shows the same verdict,
tables and cheapest changes (`memory.summary`, shared with the CLI).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widgets import Static, TextArea

from trainmedic.redact import redact_text
from trainmedic.textsafe import inert, inert_line
from trainmedic.tui.base import AppScreen
from trainmedic.tui.widgets.footer import KeysFooter

if TYPE_CHECKING:
    from trainmedic.memory.summary import MemorySummary

VERDICT_STYLE = {"fits": "bold green", "tight": "bold yellow", "does not fit": "bold red"}


def shown(text: str) -> str:
    """Words of a launch script (anyone's) as they may reach the terminal, as the CLI shows
    them: redacted, control characters made visible."""
    return inert(redact_text(text))


def summary_text(summary: MemorySummary) -> list[Text | Table]:
    """The CLI's report as renderables: verdict, lines, the two tables, changes, problems."""
    parts: list[Text | Table] = [
        Text(shown(summary.verdict_line), style=VERDICT_STYLE.get(summary.verdict, "bold")),
        Text(summary.allocated_line), Text(summary.params_line)]
    from trainmedic.memory.summary import LEGEND, STAGE_HEADER, THEORETICAL_HEADER

    theory = Table(title="Megatron theoretical memory (stage 0, MiB)", title_justify="left",
                   expand=False)
    for col in THEORETICAL_HEADER:
        theory.add_column(col, justify="right")
    theory.add_row(*summary.theoretical)
    stages = Table(title="Allocated-memory model per pipeline stage (GiB)",
                   title_justify="left", expand=False)
    for col in STAGE_HEADER:
        stages.add_column(col, justify="right")
    for k, row in enumerate(summary.stages):
        stages.add_row(*row, style="bold" if k == summary.worst_row else None)
    parts += [theory, stages, Text(LEGEND, style="dim")]
    if summary.changes:
        changes = Text(summary.changes_title + "\n", style="bold")
        for k, change in enumerate(summary.changes, 1):
            changes.append(f"  {k}. {shown(change.change)}: ", style="bold")
            changes.append(shown(change.args), style="cyan")
            changes.append(f" -> {change.total_gib} GiB ({change.verdict})\n")
        changes.rstrip()
        parts.append(changes)
    for status, name, message in summary.problems:
        parts.append(Text.assemble((f"{status:4} ", "bold yellow" if status == "WARN"
                                    else "bold red"), (f"{name}: ", "bold"), shown(message)))
    for note in summary.notes:
        parts.append(Text(shown(f"note: {note}"), style="dim"))
    return parts


class MemoryScreen(AppScreen[None]):
    CSS_PATH = "memory.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+s", "estimate", "estimate", key_display="^s"),
        Binding("escape", "leave", "back", key_display="esc"),
    ]

    class Estimated(Message):
        def __init__(self, summary: MemorySummary | None, source: str, error: str = "") -> None:
            super().__init__()
            self.summary = summary
            self.source = source
            self.error = error

    def __init__(self, text: str = "") -> None:
        super().__init__()
        self.text = text
        self.summary: MemorySummary | None = None

    def compose(self) -> ComposeResult:
        yield Static(Text.assemble(("Memory estimate", "bold"), "  per GPU, from a Megatron "
                                   "launch command or script", no_wrap=True, overflow="ellipsis"),
                     id="titlebar")
        yield TextArea(self.text, id="launch", soft_wrap=True, show_line_numbers=False,
                       placeholder="path of the launch script, or paste the command "
                       "(^s estimates)")
        yield Static(id="memory-status")
        with VerticalScroll(id="memory-result"):
            yield Static(id="memory-report")
        yield KeysFooter()

    def on_mount(self) -> None:
        self.query_one("#memory-status", Static).update(Text(
            "The card size comes from the gpu probe (80 GiB assumed without one).", style="dim"))
        self.query_one("#launch", TextArea).focus()

    def action_estimate(self) -> None:
        text = self.query_one("#launch", TextArea).text
        status = self.query_one("#memory-status", Static)
        if not text.strip():
            status.update(Text("Give the path of a launch script or paste the command first.",
                               style="yellow"))
            return
        status.update(Text("estimating… (asking the GPUs for their size)", style="italic"))
        self._estimate(text, self.app.probes_enabled)

    @work(thread=True, group="memory", exclusive=True, exit_on_error=False)
    def _estimate(self, text: str, probe: bool) -> None:
        from trainmedic.errors import TrainmedicError
        from trainmedic.launch.script import read_launch_text
        from trainmedic.memory import (
            add_suggestions,
            config_from_script,
            estimate,
            require,
            run_checks,
        )
        from trainmedic.memory.summary import summarize

        try:
            script, source = read_launch_text(text)
            config = require(config_from_script(script, path=source))
            capacity, where = None, None
            if probe:
                from trainmedic.probes.capacity import smallest_card_mib

                capacity = smallest_card_mib()
                where = "gpu probe (smallest card on this node)" if capacity else None
            report = add_suggestions(estimate(config, capacity_mib=capacity,
                                              capacity_source=where))
            report.checks = run_checks(config)
        except TrainmedicError as exc:
            self.post_message(self.Estimated(None, "", str(exc)))
            return
        self.post_message(self.Estimated(summarize(report), source))

    def on_memory_screen_estimated(self, message: Estimated) -> None:
        from rich.console import Group

        status = self.query_one("#memory-status", Static)
        report = self.query_one("#memory-report", Static)
        if message.summary is None:
            status.update(Text(inert_line(message.error), style="red"))
            report.update("")
            return
        self.summary = message.summary
        status.update(Text(inert_line(f"from {message.source}"), style="dim"))
        report.update(Group(*summary_text(message.summary)))
        self.query_one("#memory-result", VerticalScroll).scroll_home(animate=False)

    def action_leave(self) -> None:
        self.app.pop_screen()
