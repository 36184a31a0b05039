"""Run every probe on this machine in the background; each row fills in as its probe comes back.

A hung nvidia-smi takes its whole timeout; the env, versions and kernel probes answer in a
fraction of a second. Rows appear as results arrive (the runner streams them; one typed message
per result), and a probe still running shows how long it has been at it.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, ClassVar

from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.message import Message
from textual.timer import Timer
from textual.widgets import Static

from trainmedic.tui.base import PROBES_OFF, AppScreen
from trainmedic.tui.served import served_on
from trainmedic.tui.widgets.evidence import STATUS_MARK
from trainmedic.tui.widgets.footer import KeysFooter

if TYPE_CHECKING:
    from trainmedic.probes.base import ProbeContext, ProbeResult
    from trainmedic.probes.runner import ProbeRunner
    from trainmedic.walk import WalkSession

RUNNING_MARK = ("…   ", "italic")


def results_table(rows: list[ProbeResult | tuple[str, float]]) -> Table:
    """Status, name, summary, time: a grid, so a long summary wraps under itself and the
    column of names stays readable. A probe still out keeps its row and shows how long it has
    been running."""
    grid = Table.grid(padding=(0, 1), expand=True)
    grid.add_column(no_wrap=True)
    grid.add_column(no_wrap=True, style="bold")
    grid.add_column(ratio=1)
    grid.add_column(no_wrap=True, style="dim", justify="right")
    now = time.monotonic()
    for row in rows:
        if isinstance(row, tuple):
            name, started = row
            grid.add_row(Text(RUNNING_MARK[0], style=RUNNING_MARK[1]), name,
                         Text("running…", style="italic dim"), f"{now - started:.1f}s")
            continue
        mark, style = STATUS_MARK.get(row.status, ("?   ", ""))
        summary = Text(row.summary)
        if row.source and row.source not in row.summary:
            summary.append(f"\nread from {row.source}", style="dim")
        grid.add_row(Text(mark, style=style), row.name, summary, f"{row.duration_s:.1f}s")
    return grid


class ProbesScreen(AppScreen[None]):
    CSS_PATH = "probes.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("r", "run", "run again"),
        Binding("escape", "leave", "back", key_display="esc"),
        Binding("question_mark", "app.help", "help", key_display="?"),
    ]

    class Arrived(Message):
        """One probe is back (or came back changed by a cross-check)."""

        def __init__(self, run: int, result: ProbeResult) -> None:
            super().__init__()
            self.run = run
            self.result = result

    class Finished(Message):
        """Every probe of run `run` is back (`error`: the runner itself failed)."""

        def __init__(self, run: int, error: str = "") -> None:
            super().__init__()
            self.run = run
            self.error = error

    def __init__(self, session: WalkSession | None = None) -> None:
        super().__init__()
        self.session = session  # opened from a walk: results are attached to it and saved
        self._run_id = 0
        self._order: list[str] = []  # rows keep their place while they fill in
        self._results: dict[str, ProbeResult] = {}
        self._started = 0.0
        self._finished = True
        self._ticker: Timer | None = None

    def compose(self) -> ComposeResult:
        where = f"  attached to walk {self.session.id}" if self.session else ""
        machine = f"{served_on()}, the server" if served_on() else "this machine"
        yield Static(Text.assemble(("Probes", "bold"), f"  {machine}: GPUs, environment, "
                                   "versions, kernel Xid, network", (where, "dim")),
                     id="titlebar")
        with VerticalScroll(id="probe-results"):
            yield Static(id="probe-table")
        yield KeysFooter()

    def on_mount(self) -> None:
        self.action_run()

    def action_run(self) -> None:
        table = self.query_one("#probe-table", Static)
        runner = self.app.probe_runner
        if runner is None:
            table.update(Text(PROBES_OFF, style="yellow"))
            return
        from trainmedic.probes.registry import PROBES

        self._run_id += 1
        self._results = {}
        self._order = list(PROBES)
        self._started = time.monotonic()
        self._finished = False
        self._show()
        if self._ticker is None:
            self._ticker = self.set_interval(0.5, self._tick)
        context = self.session.probe_context() if self.session is not None else None
        self._run(runner, context, self._run_id)

    def _tick(self) -> None:
        if not self._finished:
            self._show()

    def _show(self) -> None:
        rows: list[ProbeResult | tuple[str, float]] = []
        for name in [*self._order, *(n for n in self._results if n not in self._order)]:
            result = self._results.get(name)
            if result is not None:
                rows.append(result)
            elif not self._finished:
                rows.append((name, self._started))
        self.query_one("#probe-table", Static).update(results_table(rows))

    @work(thread=True, group="all-probes", exit_on_error=False)
    def _run(self, runner: ProbeRunner, context: ProbeContext | None, run: int) -> None:
        from trainmedic.probes.base import NO_CONTEXT
        from trainmedic.probes.runner import StreamingRunner

        try:
            if isinstance(runner, StreamingRunner):
                for result in runner.stream(None, context or NO_CONTEXT):
                    self.post_message(self.Arrived(run, result))
            else:  # a stand-in: everything at once
                for result in runner(None, context or NO_CONTEXT):
                    self.post_message(self.Arrived(run, result))
        except Exception as exc:  # the runner never raises; a stand-in might
            self.post_message(self.Finished(run, f"{type(exc).__name__}: {exc}"))
            return
        self.post_message(self.Finished(run))

    def on_probes_screen_arrived(self, message: Arrived) -> None:
        if message.run != self._run_id:  # an earlier run, still draining: its rows are gone
            return
        self._results[message.result.name] = message.result
        self._show()

    def on_probes_screen_finished(self, message: Finished) -> None:
        if message.run != self._run_id:
            return
        self._finished = True
        if message.error:
            self.query_one("#probe-table", Static).update(
                Text(f"probes failed: {message.error}", style="red"))
            return
        results = list(self._results.values())
        if self.session is not None and results:
            self.session.attach_probes(results)
            self.app.save_session(self.session)
        self._show()

    def action_leave(self) -> None:
        self.app.pop_screen()
