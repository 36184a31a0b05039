"""One cluster sweep: probe every node, compare them, and return the result.

Neither prints nor parses arguments, so the command line and the app's cluster screen (in a
thread worker) run the same sweep. Saving the result is the caller's choice.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from trainmedic.cluster import fanout
from trainmedic.cluster.fanout import DEFAULT_NODE_TIMEOUT
from trainmedic.cluster.result import ClusterResult
from trainmedic.errors import UsageError

FANOUT_ENV = "TRAINMEDIC_FANOUT"
MAX_NODE_TIMEOUT = 3600.0


def sweep(spec: str, names: Sequence[str] = (), *, job: str | None = None,
          timeout: float = DEFAULT_NODE_TIMEOUT) -> ClusterResult:
    """Run `trainmedic probe NAMES --json` on every node of `spec` ('slurm', or a host list
    such as node[01-16]; with `job`, that Slurm job's nodes) and aggregate the answers.

    UsageError for a bad spec, timeout or TRAINMEDIC_FANOUT; a node that fails is a finding in
    the result, never an exception. `names` are not checked here: unknown probes come back
    `unavailable` from every node (the command line refuses them before calling this).
    """
    from trainmedic.cluster.aggregate import aggregate

    spec = (spec or ("slurm" if job else "")).strip()
    if not spec:
        raise UsageError("--nodes needs 'slurm' or a host list such as node[01-16]")
    if not 0 < timeout <= MAX_NODE_TIMEOUT:
        raise UsageError(f"--node-timeout must be between 0 and 3600 seconds, not {timeout:g}")
    nodes, through_slurm = fanout.resolve_nodes(spec, job)
    how = os.environ.get(FANOUT_ENV, "").strip().lower()
    if how not in ("", "ssh", "pdsh"):
        raise UsageError(f"{FANOUT_ENV} must be ssh or pdsh, not {how!r}")
    probe_names = [str(n) for n in names]
    if through_slurm or job:
        run = fanout.fan_out_srun(nodes, probe_names, job=job, timeout=timeout)
    elif how == "pdsh":
        from trainmedic.cluster.pdsh import fan_out_pdsh

        run = fan_out_pdsh(nodes, probe_names, timeout=timeout)
    else:
        run = fanout.fan_out_ssh(nodes, probe_names, timeout=timeout)
    return aggregate(run, spec)


def stop_sweeps() -> None:
    """Stop the ssh/srun children of every sweep in flight (the app is closing)."""
    fanout.stop_all()
