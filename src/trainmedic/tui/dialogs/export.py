"""Export the tree in view as a Markdown runbook: the same text as `trainmedic export TREE`."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widgets import Input, Static

from trainmedic.trees import Forest
from trainmedic.tui.base import AppDialog
from trainmedic.tui.savefile import SaveGuard, write_text
from trainmedic.tui.widgets.footer import KeysFooter
from trainmedic.tui.widgets.pathinput import PathInput


def runbook_text(forest: Forest, tree_id: str) -> str:
    """The Markdown runbook of one tree, through the exporter `trainmedic export` uses."""
    from trainmedic.export.markdown import tree_markdown

    return tree_markdown(forest, forest.trees[tree_id])


class ExportScreen(AppDialog[Path | None]):
    """Ask where to write the runbook (default `./<tree-id>.md`); an existing file needs a
    second enter. Dismisses with the path written, or None."""

    CSS_PATH = "export.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+s", "write", "write", key_display="^s", priority=True),
        Binding("escape", "cancel", "cancel", key_display="esc"),
    ]

    def __init__(self, forest: Forest, tree_id: str) -> None:
        super().__init__()
        self.forest = forest
        self.tree_id = tree_id
        self._guard = SaveGuard()

    def compose(self) -> ComposeResult:
        with Vertical(id="export-box") as box:
            box.border_title = f"Export runbook: {self.tree_id}"
            yield Static(Text("Markdown runbook of the whole tree (what `trainmedic export "
                              f"{self.tree_id}` prints). enter writes; esc cancels.",
                              style="dim"))
            yield PathInput(f"./{self.tree_id}.md", id="export-path")
            yield Static(id="export-status")
        yield KeysFooter()

    def on_mount(self) -> None:
        self.query_one("#export-path", Input).focus()

    def on_input_changed(self, _event: Input.Changed) -> None:
        self._guard.reset()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_write()

    def action_write(self) -> None:
        status = self.query_one("#export-status", Static)
        path, why = self._guard.check(self.query_one("#export-path", Input).value)
        if path is None:
            status.update(Text(why, style="yellow"))
            return
        error = write_text(path, runbook_text(self.forest, self.tree_id))
        if error:
            status.update(Text(error, style="red"))
            return
        self.app.notify(f"Runbook of {self.tree_id} written to {path.absolute()}", title="Export")
        self.dismiss(path)

    def action_cancel(self) -> None:
        self.dismiss(None)
