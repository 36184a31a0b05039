"""The `memory` probe: the theoretical memory of the job's launch script, as tree facts.

Seed 000's first rule for OOM is to compute, not guess. This probe runs the memory model over
the launch script named by `TRAINMEDIC_LAUNCH_SCRIPT` (the app also feeds it a pasted or loaded
command through `from_text`), so the OOM tree can suggest "the configuration does not fit" with
the numbers as evidence.
"""

from __future__ import annotations

import os

from trainmedic.errors import TrainmedicError
from trainmedic.probes.base import Budget, ProbeResult, unavailable

NAME = "memory"
SCRIPT_ENV = "TRAINMEDIC_LAUNCH_SCRIPT"
CAPACITY_ENV = "TRAINMEDIC_GPU_MEMORY"  # e.g. 80GiB; else the gpu probe, else 80 GiB


def _capacity(budget: Budget | None) -> tuple[float | None, str | None]:
    from trainmedic.memory.inputs import parse_capacity, probe_capacity

    given = os.environ.get(CAPACITY_ENV)
    if given:
        try:
            return parse_capacity(given), CAPACITY_ENV
        except TrainmedicError:  # its message names --gpu-memory; this came from the variable
            raise TrainmedicError(f"{CAPACITY_ENV}={given!r} is not a size such as 80GiB") \
                from None
    if budget is not None and budget.remaining() > 1.0:
        total = probe_capacity(timeout=min(budget.remaining() - 0.5, 8.0))
        if total:
            return total, "gpu probe"
    return None, None


def from_text(text: str, source: str = "<pasted>", budget: Budget | None = None) -> ProbeResult:
    """Estimate from a launch script or a single pasted command line."""
    from trainmedic.memory import config_from_script, estimate, memory_facts, require, run_checks

    try:
        config = require(config_from_script(text, path=source))
        capacity, capacity_source = _capacity(budget)
        report = estimate(config, capacity_mib=capacity, capacity_source=capacity_source,
                          suggest=False)
    except TrainmedicError as exc:
        return unavailable(NAME, str(exc))
    facts = memory_facts(report)
    failed = [c for c in run_checks(config) if c.get("status") == "fail"]
    facts["check_failures"] = len(failed)
    total, capacity_gib = facts["total_gib"], facts["capacity_gib"]
    assumed = "" if capacity is not None else f" (assumed; set {CAPACITY_ENV})"
    line = (f"{source}: about {total:.1f} GiB on the most loaded GPU (stage "
            f"{facts['most_loaded_stage']}) of {capacity_gib:.0f} GiB{assumed}: "
            f"{facts['verdict']}")
    evidence = {"fits": line, "verdict": line, "total_gib": line}
    if failed:
        evidence["check_failures"] = "; ".join(c["message"] for c in failed[:3])
    status = "ok" if facts["fits"] and not failed else "warn" if facts["fits"] else "fail"
    return ProbeResult(NAME, status, line, facts, raw="", evidence=evidence)


def probe(budget: Budget) -> ProbeResult:
    path = os.environ.get(SCRIPT_ENV)
    if not path:
        return unavailable(NAME, f"no launch script: set {SCRIPT_ENV}=path/to/launch.sh "
                                 "(or load the launch command in the app)")
    from trainmedic.memory.launch_script import read_script

    try:  # bounded and checked: the variable may name a binary or a huge file
        text = read_script(path)
    except TrainmedicError as exc:
        return unavailable(NAME, str(exc))
    return from_text(text, path, budget)
