"""Log triage from the app: a log path or a pasted error -> findings -> walk from that node."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import Footer, Input, Label, OptionList, Static, TextArea
from textual.widgets.option_list import Option

from trainmedic.textsafe import inert_line
from trainmedic.triage import TriageReport
from trainmedic.triage.attachment import TriageAttachment
from trainmedic.tui.base import AppScreen
from trainmedic.tui.widgets.losscurve import LossCurve
from trainmedic.tui.widgets.pathinput import PathInput

ASK_TREE = "triage"  # where to go when the log names nothing known: the tree that asks
FIRST_LINE = 118  # characters of a finding's first evidence line shown under it


class TriageScreen(AppScreen[None]):
    CSS_PATH = "triage.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+r", "analyse", "analyse", key_display="^r"),
        Binding("escape", "leave", "back", key_display="esc"),
        Binding("f2", "focus_findings", "findings", key_display="F2"),
    ]

    class Analysed(Message):
        """The triage in the background is done: its report, or why it failed."""

        def __init__(self, report: TriageReport | None, error: str = "") -> None:
            super().__init__()
            self.report = report
            self.error = error

    def __init__(self) -> None:
        super().__init__()
        self.report: TriageReport | None = None

    def compose(self) -> ComposeResult:
        yield Static(Text.assemble(("Log triage", "bold"), "  name what went wrong and where to "
                                   "continue"), id="titlebar")
        yield Label("Log file, or the folder of every rank's log (enter or ^r to analyse)")
        yield PathInput(placeholder="logs/  or  logs/rank0.log  (tab completes)", id="log-path")
        yield Label("…or paste an error line or traceback")
        yield TextArea(id="paste", soft_wrap=True, show_line_numbers=False)
        yield Static(id="triage-status")
        yield LossCurve(id="loss")
        yield OptionList(id="findings")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.query_one(LossCurve).show(None)
        self.query_one("#triage-status", Static).update(
            Text("Findings appear here; enter on one starts the walk there.", style="dim"))
        self.query_one("#log-path", Input).focus()

    def on_input_submitted(self, _event: Input.Submitted) -> None:
        self.action_analyse()

    def action_analyse(self) -> None:
        status = self.query_one("#triage-status", Static)
        path = self.query_one("#log-path", Input).value.strip()
        text = self.query_one("#paste", TextArea).text
        if not path and not text.strip():
            status.update(Text("Give a log path or paste an error first.", style="yellow"))
            return
        if path == "-":
            status.update(Text("stdin is this terminal: give a log file or folder, or paste.",
                               style="yellow"))
            return
        status.update(Text("analysing…", style="italic"))
        self._clear_results()  # an error below must not sit above the last log's findings
        self._analyse(str(Path(path).expanduser()) if path else None, text)

    @work(thread=True, group="triage", exclusive=True, exit_on_error=False)
    def _analyse(self, path: str | None, text: str) -> None:
        """In a thread: a big folder of logs takes a while, the screen stays live."""
        from trainmedic.triage import triage_paths, triage_text

        try:
            report = triage_paths([path]) if path is not None else triage_text(text)
        except Exception as exc:  # UsageError for unreadable input; anything else is shown too
            self.post_message(self.Analysed(None, str(exc)))
            return
        self.post_message(self.Analysed(report))

    def on_triage_screen_analysed(self, message: Analysed) -> None:
        if message.report is None:
            self.query_one("#triage-status", Static).update(
                Text(inert_line(f"triage failed: {message.error}"), style="red"))
            return
        self.report = message.report
        self.query_one(LossCurve).show(message.report.loss)
        self.show_findings()

    def _clear_results(self) -> None:
        self.report = None
        self.query_one("#findings", OptionList).clear_options()
        self.query_one(LossCurve).show(None)

    def show_findings(self) -> None:
        options = self.query_one("#findings", OptionList)
        options.clear_options()
        status = self.query_one("#triage-status", Static)
        findings = self.report.findings if self.report is not None else []
        # sources read only in part (a decompression bomb, no line breaks): inert already
        notes = "".join(f"\n{note}" for note in self.report.notes) if self.report else ""
        if not findings:
            status.update(Text("No known failure found in it." + notes, style="yellow"))
            options.add_option(Option(Text.assemble(("triage  ", "bold"), "walk the entry tree "
                                                    "instead: what do you see?"), id=ASK_TREE))
            options.highlighted = 0
            options.focus()
            return
        status.update(Text.assemble((f"{len(findings)} finding(s), most likely first:", "bold"),
                                    (notes, "yellow")))
        for finding in findings:
            label = Text()
            label.append(f"{finding.link}  ", style="bold")
            label.append(finding.summary)
            if finding.evidence:
                first = " ".join(f"{finding.evidence[0].where}: {finding.evidence[0].text}"
                                 .split())
                cut = first[:FIRST_LINE - 1] + "…" if len(first) > FIRST_LINE else first
                label.append(f"\n   {cut}", style="dim")
            options.add_option(Option(label))
        options.highlighted = 0
        options.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        if event.option.id == ASK_TREE or self.report is None:
            self.app.open_walk(ASK_TREE)
            return
        attachment = TriageAttachment.of(self.report, event.option_index)
        finding = attachment.finding
        assert finding is not None
        self.app.open_walk(finding.link, triage=attachment)

    def action_focus_findings(self) -> None:
        self.query_one("#findings", OptionList).focus()

    def action_leave(self) -> None:
        self.app.pop_screen()
