"""Paste the job's launch command (or a path to its launch script) for the memory estimate.

The OOM and preflight trees suggest "the configuration does not fit" from the theoretical
memory of the launch script; this dialog is how the app gets that script. The text is kept in
the walk (`launch_command`), so the incident report can show it, redacted.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widgets import Static, TextArea

from trainmedic.tui.base import AppDialog
from trainmedic.tui.widgets.footer import KeysFooter


class LaunchCommandScreen(AppDialog[str | None]):
    CSS_PATH = "launch_command.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+s", "accept", "use it", key_display="^s"),
        Binding("escape", "cancel", "cancel", key_display="esc"),
    ]

    def __init__(self, current: str = "") -> None:
        super().__init__()
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical(id="launch-box") as box:
            box.border_title = "Launch command"
            yield Static(Text("Paste the training command or launch script, or type the path "
                              "of the script. ^s estimates its memory; esc cancels.",
                              style="dim"))
            yield TextArea(self.current, id="launch-text", soft_wrap=True,
                           show_line_numbers=False)
        yield KeysFooter()

    def on_mount(self) -> None:
        area = self.query_one("#launch-text", TextArea)
        area.focus()
        area.select_all()  # what is typed or pasted replaces the old command, not joins it

    def action_accept(self) -> None:
        self.dismiss(self.query_one("#launch-text", TextArea).text)

    def action_cancel(self) -> None:
        self.dismiss(None)
