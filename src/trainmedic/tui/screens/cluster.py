"""The cluster view: the last sweep of every node (bad nodes first), and a new sweep on a key.

The table comes from `trainmedic.cluster.render.table_rows`, the rows `trainmedic probe --nodes`
prints (healthy nodes collapsed into one `node[01-16] (16)` row). A new sweep runs
`trainmedic.cluster.sweep.sweep` (the same function as the CLI) in a thread worker, so a node
that never answers leaves the screen usable; the worker saves the result it returns and hands it
to the screen.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from typing import TYPE_CHECKING, ClassVar

from rich.console import RenderableType
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import DataTable, Input, Label, Static

from trainmedic.tui.base import AppScreen
from trainmedic.tui.widgets.footer import KeysFooter

if TYPE_CHECKING:
    from trainmedic.cluster.result import ClusterResult
    from trainmedic.tui.app import TrainmedicApp

NO_SWEEP = ("No cluster sweep yet. Type a SPEC below and press enter: `slurm` inside an "
            "allocation, or a host list such as node[01-16],gpu-a7 (through ssh). The shell "
            "equivalent is `trainmedic probe --nodes SPEC`.")
STALE_AFTER_S = 3600.0
NODE_COLUMN = 30  # a scattered healthy set (node[002-003,005-006,…]) must not push the rest off


def short_node_label(label: str, width: int = NODE_COLUMN) -> str:
    """`node[002-003,005-006,…] (42)`: cut inside the host list, never the count."""
    if len(label) <= width:
        return label
    hosts, _, count = label.rpartition(" (")
    if not hosts:
        return label[: width - 1] + "…"
    tail = f"… ({count}"
    return hosts[: max(1, width - len(tail))] + tail


def _now() -> datetime:
    return datetime.now(UTC)


def age_text(time_iso: str, now: datetime | None = None) -> tuple[str, float]:
    """("12 min ago", seconds) for a result's ISO time; ("age unknown", -1) if unreadable."""
    try:
        then = datetime.fromisoformat(time_iso)
    except (TypeError, ValueError):
        return "age unknown", -1.0
    if then.tzinfo is None:
        then = then.replace(tzinfo=UTC)
    seconds = ((now or _now()) - then).total_seconds()
    if seconds < 60:
        return "just now", seconds
    for size, unit in ((86400, "d"), (3600, "h"), (60, "min")):
        if seconds >= size:
            return f"{int(seconds // size)} {unit} ago", seconds
    return "just now", seconds  # pragma: no cover - the loop always returns


def default_spec(result: ClusterResult | None) -> str:
    """`slurm` inside an allocation, else the spec of the last sweep, else nothing."""
    if os.environ.get("SLURM_JOB_NODELIST"):
        return "slurm"
    return result.spec if result is not None else ""


