"""One cluster sweep: probe every node, compare them, and return the result.

Neither prints nor parses arguments, so the command line and the app's cluster screen (in a
thread worker) run the same sweep. Saving the result is the caller's choice.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

from trainmedic.cluster import fanout
from trainmedic.cluster.fanout import DEFAULT_NODE_TIMEOUT
from trainmedic.cluster.result import ClusterResult
from trainmedic.errors import UsageError

FANOUT_ENV = "TRAINMEDIC_FANOUT"
MAX_NODE_TIMEOUT = 3600.0
LONG_SWEEP_S = 3600.0  # a sweep that may take longer than this is confirmed first


def worst_case_s(node_count: int, timeout: float, *, through_slurm: bool) -> float:
    """How long a sweep takes when every node hangs: srun runs one step for all nodes; ssh and
    pdsh go FANOUT_WIDTH nodes at a time, each with the full timeout."""
    if through_slurm:
        return timeout
    return -(-node_count // fanout.FANOUT_WIDTH) * timeout


def _duration(seconds: float) -> str:
    return f"{seconds / 3600:.1f} h" if seconds >= 3600 else f"{seconds / 60:.0f} min"


def sweep(spec: str, names: Sequence[str] = (), *, job: str | None = None,
          timeout: float = DEFAULT_NODE_TIMEOUT,
          confirm: Callable[[str], bool] | None = None) -> ClusterResult:
    """Run `trainmedic probe NAMES --json` on every node of `spec` ('slurm', or a host list
    such as node[01-16]; with `job`, that Slurm job's nodes) and aggregate the answers.

    UsageError for a bad spec, timeout or TRAINMEDIC_FANOUT; a node that fails is a finding in
    the result, never an exception. `names` are not checked here: unknown probes come back
    `unavailable` from every node (the command line refuses them before calling this).
    `confirm` is asked (with what it would cost) before a sweep that may run for over an hour
    (`LONG_SWEEP_S`): a typo such as `a[1-65536]` must not hold a terminal for a day; UsageError
    when it says no.
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
    worst = worst_case_s(len(nodes), timeout, through_slurm=through_slurm or bool(job))
    if confirm is not None and worst > LONG_SWEEP_S:
        question = (f"{len(nodes)} nodes, {fanout.FANOUT_WIDTH} at a time, up to {timeout:g} s "
                    f"each: up to {_duration(worst)} if nodes hang")
        if not confirm(question):
            raise UsageError(f"sweep not started ({question}); narrow the host list, lower "
                             "--node-timeout, or add --yes")
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
