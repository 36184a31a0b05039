"""`trainmedic probe --nodes SPEC`: probe every node, compare them, name the faulty ones.

`commands/probe.py` hands over here when `--nodes` is given; `add_cluster_arguments` adds the
options this needs so the two stay in step. Exit 0 when every node answered and agrees, 1 when a
node is faulty or the nodes disagree with no majority, 2 on bad usage.
"""

from __future__ import annotations

import argparse
import json
import sys

from trainmedic.cluster.result import ClusterResult


def add_cluster_arguments(parser: argparse.ArgumentParser) -> None:
    """The fan-out options of `trainmedic probe` (--nodes, --job, --node-timeout, --all-columns,
    --yes)."""
    parser.add_argument(
        "--nodes", metavar="SPEC",
        help="probe every node: 'slurm' (this allocation, or --job ID; through srun) or a host "
             "list such as node[01-16],gpu-a7 (through ssh, or pdsh with TRAINMEDIC_FANOUT=pdsh);"
             " each node runs $TRAINMEDIC_REMOTE (default: trainmedic) probe --json --no-raw",
    )
    parser.add_argument("--job", metavar="ID", help="with --nodes: the nodes of this Slurm job")
    parser.add_argument(
        "--node-timeout", type=float, metavar="S", default=None,
        help="seconds each node has to answer (default 60)",
    )
    parser.add_argument(
        "--all-columns", action="store_true",
        help="with --nodes: show every column and every node, not only what differs",
    )
    parser.add_argument(
        "--yes", action="store_true",
        help="with --nodes: run a sweep that may take over an hour without asking",
    )


def _confirm(question: str) -> bool:
    """Asked on a terminal; without one, a long sweep needs --yes (nobody can answer)."""
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        return False
    sys.stderr.write(f"trainmedic: {question}. Run it? [y/N] ")
    sys.stderr.flush()
    return sys.stdin.readline().strip().lower() in ("y", "yes")


def run_nodes(args: argparse.Namespace) -> int:
    """Sweep, save the result for trees and the app, print it; exit 1 on bad nodes."""
    from trainmedic.cluster.fanout import DEFAULT_NODE_TIMEOUT
    from trainmedic.cluster.store import save_last_result
    from trainmedic.cluster.sweep import sweep
    from trainmedic.probes.registry import require_known

    names = [str(n) for n in args.names]
    require_known(names)  # here, rather than once per node
    timeout = DEFAULT_NODE_TIMEOUT if args.node_timeout is None else float(args.node_timeout)
    result = sweep(args.nodes or "", names, job=args.job or None, timeout=timeout,
                   confirm=None if args.yes else _confirm)
    try:
        saved = str(save_last_result(result))
    except OSError as exc:
        saved = ""
        print(f"trainmedic: warning: could not save the cluster result: {exc}", file=sys.stderr)
    if args.json:
        from trainmedic.commands.outputs import stamped

        print(json.dumps(stamped("cluster", result.to_dict()), indent=2, default=str))
    else:
        sys.stdout.write(render_text(result, all_columns=args.all_columns))
        if saved:
            print(f"(saved to {saved})")
    return 1 if result.failed else 0


def render_text(result: ClusterResult, *, all_columns: bool = False,
                width: int | None = None) -> str:
    """The table, the verdicts and the splits as the terminal shows them."""
    from rich import box
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from trainmedic.cluster.render import table_rows, value_text

    header, rows = table_rows(result, all_columns)
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, padding=(0, 1),
                  collapse_padding=True)
    widest_node = max((len(cells[0]) for cells in rows), default=4)
    for i, name in enumerate(header):
        if i == 0:  # the node name is what people copy: never folded unless huge
            table.add_column(name, no_wrap=True, min_width=min(widest_node, 28),
                             overflow="fold")
        elif name == "env":
            table.add_column(name, overflow="fold")
        else:  # a cut value must look cut: "2.21…", never a plausible "2.21"
            table.add_column(name, no_wrap=True, overflow="ellipsis")
    for cells in rows:
        style = None if cells[1] == "ok" else "bold red"
        # values come from the nodes: a "[/]" in one must print, not raise a MarkupError
        table.add_row(*(Text(cell) for cell in cells), style=style)
    if all_columns:  # everything was asked for: let the table take its natural width
        width = max(width or 0, 240)
    console = Console(width=width, record=True, highlight=False, soft_wrap=False,
                      force_terminal=None)
    with console.capture() as capture:
        console.print(f"{result.node_count} nodes via {result.method}: {result.answered} "
                      f"answered, {len(result.bad_nodes)} bad ({result.wall_s:.1f}s)")
        console.print(table)
        if result.verdicts:
            console.print("Bad nodes:", style="bold")
            for line in result.verdicts:  # one line each, unwrapped: people grep them
                console.print(f"  {line}", markup=False, soft_wrap=True)
        for split in result.splits:
            groups = "; ".join(f"{value_text(k)} on {hosts}" for k, hosts in split.groups.items())
            console.print(f"Inconsistent, no majority: {split.fact}: {groups}", markup=False,
                          soft_wrap=True)
        if not result.verdicts and not result.splits:
            console.print("All nodes agree; no faulty node found.")
    return "".join(line.rstrip() + "\n" for line in capture.get().splitlines())
