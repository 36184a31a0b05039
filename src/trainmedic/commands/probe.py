"""`trainmedic probe [NAME ...]`: read this machine (or every node of an allocation).

Prints a table of probe results (status, one-line summary; `--verbose` adds facts and evidence)
or, with `--json`, the contract form `{"host", "time", "probes"}` the cluster fan-out parses.
Exit 0 when no probe of this machine failed, 1 when one did. The last cluster sweep is a
record, not this machine: it is shown only when asked for (`--last-sweep`, or `cluster` by
name), with its age, and never sets the exit status, so a stale sweep cannot fail a healthy
node in a Slurm prolog or a CI check. Never imports Textual.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
from datetime import UTC, datetime

from trainmedic.commands import add_job_arguments
from trainmedic.errors import UsageError
from trainmedic.probes.base import ProbeContext, ProbeResult

STATUS_STYLE = {"ok": "green", "warn": "yellow", "fail": "bold red", "unavailable": "dim",
                "unknown": "magenta"}


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
    add_job_arguments(parser)
    parser.add_argument("--script", metavar="FILE",
                        help="the job's launch script: its Python, its exports and its memory "
                             "estimate (default: TRAINMEDIC_LAUNCH_SCRIPT)")
    parser.add_argument("--last-sweep", action="store_true",
                        help="also show the last `--nodes` sweep, with its age (it never changes "
                             "the exit status of a local run)")
    # the fan-out options live with the fan-out so the two stay in step
    from trainmedic.commands.probe_nodes import add_cluster_arguments

    add_cluster_arguments(parser)


def payload(results: list[ProbeResult], *, include_raw: bool) -> dict:
    from trainmedic.commands.outputs import stamped

    return stamped("probe", {
        "host": socket.gethostname(),
        "time": datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z"),
        "probes": [r.to_dict(include_raw=include_raw) for r in results],
    })


def failed(results: list[ProbeResult]) -> bool:
    """A probe of this machine failed (a recorded input, such as the last sweep, never counts)."""
    from trainmedic.probes.registry import PROBES

    return any(r.status == "fail" and not (r.name in PROBES and PROBES[r.name].recorded)
               for r in results)


def _print_list(as_json: bool) -> None:
    from trainmedic.probes.registry import PROBES

    if as_json:
        json.dump([{"name": s.name, "description": s.description, "timeout_s": s.timeout,
                    "facts": dict(s.facts)} for s in PROBES.values()], sys.stdout, indent=2)
        sys.stdout.write("\n")
        return
    for spec in PROBES.values():
        facts = ", ".join(f"{k}:{v}" for k, v in spec.facts.items())
        print(f"{spec.name:14} {spec.description}\n{'':14} timeout {spec.timeout:g}s; {facts}")


def _print_table(results: list[ProbeResult], verbose: bool, include_raw: bool,
                 sweep: ProbeResult | None = None) -> None:
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
        if r.source and r.source not in r.summary:
            table.add_row("", "", f"[dim]read from {escape(r.source)}[/]")
        if verbose:
            for fact, value in r.facts.items():
                line = r.evidence.get(fact, "")
                # a str fact such as a GPU model may hold "[...]": escape it like the evidence
                text = escape(f"  {fact} = {value!r}")
                table.add_row("", "", text + (f"  [dim]({escape(line)})[/]" if line else ""))
            if include_raw and r.raw:
                table.add_row("", "", f"[dim]{escape(r.raw[:2000])}[/]")
    console.print(table)
    if sweep is not None:
        console.print(f"[bold]last cluster sweep[/] (a record, not this machine; not counted in "
                      f"the exit status): [{STATUS_STYLE.get(sweep.status, '')}]{sweep.status}[/] "
                      f"{escape(sweep.summary)}")


def run(args: argparse.Namespace) -> int:
    if args.nodes is not None or args.job:  # `--nodes ''` is a usage error, not "local"
        from trainmedic.commands.probe_nodes import run_nodes

        if args.timeout is not None:  # it would be silently ignored on the nodes
            raise UsageError("--timeout limits local probes; with --nodes/--job use "
                             "--node-timeout (each node's probes keep their own limits)")
        return run_nodes(args)
    if args.list:
        _print_list(args.json)
        return 0
    if args.timeout is not None and args.timeout <= 0:
        raise UsageError("--timeout must be a positive number of seconds")
    from trainmedic.probes.registry import require_known
    from trainmedic.probes.runner import run_probes

    require_known(args.names)
    from trainmedic.probes.registry import machine_probes

    context = ProbeContext(launch_command=args.script or "", python=args.python or "",
                           job_pid=args.pid or "")
    results = run_probes(args.names or machine_probes(), context, timeout=args.timeout)
    sweep = run_probes(["cluster"])[0] if args.last_sweep and "cluster" not in args.names \
        else None
    include_raw = not args.no_raw
    if args.json:
        data = payload(results, include_raw=include_raw)
        if sweep is not None:
            data["last_sweep"] = sweep.to_dict(include_raw=include_raw)
        json.dump(data, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        _print_table(results, args.verbose, include_raw and args.verbose, sweep)
    return 1 if failed(results) else 0
