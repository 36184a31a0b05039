"""The `cluster` probe: the last `trainmedic probe --nodes` sweep, as facts for tree rules.

A sweep over a Slurm allocation takes a while and is run on purpose; the trees read its saved
result (with its age) instead of starting one.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from trainmedic.probes.base import (
    NO_CONTEXT,
    Budget,
    ProbeContext,
    ProbeResult,
    Status,
    unavailable,
)

if TYPE_CHECKING:
    from trainmedic.cluster.result import ClusterResult

NAME = "cluster"


def cluster_facts(result: ClusterResult | None) -> dict[str, object]:
    """Flat facts of a cluster result (declared in the probe registry); {} when there is none."""
    if result is None:
        return {}
    findings = result.findings

    def hosts(kind: str | None = None, fact_prefix: str = "") -> list[str]:
        return list(dict.fromkeys(
            f.host for f in findings
            if (kind is None or f.kind == kind) and f.fact.startswith(fact_prefix)
        ))

    try:
        age = (datetime.now(UTC) - datetime.fromisoformat(result.time)).total_seconds()
    except (TypeError, ValueError):
        age = -1.0
    return {
        "nodes": result.node_count,
        "answered": result.answered,
        "bad_count": len(result.bad_nodes),
        "bad_nodes": list(result.bad_nodes),
        "verdicts": list(result.verdicts),
        "unreachable_count": len(hosts("unreachable")) + len(hosts("no-answer")),
        "hardware_nodes": hosts("hardware"),
        "xid_nodes": hosts("hardware", "kernel-xid."),
        "gpu_missing_nodes": hosts("hardware", "gpu.missing"),
        "ib_down_nodes": hosts("hardware", "infiniband."),
        "software_mismatch": bool(hosts("software")),
        "env_mismatch": bool(hosts("environment")),
        "stray_process_nodes": hosts("stray-process"),
        "split_facts": [s.fact for s in result.splits],
        "age_s": round(age, 1),
    }


def probe(budget: Budget, _context: ProbeContext = NO_CONTEXT) -> ProbeResult:
    from trainmedic.cluster.store import last_result_path, load_last_result

    result = load_last_result()
    if result is None:
        return unavailable(NAME, f"no cluster sweep saved at {last_result_path()}: run "
                                 "`trainmedic probe --nodes slurm`")
    facts = cluster_facts(result)
    age_s = facts["age_s"]
    assert isinstance(age_s, float)
    when = f"{age_s / 60:.0f} min ago" if age_s >= 0 else "time of the sweep unknown"
    status: Status
    if result.bad_nodes:
        summary = f"{len(result.bad_nodes)} of {result.node_count} nodes differ or fail ({when})"
        status = "fail"
    else:
        summary = f"all {result.node_count} nodes agree ({when})"
        status = "ok"
    evidence = {name: "; ".join(result.verdicts[:3]) or summary for name in facts}
    return ProbeResult(NAME, status, summary, facts, raw="\n".join(result.verdicts),
                       evidence=evidence)
