"""Run every probe on this machine in the background and show status and summary per probe."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static
from textual.worker import Worker, WorkerState

from trainmedic.tui.served import served_on
from trainmedic.tui.widgets.evidence import STATUS_MARK

if TYPE_CHECKING:
    from trainmedic.walk import WalkSession


def results_table(results: list) -> Table:
    """Status, name, summary, time: a grid, so a long summary wraps under itself and the
    column of names stays readable."""
    grid = Table.grid(padding=(0, 1), expand=True)
    grid.add_column(no_wrap=True)
    grid.add_column(no_wrap=True, style="bold")
    grid.add_column(ratio=1)
    grid.add_column(no_wrap=True, style="dim", justify="right")
    for r in results:
        mark, style = STATUS_MARK.get(r.status, ("?   ", ""))
        grid.add_row(Text(mark, style=style), r.name, r.summary, f"{r.duration_s:.1f}s")
    return grid


class ProbesScreen(Screen):
    CSS_PATH = str(Path(__file__).with_name("triage.tcss"))
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("r", "run", "run again"),
        Binding("escape", "leave", "back", key_display="esc"),
        Binding("question_mark", "app.help", "help", key_display="?"),
    ]

    def __init__(self, session: WalkSession | None = None) -> None:
        super().__init__()
        self.session = session  # opened from a walk: results are attached to it and saved

    def compose(self) -> ComposeResult:
        where = f"  attached to walk {self.session.id}" if self.session else ""
        machine = f"{served_on()}, the server" if served_on() else "this machine"
        yield Static(Text.assemble(("Probes", "bold"), f"  {machine}: GPUs, environment, "
                                   "versions, kernel Xid, network", (where, "dim")),
                     id="titlebar")
        with VerticalScroll(id="probe-results"):
            yield Static(id="probe-table")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.action_run()

    def action_run(self) -> None:
        table = self.query_one("#probe-table", Static)
        runner = self.app.probe_runner  # type: ignore[attr-defined]
        if runner is None:
            table.update(Text("probes not available in this build", style="yellow"))
            return
        table.update(Text("running probes… (each has its own timeout; the screen stays live)",
                          style="italic"))
        self.run_worker(partial(runner, None), thread=True, group="all-probes",
                        exclusive=True, exit_on_error=False)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group != "all-probes":
            return
        table = self.query_one("#probe-table", Static)
        if event.state == WorkerState.ERROR:
            table.update(Text(f"probes failed: {event.worker.error}", style="red"))
        elif event.state == WorkerState.SUCCESS:
            results = list(event.worker.result or [])
            if self.session is not None and results:
                self.session.attach_probes(results)
                self.app.save_session(self.session)  # type: ignore[attr-defined]
            table.update(results_table(results))

    def action_leave(self) -> None:
        self.app.pop_screen()
