"""The cluster view: the last sweep of every node (bad nodes first), and a new sweep on a key.

The table comes from `trainmedic.cluster.render.table_rows`, the rows `trainmedic probe --nodes`
prints (healthy nodes collapsed into one `node[01-16] (16)` row). A new sweep runs
`trainmedic.cluster.command.run_nodes` (the same function as the CLI) in a thread worker, so a
node that never answers leaves the screen usable; the CLI saves the result and this screen
reloads it when the worker ends.
"""

from __future__ import annotations

import argparse
import json
import os
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

from rich.console import RenderableType
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Input, Label, Static
from textual.worker import Worker, WorkerState

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


def default_spec(result: dict | None) -> str:
    """`slurm` inside an allocation, else the spec of the last sweep, else nothing."""
    if os.environ.get("SLURM_JOB_NODELIST"):
        return "slurm"
    return str((result or {}).get("spec") or "")


_QUIT = threading.Event()  # the app is closing: sweeps in flight are stopped, not recorded


def sweep(spec: str) -> int:
    """One sweep exactly as `trainmedic probe --nodes SPEC --json` (output captured by the
    app); the result lands in the state folder. Raises UsageError for a bad SPEC.

    A sweep stopped because the app quit would record every node as silent: the previous
    result is put back instead.
    """
    from trainmedic.cluster import last_result_path
    from trainmedic.cluster.command import run_nodes

    path = last_result_path()
    try:
        before = path.read_text(encoding="utf-8")
    except OSError:
        before = None
    args = argparse.Namespace(nodes=spec, job=None, names=[], node_timeout=None, json=True,
                              all_columns=False, trees=[])
    code = run_nodes(args)
    if _QUIT.is_set():
        try:
            if before is None:
                path.unlink(missing_ok=True)
            else:
                from trainmedic.state import write_json_atomic

                write_json_atomic(path, json.loads(before))
        except (OSError, ValueError):
            pass
    return code


def stop_sweeps() -> None:
    """Called when the app exits: stop the ssh/srun children so the process can end now."""
    _QUIT.set()
    from trainmedic.cluster.fanout import stop_all

    stop_all()


class ClusterScreen(Screen):
    CSS_PATH = str(Path(__file__).with_name("cluster.tcss"))
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("s", "sweep", "sweep now"),
        Binding("slash", "edit_spec", "edit SPEC", key_display="/"),
        Binding("l", "reload", "reload"),
        Binding("escape", "leave", "back", key_display="esc"),
        Binding("question_mark", "app.help", "help", key_display="?"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.result: dict[str, Any] | None = None
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
        yield Footer(compact=True)

    def on_mount(self) -> None:
        _QUIT.clear()  # a new app in the same process (tests, the screenshots script)
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
        try:
            from trainmedic.cluster.render import table_rows

            header, rows = table_rows(result)
        except (KeyError, TypeError, ValueError) as exc:
            summary.update(Text(f"the saved cluster result is unreadable ({exc}); sweep again",
                                style="red"))
            table.display = False
            return
        table.add_columns(*header)
        for cells in rows:
            style = "" if cells[1] == "ok" else "bold red"
            cells = [short_node_label(cells[0]), *cells[1:]]
            table.add_row(*(Text(c, style=style) for c in cells))
        verdicts.update(self._verdicts(result))

    def _summary(self, result: dict) -> Text:
        age, seconds = age_text(str(result.get("time", "")))
        text = Text()
        text.append(f"{result.get('node_count', 0)} nodes via {result.get('method', '?')}: "
                    f"{result.get('answered', 0)} answered, ")
        bad = len(result.get("bad_nodes") or [])
        text.append(f"{bad} bad", style="bold red" if bad else "bold green")
        text.append(f" ({float(result.get('wall_s') or 0):.1f}s)  ")
        text.append(f"SPEC {result.get('spec') or '?'} · swept {age}", style="dim")
        if seconds > STALE_AFTER_S:
            text.append("  (old: s sweeps again)", style="yellow")
        return text

    def _verdicts(self, result: dict) -> RenderableType:
        """Each verdict indented as a block: wrapped, its second line still reads as part of it."""
        from rich.console import Group
        from rich.padding import Padding

        parts: list[RenderableType] = []
        lines = list(result.get("verdicts") or [])
        if lines:
            parts.append(Text("Bad nodes", style="bold"))
            parts.extend(Padding(Text(line), (0, 0, 0, 2)) for line in lines)
        for split in result.get("splits") or []:
            groups = "; ".join(f"{k} on {hosts}" for k, hosts in split.get("groups", {}).items())
            parts.append(Text(f"Inconsistent, no majority: {split.get('fact')}: {groups}",
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
        from trainmedic.cluster.fanout import DEFAULT_NODE_TIMEOUT  # what run_nodes applies

        self.sweeping = spec
        status.update(Text(f"sweeping {spec}… each node has {DEFAULT_NODE_TIMEOUT:g} s; keys "
                           "keep working", style="italic"))
        table = self.query_one("#cluster-table", DataTable)
        if table.display:
            table.focus()
        else:
            self.set_focus(None)  # the screen's keys (s, l, esc, ?) answer while it runs
        self.run_worker(lambda: sweep(spec), thread=True, group="sweep", name=spec,
                        exit_on_error=False)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group != "sweep" or event.state not in (WorkerState.SUCCESS,
                                                                WorkerState.ERROR):
            return
        self.sweeping = None
        status = self.query_one("#sweep-status", Static)
        if event.state == WorkerState.ERROR:
            status.update(Text(f"sweep failed: {event.worker.error}", style="red"))
            self.action_edit_spec()  # nearly always a bad SPEC: typing now mends it, not `s`
            return
        self.action_reload()
        bad = len((self.result or {}).get("bad_nodes") or [])
        status.update(Text(f"sweep of {event.worker.name} done: {bad} bad node(s)",
                           style="bold red" if bad else "green"))
        self.query_one("#cluster-table", DataTable).focus()

    def action_leave(self) -> None:
        spec = self.query_one("#sweep-spec", Input)
        if spec.has_focus and self.result is not None:
            self.query_one("#cluster-table", DataTable).focus()
            return
        self.app.pop_screen()  # a sweep in flight finishes and saves in the background
