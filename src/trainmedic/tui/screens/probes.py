"""Run every probe on this machine in the background and show status and summary per probe."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widgets import Footer, Static

from trainmedic.tui.base import PROBES_OFF, AppScreen
from trainmedic.tui.served import served_on
from trainmedic.tui.widgets.evidence import STATUS_MARK

if TYPE_CHECKING:
    from trainmedic.probes.base import ProbeContext, ProbeResult
    from trainmedic.probes.runner import ProbeRunner
    from trainmedic.walk import WalkSession


def results_table(results: list[ProbeResult]) -> Table:
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


class ProbesScreen(AppScreen[None]):
    CSS_PATH = "probes.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("r", "run", "run again"),
        Binding("escape", "leave", "back", key_display="esc"),
        Binding("question_mark", "app.help", "help", key_display="?"),
    ]

    class Answered(Message):
        """Every probe is back (`error`: the runner itself failed)."""

        def __init__(self, results: list[ProbeResult], error: str = "") -> None:
            super().__init__()
            self.results = results
            self.error = error

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
        runner = self.app.probe_runner
        if runner is None:
            table.update(Text(PROBES_OFF, style="yellow"))
            return
        table.update(Text("running probes… (each has its own timeout; the screen stays live)",
                          style="italic"))
        context = self.session.probe_context() if self.session is not None else None
        self._run(runner, context)

    @work(thread=True, group="all-probes", exclusive=True, exit_on_error=False)
    def _run(self, runner: ProbeRunner, context: ProbeContext | None) -> None:
        from trainmedic.probes.base import NO_CONTEXT

        try:
            results = runner(None, context or NO_CONTEXT)
        except Exception as exc:  # the runner never raises; a stand-in might
            self.post_message(self.Answered([], f"{type(exc).__name__}: {exc}"))
            return
        self.post_message(self.Answered(results))

    def on_probes_screen_answered(self, message: Answered) -> None:
        table = self.query_one("#probe-table", Static)
        if message.error:
            table.update(Text(f"probes failed: {message.error}", style="red"))
            return
        if self.session is not None and message.results:
            self.session.attach_probes(message.results)
            self.app.save_session(self.session)
        table.update(results_table(message.results))

    def action_leave(self) -> None:
        self.app.pop_screen()
