"""The `cluster` probe: the last `trainmedic probe --nodes` sweep, as facts for tree rules.

A sweep over a Slurm allocation takes a while and is run on purpose; the trees read its saved
result (with its age) instead of starting one.
"""

from __future__ import annotations

from trainmedic.probes.base import Budget, ProbeResult, unavailable

NAME = "cluster"


def probe(budget: Budget) -> ProbeResult:
    from trainmedic.cluster import cluster_facts, last_result_path, load_last_result

    result = load_last_result()
    if not result:
        return unavailable(NAME, f"no cluster sweep saved at {last_result_path()}: run "
                                 "`trainmedic probe --nodes slurm`")
    facts = cluster_facts(result)
    age_s = float(facts.get("age_s", -1.0))  # -1: the saved result has no readable time
    when = f"{age_s / 60:.0f} min ago" if age_s >= 0 else "time of the sweep unknown"
    bad = facts.get("bad_nodes") or []
    verdicts = [str(v) for v in facts.get("verdicts") or []]
    if bad:
        summary = f"{len(bad)} of {facts.get('nodes')} nodes differ or fail ({when})"
        status = "fail"
    else:
        summary = f"all {facts.get('nodes')} nodes agree ({when})"
        status = "ok"
    evidence = {name: "; ".join(verdicts[:3]) or summary for name in facts}
    return ProbeResult(NAME, status, summary, facts, raw="\n".join(verdicts), evidence=evidence)
