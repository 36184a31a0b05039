"""Every key of every screen, read from the screens' own bindings so it cannot go stale."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from rich.table import Table
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


def help_table() -> Table:
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

    table = Table(box=None, show_header=False, padding=(0, 2, 0, 0), expand=True)
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    sections = [
        ("Everywhere", [*TrainmedicApp.BINDINGS, Binding(
            "ctrl+p", "", "command palette: actions and node search", key_display="^p")]),
        ("Home", HomeScreen.BINDINGS),
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
    for title, bindings in sections:
        table.add_row(f"[reverse] {title} [/]", "")
        if title != "Everywhere":
            bindings = [b for b in bindings if getattr(b, "action", "") not in GLOBAL_ACTIONS]
        for key, desc in _rows(bindings):
            table.add_row(key, desc)
        table.add_row("", "")
    return table


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
            yield Static(help_table())
