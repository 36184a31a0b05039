"""`trainmedic probe [NAME ...]`: read this machine (or every node of an allocation).

Prints a table of probe results (status, one-line summary; `--verbose` adds facts and evidence)
or, with `--json`, the contract form `{"host", "time", "probes"}` the cluster fan-out parses.
Exit 0 when no probe failed, 1 when one did. Never imports Textual.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
from datetime import UTC, datetime

from trainmedic.errors import UsageError
from trainmedic.probes.base import ProbeResult

STATUS_STYLE = {"ok": "green", "warn": "yellow", "fail": "bold red", "unavailable": "dim"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("names", nargs="*", metavar="NAME", help="probes to run (default: all)")
    parser.add_argument("--json", action="store_true", help="print JSON (host, time, probes)")
    parser.add_argument("--no-raw", action="store_true", help="leave raw tool output out")
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="show facts and evidence under each probe"
    )
    parser.add_argument(
        "--timeout", type=float, default=None, metavar="S",
        help="per-probe time limit in seconds (default: each probe's own)",
    )
    parser.add_argument("--list", action="store_true", help="list the probes and their facts")
    try:  # the fan-out options live with the fan-out so the two stay in step
        from trainmedic.cluster.command import add_cluster_arguments
    except ImportError:
        add_cluster_arguments = _fallback_cluster_arguments
    add_cluster_arguments(parser)


def _fallback_cluster_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--nodes", metavar="SPEC", help="run on these nodes (node[01-04])")
    parser.add_argument("--job", metavar="ID", help="run on every node of this Slurm job")
    parser.add_argument("--node-timeout", type=float, default=None, metavar="S",
                        help="time limit per node for --nodes/--job")


def _check_names(names: list[str]) -> None:
    from trainmedic.probes.registry import probe_names

    valid = probe_names()
    unknown = [n for n in names if n not in valid]
    if unknown:
        raise UsageError(
            f"unknown probe {', '.join(repr(n) for n in unknown)}; valid: {', '.join(valid)}"
        )


def payload(results: list[ProbeResult], *, include_raw: bool) -> dict:
    return {
        "host": socket.gethostname(),
        "time": datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z"),
        "probes": [r.to_dict(include_raw=include_raw) for r in results],
    }


def _print_list() -> None:
    from trainmedic.probes.registry import PROBES

    for spec in PROBES.values():
        facts = ", ".join(f"{k}:{v}" for k, v in spec.facts.items())
        print(f"{spec.name:14} {spec.description}\n{'':14} timeout {spec.timeout:g}s; {facts}")


def _print_table(results: list[ProbeResult], verbose: bool, include_raw: bool) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console(highlight=False, soft_wrap=False)
    table = Table(show_header=True, header_style="bold", expand=False)
    table.add_column("probe", no_wrap=True)
    table.add_column("status", no_wrap=True)
    table.add_column("summary")
    for r in results:
        style = STATUS_STYLE.get(r.status, "")
        table.add_row(r.name, f"[{style}]{r.status}[/]", escape(r.summary))
        if verbose:
            for fact, value in r.facts.items():
                line = r.evidence.get(fact, "")
                text = f"  {fact} = {value!r}" + (f"  [dim]({escape(line)})[/]" if line else "")
                table.add_row("", "", text if line else escape(text))
            if include_raw and r.raw:
                table.add_row("", "", f"[dim]{escape(r.raw[:2000])}[/]")
    console.print(table)


def run(args: argparse.Namespace) -> int:
    if args.nodes or args.job:
        from trainmedic.cluster.command import run_nodes

        return run_nodes(args)
    if args.list:
        _print_list()
        return 0
    if args.timeout is not None and args.timeout <= 0:
        raise UsageError("--timeout must be a positive number of seconds")
    _check_names(args.names)
    from trainmedic.probes.runner import run_probes

    results = run_probes(args.names or None, timeout=args.timeout)
    include_raw = not args.no_raw
    if args.json:
        json.dump(payload(results, include_raw=include_raw), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        _print_table(results, args.verbose, include_raw and args.verbose)
    return 1 if any(r.status == "fail" for r in results) else 0
