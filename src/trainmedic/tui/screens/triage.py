"""Log triage from the app: a log path or a pasted error -> findings -> walk from that node."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Footer, Input, Label, OptionList, Static, TextArea
from textual.widgets.option_list import Option
from textual.worker import Worker, WorkerState

from trainmedic.tui.widgets.losscurve import LossCurve
from trainmedic.tui.widgets.pathinput import PathInput

ASK_TREE = "triage"  # where to go when the log names nothing known: the tree that asks
NOT_AVAILABLE = "triage not available in this build (trainmedic.triage has no triage_paths)"


def finding_to_dict(finding: Any) -> dict[str, Any]:
    """The part of a finding the walk keeps: link, summary and evidence lines (as text)."""
    evidence = []
    for e in getattr(finding, "evidence", []) or []:
        if isinstance(e, str):
            evidence.append(e)
        else:
            where = f"{Path(str(getattr(e, 'file', ''))).name}:{getattr(e, 'line', '')}"
            evidence.append(f"{where}: {getattr(e, 'text', e)}")
    node = getattr(finding, "node", None)
    tree = str(getattr(finding, "tree", ""))
    return {"tree": tree, "node": node, "link": f"{tree}#{node}" if node else tree,
            "summary": str(getattr(finding, "summary", "")), "evidence": evidence}


class TriageScreen(Screen):
    CSS_PATH = str(Path(__file__).with_name("triage.tcss"))
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+r", "analyse", "analyse", key_display="^r"),
        Binding("escape", "leave", "back", key_display="esc"),
        Binding("f2", "focus_findings", "findings", key_display="F2"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.findings: list[dict[str, Any]] = []

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
        status = self.query_one("#triage-status", Static)
        if self.app.triage_api is None:  # type: ignore[attr-defined]
            status.update(Text(NOT_AVAILABLE, style="yellow"))
        else:
            status.update(Text("Findings appear here; enter on one starts the walk there.",
                               style="dim"))
        self.query_one("#log-path", Input).focus()

    def on_input_submitted(self, _event: Input.Submitted) -> None:
        self.action_analyse()

    def action_analyse(self) -> None:
        api = self.app.triage_api  # type: ignore[attr-defined]
        status = self.query_one("#triage-status", Static)
        if api is None:
            status.update(Text(NOT_AVAILABLE, style="yellow"))
            return
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
        if path:
            work = lambda: api.triage_paths([str(Path(path).expanduser())])  # noqa: E731
        else:
            work = lambda: api.triage_text(text)  # noqa: E731
        self.run_worker(work, thread=True, group="triage", exit_on_error=False, exclusive=True)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group != "triage":
            return
        status = self.query_one("#triage-status", Static)
        if event.state == WorkerState.ERROR:
            status.update(Text(f"triage failed: {event.worker.error}", style="red"))
            return
        if event.state != WorkerState.SUCCESS:
            return
        result = event.worker.result
        self.query_one(LossCurve).show(getattr(result, "loss", None))
        findings = getattr(result, "findings", result) or []
        self.findings = [finding_to_dict(f) for f in findings]
        self.show_findings()

    def _clear_results(self) -> None:
        self.findings = []
        self.query_one("#findings", OptionList).clear_options()
        self.query_one(LossCurve).show(None)

    def show_findings(self) -> None:
        options = self.query_one("#findings", OptionList)
        options.clear_options()
        status = self.query_one("#triage-status", Static)
        if not self.findings:
            status.update(Text("No known failure found in it.", style="yellow"))
            options.add_option(Option(Text.assemble(("triage  ", "bold"), "walk the entry tree "
                                                    "instead: what do you see?"), id=ASK_TREE))
            options.highlighted = 0
            options.focus()
            return
        status.update(Text(f"{len(self.findings)} finding(s), most likely first:", style="bold"))
        for f in self.findings:
            label = Text()
            label.append(f"{f['link']}  ", style="bold")
            label.append(f["summary"])
            if f["evidence"]:
                first = " ".join(f["evidence"][0].split())
                label.append(f"\n   {first[:117] + '…' if len(first) > 118 else first}",
                             style="dim")
            options.add_option(Option(label))
        options.highlighted = 0
        options.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        app: Any = self.app
        if event.option.id == ASK_TREE:
            app.open_walk(ASK_TREE)
            return
        finding = self.findings[event.option_index]
        app.open_walk(finding["link"], triage=finding)

    def action_focus_findings(self) -> None:
        self.query_one("#findings", OptionList).focus()

    def action_leave(self) -> None:
        self.app.pop_screen()
