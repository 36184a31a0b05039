"""Quit in the middle of a walk: one more key, so a stray `q` does not end the incident."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widgets import Static

from trainmedic.tui.base import AppDialog


class QuitScreen(AppDialog[bool]):
    """Dismisses with True to quit; q or ^c again also quits (the app sees this screen)."""

    CSS_PATH = "quit.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "quit"),
        Binding("enter", "answer(True)", "quit", show=False),
        # a modal screen hides the app's keys: q and ^c again mean yes
        Binding("q", "answer(True)", "quit", show=False),
        Binding("ctrl+c", "answer(True)", "quit", show=False, priority=True),
        Binding("n", "answer(False)", "stay"),
        Binding("escape", "answer(False)", "stay", show=False),
    ]

    def compose(self) -> ComposeResult:
        with Vertical(id="quit-box") as box:
            box.border_title = "Quit trainmedic?"
            yield Static(Text.assemble(
                "The walk is saved; resume it from home or with ",
                ("trainmedic walk --resume", "bold"), ".\n\n",
                ("y", "bold"), " or ", ("q", "bold"), " quits, ", ("n", "bold"), " or ",
                ("esc", "bold"), " stays."))

    def action_answer(self, quit_: bool) -> None:
        self.dismiss(quit_)
