"""The incident report of the current walk: read it as Markdown, then save it where you like.

The text comes from `trainmedic.export.report.render_report` (the same as `trainmedic report`),
which redacts secrets, including the launch command; the screen shows nothing else.
"""

from __future__ import annotations

import re
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Input, Label, Markdown, Static

from trainmedic.tui.base import AppScreen
from trainmedic.tui.savefile import SaveGuard, write_text
from trainmedic.tui.widgets.footer import KeysFooter
from trainmedic.tui.widgets.pathinput import PathInput

_DETAILS = re.compile(r"<details><summary>(?P<what>.*?)</summary>.*?</details>", re.DOTALL)


def default_report_path(walk_id: str) -> str:
    return f"./trainmedic-report-{walk_id}.md"


def on_screen(markdown: str) -> str:
    """The report as the screen shows it: each probe's raw facts folded to one line (a
    terminal cannot fold `<details>`, and the JSON would fill the screen); saved whole."""
    return _DETAILS.sub(lambda m: f"*{m['what']}: in the saved file.*", markdown)


class ReportScreen(AppScreen[None]):
    CSS_PATH = "report.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+s", "save", "save", key_display="^s", priority=True),
        Binding("s", "save", "save", show=False),
        Binding("tab", "app.focus_next", "report text / file name", show=False),
        Binding("escape", "leave", "back", key_display="esc"),
    ]

    def __init__(self, walk_id: str, markdown: str) -> None:
        super().__init__()
        self.walk_id = walk_id
        self.markdown = markdown
        self._guard = SaveGuard()

    def compose(self) -> ComposeResult:
        walk_id = self.walk_id
        yield Static(Text.assemble(("Incident report", "bold"), f"  walk {walk_id}",
                                   ("  secrets redacted", "dim")), id="titlebar")
        with VerticalScroll(id="report-view"):
            yield Markdown(on_screen(self.markdown), id="report-md")
        with Horizontal(id="save-row"):
            yield Label("save to ", id="save-label")
            yield PathInput(default_report_path(walk_id), id="report-path")
        yield Static(id="save-status")
        yield KeysFooter()

    def on_mount(self) -> None:
        self.query_one("#report-view", VerticalScroll).focus()

    def on_input_changed(self, _event: Input.Changed) -> None:
        self._guard.reset()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_save()

    def action_save(self) -> None:
        status = self.query_one("#save-status", Static)
        path, why = self._guard.check(self.query_one("#report-path", Input).value)
        if path is None:
            status.update(Text(why, style="yellow"))
            return
        error = write_text(path, self.markdown)
        if error:
            status.update(Text(error, style="red"))
            return
        self._guard.reset()
        where = path.absolute()  # "./report.md" says nothing about which folder, at 3 a.m.
        status.update(Text(f"saved to {where}", style="green"))
        self.notify(f"Report saved to {where}", title="Incident report")

    def action_leave(self) -> None:
        self.app.pop_screen()
