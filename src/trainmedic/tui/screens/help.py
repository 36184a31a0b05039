"""Every key of every screen, read from the screens' own bindings so it cannot go stale."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

_KEY_NAMES = {"escape": "esc", "pagedown": "pgdn", "pageup": "pgup", "question_mark": "?",
              "slash": "/"}


GLOBAL_ACTIONS = ("app.help", "app.quit")


def _rows(bindings) -> list[tuple[str, str]]:
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


def keys_help() -> Group:
    """One titled block per screen; titles sit above their keys, so the key column stays as
    narrow as the longest key and the descriptions get the width."""
    from trainmedic.tui.app import TrainmedicApp
    from trainmedic.tui.screens.browse import BrowseScreen
    from trainmedic.tui.screens.cluster import ClusterScreen
    from trainmedic.tui.screens.export import ExportScreen
    from trainmedic.tui.screens.home import HomeScreen
    from trainmedic.tui.screens.launch import LaunchCommandScreen
    from trainmedic.tui.screens.probes import ProbesScreen
    from trainmedic.tui.screens.report import ReportScreen
    from trainmedic.tui.screens.triage import TriageScreen
    from trainmedic.tui.screens.walk import WalkScreen
    from trainmedic.tui.widgets.codeblock import CodeBlock

    sections = [
        ("Everywhere", [*TrainmedicApp.BINDINGS, Binding(
            "ctrl+p", "", "command palette: actions and node search", key_display="^p")]),
        ("Home", [Binding("", "", "type to filter the list; backspace, ^u edit it",
                          key_display="a-z"), *HomeScreen.BINDINGS]),
        ("Question / fix", [*WalkScreen.BINDINGS, *CodeBlock.BINDINGS,
                            Binding("enter", "", "choose the highlighted answer")]),
        ("Browse", BrowseScreen.BINDINGS),
        ("Export runbook (browse x)", [*ExportScreen.BINDINGS,
                                       Binding("enter", "", "write the file")]),
        ("Incident report (fix i)", ReportScreen.BINDINGS),
        ("Cluster", ClusterScreen.BINDINGS),
        ("Log triage", TriageScreen.BINDINGS),
        ("Probes", ProbesScreen.BINDINGS),
        ("Launch command", LaunchCommandScreen.BINDINGS),
    ]
    blocks = []
    for title, bindings in sections:
        if title != "Everywhere":
            bindings = [b for b in bindings if getattr(b, "action", "") not in GLOBAL_ACTIONS]
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


class HelpScreen(ModalScreen[None]):
    CSS_PATH = str(Path(__file__).with_name("help.tcss"))
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss", "close", key_display="esc"),
        Binding("question_mark", "dismiss", "close", show=False),
        Binding("q", "dismiss", "close", show=False),
        Binding("f1", "dismiss", "close", show=False),
    ]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box") as box:
            box.border_title = "Keys  (esc closes)"
            yield Static(keys_help())
