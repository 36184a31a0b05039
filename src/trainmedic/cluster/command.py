"""`trainmedic probe --nodes SPEC`: probe every node, compare them, name the faulty ones.

`commands/probe.py` hands over here when `--nodes` is given; `add_cluster_arguments` adds the
options this needs so the two stay in step. Exit 0 when every node answered and agrees, 1 when a
node is faulty or the nodes disagree with no majority, 2 on bad usage.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from trainmedic.errors import UsageError


def add_cluster_arguments(parser: argparse.ArgumentParser) -> None:
    """The fan-out options of `trainmedic probe` (--nodes, --job, --node-timeout, --all-columns)."""
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


def run_nodes(args: argparse.Namespace) -> int:
    """Fan out, aggregate, save the result for trees and the app, print it; exit 1 on bad nodes."""
    from trainmedic.cluster.aggregate import aggregate
    from trainmedic.cluster.fanout import (
        DEFAULT_NODE_TIMEOUT,
        fan_out_srun,
        fan_out_ssh,
        resolve_nodes,
    )
    from trainmedic.cluster.store import save_last_result
    from trainmedic.probes.registry import require_known

    job = getattr(args, "job", None) or None
    spec = (getattr(args, "nodes", None) or ("slurm" if job else "")).strip()
    if not spec:
        raise UsageError("--nodes needs 'slurm' or a host list such as node[01-16]")
    names = [str(n) for n in (getattr(args, "names", None) or [])]
    require_known(names)  # here, rather than once per node
    timeout = getattr(args, "node_timeout", None)
    timeout = DEFAULT_NODE_TIMEOUT if timeout is None else float(timeout)
    if not 0 < timeout <= 3600:
        raise UsageError(f"--node-timeout must be between 0 and 3600 seconds, not {timeout:g}")

    nodes, through_slurm = resolve_nodes(spec, job)
    fanout = os.environ.get("TRAINMEDIC_FANOUT", "").strip().lower()
    if fanout not in ("", "ssh", "pdsh"):
        raise UsageError(f"TRAINMEDIC_FANOUT must be ssh or pdsh, not {fanout!r}")
    if through_slurm or job:
        run = fan_out_srun(nodes, names, job=job, timeout=timeout)
    elif fanout == "pdsh":
        from trainmedic.cluster.pdsh import fan_out_pdsh

        run = fan_out_pdsh(nodes, names, timeout=timeout)
    else:
        run = fan_out_ssh(nodes, names, timeout=timeout)
    result = aggregate(run, spec)
    try:
        saved = str(save_last_result(result))
    except OSError as exc:
        saved = ""
        print(f"trainmedic: warning: could not save the cluster result: {exc}", file=sys.stderr)

    if getattr(args, "json", False):
        print(json.dumps(result, indent=2, default=str))
    else:
        from trainmedic.cluster.render import render_text

        sys.stdout.write(render_text(result, all_columns=bool(getattr(args, "all_columns", False))))
        if saved:
            print(f"(saved to {saved})")
    return 1 if result["bad_nodes"] or result["splits"] else 0
