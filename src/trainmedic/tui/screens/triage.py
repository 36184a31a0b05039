"""Log triage from the app: a log path or a pasted error -> findings -> walk from that node.

The inputs take two rows until used, so the findings get the screen: each says where it
leads, whether it is a cause or a symptom of one, how sure triage is, why, and its first line.
The app keeps one triage screen (installed), so an analysis that is still running, or its
findings, is still there when the screen is opened again.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import Input, Label, OptionList, Static, TextArea
from textual.widgets.option_list import Option

from trainmedic.textsafe import inert_line
from trainmedic.triage import TriageReport
from trainmedic.triage.attachment import TriageAttachment
from trainmedic.tui.base import AppScreen
from trainmedic.tui.widgets.footer import KeysFooter
from trainmedic.tui.widgets.losscurve import LossCurve
from trainmedic.tui.widgets.pathinput import PathInput

if TYPE_CHECKING:
    from textual.timer import Timer

    from trainmedic.triage.report import Finding

ASK_TREE = "triage"  # where to go when the log names nothing known: the tree that asks
SIZE_SCAN_FILES = 2000  # files looked at to say how much there is to read


def clip(text: str, width: int, lines: int = 2) -> str:
    """At most `lines` rows of `width`, cut at a word with "…" (the full text is one enter
    away, in the walk's evidence panel)."""
    room = max(20, width) * lines
    if len(text) <= room:
        return text
    cut = text[:room - 1].rsplit(" ", 1)[0]
    return cut + "…"


def finding_prompt(number: int, finding: Finding, width: int = 80) -> Group:
    """A finding as the list shows it: link, kind and confidence; summary; why; first line."""
    head = Text(no_wrap=True, overflow="ellipsis")
    head.append(f"{number}  ", style="bold")
    head.append(finding.link, style="bold")
    kind = "cause" if finding.kind == "cause" else "symptom"
    head.append(f"  {kind} · {round(finding.confidence * 100)}%",
                style="bold green" if kind == "cause" else "yellow")
    lines: list[RenderableType] = [
        head, Padding(Text(clip(finding.summary, width - 4)), (0, 0, 0, 3))]
    if finding.why:
        lines.append(Text(f"   why: {finding.why}", style="italic", no_wrap=True,
                          overflow="ellipsis"))
    if finding.evidence:
        first = " ".join(f"{finding.evidence[0].where}: {finding.evidence[0].text}".split())
        lines.append(Text(f"   {first}", style="dim", no_wrap=True, overflow="ellipsis"))
    return Group(*lines)


def how_much(path: str) -> str:
    """`3 files, 293 MB`: what an analysis has to read, said while it runs."""
    target = Path(path)
    try:
        if target.is_file():
            return f"{target.stat().st_size / 1e6:.0f} MB"
        count, size = 0, 0
        for root, _dirs, files in os.walk(target):
            for name in files:
                count += 1
                if count > SIZE_SCAN_FILES:
                    return f"{SIZE_SCAN_FILES}+ files"
                with contextlib.suppress(OSError):  # gone since the folder was listed
                    size += os.stat(os.path.join(root, name)).st_size
        return f"{count} file{'' if count == 1 else 's'}, {size / 1e6:.0f} MB"
    except OSError:
        return ""


class TriageScreen(AppScreen[None]):
    CSS_PATH = "triage.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+s", "analyse", "analyse", key_display="^s"),
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
        self.started: float | None = None  # when the analysis in flight began
        self.what = ""  # what it reads, for the progress line
        self.what_size = ""  # how much that is (set by the worker: a folder takes a moment)
        self._ticker: Timer | None = None
        # what the user said they saw in a walk (the entry question), set by the app: used as
        # `triage --symptom` is
        self.symptom: str | None = None

    def compose(self) -> ComposeResult:
        yield Static(Text.assemble(("Log triage", "bold"), "  name what went wrong and where to "
                                   "continue", no_wrap=True, overflow="ellipsis"),
                     id="titlebar")
        with Horizontal(id="path-row"):
            yield Label("log ", id="path-label")
            yield PathInput(placeholder="file or folder of every rank's log (tab completes, "
                            "enter analyses)", id="log-path")
        yield TextArea(id="paste", soft_wrap=True, show_line_numbers=False,
                       placeholder="…or paste an error line or traceback here (^s analyses)")
        yield Static(id="triage-status")
        yield LossCurve(id="loss")
        yield OptionList(id="findings")
        yield KeysFooter()

    def on_mount(self) -> None:
        self.query_one(LossCurve).show(None)
        self.query_one("#triage-status", Static).update(
            Text("Findings appear here; enter on one starts the walk there.", style="dim"))
        self.query_one("#log-path", Input).focus()

    def on_input_submitted(self, _event: Input.Submitted) -> None:
        self.action_analyse()

    def on_text_area_changed(self, _event: TextArea.Changed) -> None:
        self._fold_paste()

    def on_descendant_focus(self) -> None:
        self._fold_paste()

    def on_descendant_blur(self) -> None:
        self._fold_paste()

    def _fold_paste(self) -> None:
        """The paste box takes one row until it is used: an empty box must not eat the screen."""
        paste = self.query_one("#paste", TextArea)
        paste.set_class(paste.has_focus or bool(paste.text.strip()), "open")

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
        self._clear_results()  # an error below must not sit above the last log's findings
        full = str(Path(path).expanduser()) if path else None
        self.what = path or "the pasted text"
        self.what_size = ""
        self.started = time.monotonic()
        self._tick()
        if self._ticker is None:
            self._ticker = self.set_interval(0.5, self._tick)
        else:
            self._ticker.resume()
        self._analyse(full, text)

    def _tick(self) -> None:
        """The progress line: what is read, how big, for how long (the screen stays live)."""
        if self.started is None:
            return
        seconds = time.monotonic() - self.started
        size = f" ({self.what_size})" if self.what_size else ""
        self.query_one("#triage-status", Static).update(Text(
            f"analysing {self.what}{size} … {seconds:.1f} s  (esc leaves; the result waits "
            "here)", style="italic"))

    @work(thread=True, group="triage", exclusive=True, exit_on_error=False)
    def _analyse(self, path: str | None, text: str) -> None:
        """In a thread: a big folder of logs takes a while, the screen stays live."""
        from trainmedic.triage import triage_paths, triage_text

        self.what_size = how_much(path) if path is not None else ""
        try:
            report = (triage_paths([path], symptom=self.symptom) if path is not None
                      else triage_text(text, symptom=self.symptom))
        except Exception as exc:  # UsageError for unreadable input; anything else is shown too
            self.post_message(self.Analysed(None, str(exc)))
            return
        self.post_message(self.Analysed(report))

    def on_triage_screen_analysed(self, message: Analysed) -> None:
        seconds = time.monotonic() - self.started if self.started is not None else 0.0
        self.started = None
        if self._ticker is not None:
            self._ticker.pause()
        if message.report is None:
            self.query_one("#triage-status", Static).update(
                Text(inert_line(f"triage failed: {message.error}"), style="red"))
            return
        self.report = message.report
        self.query_one(LossCurve).show(message.report.loss)
        self.show_findings(seconds)
        if not self.is_current:
            self.app.notify(inert_line(f"Log triage of {self.what} is done: ^t shows it."),
                            title="Log triage", markup=False)

    def _clear_results(self) -> None:
        self.report = None
        self.query_one("#findings", OptionList).clear_options()
        self.query_one(LossCurve).show(None)

    def show_findings(self, seconds: float = 0.0) -> None:
        options = self.query_one("#findings", OptionList)
        options.clear_options()
        status = self.query_one("#triage-status", Static)
        findings = self.report.findings if self.report is not None else []
        took = f" in {seconds:.1f} s" if seconds >= 1 else ""
        # sources read only in part (a decompression bomb, no line breaks): inert already
        notes = "".join(f"\n{note}" for note in self.report.notes) if self.report else ""
        if not findings:
            status.update(Text(f"No known failure found in it{took}." + notes, style="yellow"))
            options.add_option(Option(Text.assemble(("triage  ", "bold"), "walk the entry tree "
                                                    "instead: what do you see?"), id=ASK_TREE))
            options.highlighted = 0
            options.focus()
            return
        causes = sum(f.kind == "cause" for f in findings)
        said = self.report.symptom if self.report is not None else None
        status.update(Text.assemble(
            (f"{len(findings)} finding(s){took}, most likely first", "bold"),
            f": {causes} cause(s), {len(findings) - causes} symptom(s) · enter walks there",
            (f"\n{said.summary} (your answer in the walk)" if said is not None else "", "dim"),
            (notes, "yellow")))
        for number, finding in enumerate(findings, start=1):
            options.add_option(Option(finding_prompt(number, finding, self.app.size.width)))
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