class ClusterScreen(AppScreen[None]):
    CSS_PATH = "cluster.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("s", "sweep", "sweep now"),
        Binding("e", "edit_spec", "edit SPEC"),
        Binding("l", "reload", "reload"),
        Binding("escape", "leave", "back", key_display="esc"),
    ]

    class Swept(Message):
        """A sweep ended: its result (already saved, or `save_error` says why not), or why it
        could not run (`error`, nearly always a bad SPEC)."""

        def __init__(self, spec: str, result: ClusterResult | None, error: str = "",
                     save_error: str = "") -> None:
            super().__init__()
            self.spec = spec
            self.result = result
            self.error = error
            self.save_error = save_error

    def __init__(self) -> None:
        super().__init__()
        self.result: ClusterResult | None = None
        self.sweeping: str | None = None  # the SPEC of the sweep in flight

    def compose(self) -> ComposeResult:
        yield Static(Text.assemble(("Cluster", "bold"), "  every node probed; the node that "
                                   "differs, first"), id="titlebar")
        yield Static(id="cluster-summary")
        yield DataTable(id="cluster-table", cursor_type="row", zebra_stripes=False)
        yield Static(id="cluster-verdicts")
        with Horizontal(id="sweep-row"):
            yield Label("SPEC ", id="sweep-label")
            yield Input(placeholder="slurm, or node[01-16],gpu-a7", id="sweep-spec")
        yield Static(id="sweep-status")
        yield KeysFooter()

    def on_mount(self) -> None:
        self.action_reload()
        self.query_one("#sweep-spec", Input).value = default_spec(self.result)
        if self.result is None:
            self.query_one("#sweep-spec", Input).focus()
        else:
            self.query_one("#cluster-table", DataTable).focus()

    # -- showing the last result ----------------------------------------------------------------
    def action_reload(self) -> None:
        from trainmedic.cluster import load_last_result

        self.result = load_last_result()
        self.show_result()

    def show_result(self) -> None:
        summary = self.query_one("#cluster-summary", Static)
        table = self.query_one("#cluster-table", DataTable)
        verdicts = self.query_one("#cluster-verdicts", Static)
        table.clear(columns=True)
        result = self.result
        if result is None:
            summary.update(Text(NO_SWEEP, style="yellow"))
            verdicts.update("")
            table.display = False
            return
        table.display = True
        summary.update(self._summary(result))
        from trainmedic.cluster.render import table_rows

        header, rows = table_rows(result)
        table.add_columns(*header)
        for cells in rows:
            style = "" if cells[1] == "ok" else "bold red"
            cells = [short_node_label(cells[0]), *cells[1:]]
            table.add_row(*(Text(c, style=style) for c in cells))
        verdicts.update(self._verdicts(result))

    def _summary(self, result: ClusterResult) -> Text:
        age, seconds = age_text(result.time)
        text = Text()
        text.append(f"{result.node_count} nodes via {result.method}: {result.answered} "
                    "answered, ")
        bad = len(result.bad_nodes)
        text.append(f"{bad} bad", style="bold red" if bad else "bold green")
        text.append(f" ({result.wall_s:.1f}s)  ")
        text.append(f"SPEC {result.spec or '?'} · swept {age}", style="dim")
        if seconds > STALE_AFTER_S:
            text.append("  (old: s sweeps again)", style="yellow")
        return text

    def _verdicts(self, result: ClusterResult) -> RenderableType:
        """Each verdict indented as a block: wrapped, its second line still reads as part of it."""
        from rich.console import Group
        from rich.padding import Padding

        from trainmedic.cluster.render import value_text

        parts: list[RenderableType] = []
        if result.verdicts:
            parts.append(Text("Bad nodes", style="bold"))
            parts.extend(Padding(Text(line), (0, 0, 0, 2)) for line in result.verdicts)
        for split in result.splits:
            groups = "; ".join(f"{value_text(k)} on {hosts}" for k, hosts in split.groups.items())
            parts.append(Text(f"Inconsistent, no majority: {split.fact}: {groups}",
                              style="yellow"))
        if not parts:
            parts.append(Text("All nodes agree; no faulty node found.", style="green"))
        return Group(*parts)

    # -- a new sweep ------------------------------------------------------------------------------
    def action_edit_spec(self) -> None:
        self.query_one("#sweep-spec", Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_sweep()

    def action_sweep(self) -> None:
        status = self.query_one("#sweep-status", Static)
        if self.sweeping is not None:
            status.update(Text(f"a sweep of {self.sweeping} is still running", style="yellow"))
            return
        spec = self.query_one("#sweep-spec", Input).value.strip()
        if not spec:
            status.update(Text("type a SPEC first (slurm, or a host list)", style="yellow"))
            self.action_edit_spec()
            return
        from trainmedic.cluster.fanout import DEFAULT_NODE_TIMEOUT
        from trainmedic.cluster.sweep import stop_sweeps

        self.sweeping = spec
        status.update(Text(f"sweeping {spec}… each node has {DEFAULT_NODE_TIMEOUT:g} s; keys "
                           "keep working", style="italic"))
        table = self.query_one("#cluster-table", DataTable)
        if table.display:
            table.focus()
        else:
            self.set_focus(None)  # the screen's keys (s, l, esc, ?) answer while it runs
        self.app.stop_on_exit(stop_sweeps)  # quitting must not wait a node timeout
        self._sweep(spec, self.app)

    @work(thread=True, group="sweep", exit_on_error=False)
    def _sweep(self, spec: str, app: TrainmedicApp) -> None:
        """The sweep, then its result saved for trees and the next visit, even when this screen
        was left meanwhile; not when the app quit mid-sweep: stopped, every node would read as
        silent, so the last good result stays."""
        from trainmedic.cluster.store import save_last_result
        from trainmedic.cluster.sweep import sweep

        try:
            result = sweep(spec)
        except Exception as exc:  # UsageError for a bad SPEC; anything else is shown too
            self.post_message(self.Swept(spec, None, str(exc)))
            return
        if app.closing:
            return
        save_error = ""
        try:
            save_last_result(result)
        except OSError as exc:
            save_error = str(exc)
        self.post_message(self.Swept(spec, result, save_error=save_error))

    def on_cluster_screen_swept(self, message: Swept) -> None:
        self.sweeping = None
        status = self.query_one("#sweep-status", Static)
        if message.result is None:
            status.update(Text(f"sweep failed: {message.error}", style="red"))
            self.action_edit_spec()  # nearly always a bad SPEC: typing now mends it, not `s`
            return
        self.result = message.result
        self.show_result()
        bad = len(message.result.bad_nodes)
        line = Text(f"sweep of {message.spec} done: {bad} bad node(s)",
                    style="bold red" if bad else "green")
        if message.save_error:
            line.append(f" (not saved: {message.save_error})", style="yellow")
        status.update(line)
        self.query_one("#cluster-table", DataTable).focus()

    def action_leave(self) -> None:
        spec = self.query_one("#sweep-spec", Input)
        if spec.has_focus and self.result is not None:
            self.query_one("#cluster-table", DataTable).focus()
            return
        self.app.pop_screen()  # a sweep in flight finishes and saves in the background
