"""Every key of every screen, read from the screens' own bindings so it cannot go stale."""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import Static

from trainmedic.tui.base import AppDialog

_KEY_NAMES = {"escape": "esc", "pagedown": "pgdn", "pageup": "pgup", "question_mark": "?",
              "slash": "/"}


GLOBAL_ACTIONS = ("app.help", "app.quit", "app.request_quit", "app.triage", "app.probes")


def _rows(bindings: Iterable[BindingType]) -> list[tuple[str, str]]:
    rows: dict[str, list[str]] = {}
    for b in bindings:
        if not isinstance(b, Binding) or not b.description:
            continue
        key = b.key_display or _KEY_NAMES.get(b.key, b.key.replace("ctrl+", "^"))
        if b.description not in rows:
            rows[b.description] = [key]
        elif b.show and key not in rows[b.description]:
            rows[b.description].append(key)
    return [(" / ".join(keys), desc) for desc, keys in rows.items()]


HelpSections = list[tuple[str, list[BindingType]]]


def keys_help(sections: HelpSections) -> Group:
    """One titled block per screen (`sections`: its title and bindings, the app's own keys
    first); titles sit above their keys, so the key column stays as narrow as the longest key
    and the descriptions get the width."""
    blocks = []
    for index, (title, bindings) in enumerate(sections):
        if index:  # the app's own keys are listed once, first
            bindings = [b for b in bindings
                        if not (isinstance(b, Binding) and b.action in GLOBAL_ACTIONS)]
        blocks.append((title, _rows(bindings)))
    key_width = max(len(key) for _title, rows in blocks for key, _desc in rows)
    parts: list[Text | Table] = []
    for title, rows in blocks:
        parts.append(Text(f" {title} ", style="reverse"))
        table = Table.grid(padding=(0, 2, 0, 0), expand=True)
        table.add_column(style="bold", no_wrap=True, width=key_width)
        table.add_column(ratio=1)
        for key, desc in rows:
            table.add_row(key, desc)
        parts.extend([table, Text("")])
    return Group(*parts)


class HelpScreen(AppDialog[None]):
    """Every key of every screen; the app says which screens there are (`sections`)."""

    CSS_PATH = "help.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss", "close", key_display="esc"),
        Binding("question_mark", "dismiss", "close", show=False),
        Binding("f1", "dismiss", "close", show=False),
    ]

    def __init__(self, sections: HelpSections) -> None:
        super().__init__()
        self.sections = sections

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box") as box:
            box.border_title = "Keys  (esc closes)"
            yield Static(keys_help(self.sections))
