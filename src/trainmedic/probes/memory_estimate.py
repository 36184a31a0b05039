"""The `memory` probe: the theoretical memory of the job's launch script, as tree facts.

Seed 000's first rule for OOM is to compute, not guess. This probe runs the memory model over
the walk's launch command (`ProbeContext.launch_command`: a pasted command or the path of a
script) or else the script named by `TRAINMEDIC_LAUNCH_SCRIPT`, so the OOM tree can suggest "the
configuration does not fit" with the numbers as evidence.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from trainmedic.errors import TrainmedicError
from trainmedic.probes.base import (
    NO_CONTEXT,
    Budget,
    ProbeContext,
    ProbeResult,
    Status,
    unavailable,
)

if TYPE_CHECKING:
    from trainmedic.memory.model import MemoryReport

NAME = "memory"
SCRIPT_ENV = "TRAINMEDIC_LAUNCH_SCRIPT"
CAPACITY_ENV = "TRAINMEDIC_GPU_MEMORY"  # e.g. 80GiB; else the gpu probe, else 80 GiB


def _capacity(budget: Budget | None) -> tuple[float | None, str | None]:
    from trainmedic.memory.capacity import parse_capacity

    given = os.environ.get(CAPACITY_ENV)
    if given:
        try:
            return parse_capacity(given), CAPACITY_ENV
        except ValueError:
            raise TrainmedicError(f"{CAPACITY_ENV}={given!r} is not a size such as 80GiB") \
                from None
    if budget is not None and budget.remaining() > 1.0:
        from trainmedic.probes import gpu
        from trainmedic.probes.capacity import capacity_of

        try:  # the gpu probe itself, inside this probe's own deadline: not the runner again
            total = capacity_of(gpu.probe(Budget(min(budget.remaining() - 0.5, 8.0))))
        except Exception:  # the capacity is optional: any failure means "assumed"
            total = None
        if total:
            return total, "gpu probe"
    return None, None


def memory_facts(report: MemoryReport) -> dict[str, object]:
    """Flat facts for tree rules (e.g. `total_gib > capacity_gib`)."""
    return {
        "total_gib": report.worst.total_mib / 1024,
        "megatron_total_gib": report.megatron.total_mib / 1024,
        "capacity_gib": report.capacity_mib / 1024,
        "fits": report.verdict != "does not fit",
        "verdict": report.verdict,
        "most_loaded_stage": report.worst.stage,
    }


def from_text(text: str, source: str = "<pasted>", budget: Budget | None = None) -> ProbeResult:
    """Estimate from a launch script or a single pasted command line."""
    from trainmedic.memory import config_from_script, estimate, require, run_checks

    try:
        config = require(config_from_script(text, path=source))
        capacity, capacity_source = _capacity(budget)
        report = estimate(config, capacity_mib=capacity, capacity_source=capacity_source)
    except TrainmedicError as exc:
        return unavailable(NAME, str(exc))
    facts = memory_facts(report)
    failed = [c for c in run_checks(config) if c.status == "fail"]
    facts["check_failures"] = len(failed)
    fits = report.verdict != "does not fit"
    assumed = "" if capacity is not None else f" (assumed; set {CAPACITY_ENV})"
    line = (f"{source}: about {report.worst.total_mib / 1024:.1f} GiB on the most loaded GPU "
            f"(stage {report.worst.stage}) of {report.capacity_mib / 1024:.0f} GiB{assumed}: "
            f"{report.verdict}")
    evidence = {"fits": line, "verdict": line, "total_gib": line}
    if failed:
        evidence["check_failures"] = "; ".join(c.message for c in failed[:3])
    status: Status = "ok" if fits and not failed else "warn" if fits else "fail"
    return ProbeResult(NAME, status, line, facts, raw="", evidence=evidence)


def probe(budget: Budget, context: ProbeContext = NO_CONTEXT) -> ProbeResult:
    from trainmedic.launch.script import read_launch_text, read_script

    try:  # bounded and checked: the text may name a binary or a huge file
        if context.launch_command.strip():
            text, source = read_launch_text(context.launch_command)
        else:
            path = os.environ.get(SCRIPT_ENV)
            if not path:
                return unavailable(NAME, f"no launch script: set {SCRIPT_ENV}=path/to/launch.sh "
                                         "(or load the launch command in the app)")
            text, source = read_script(path), path
    except TrainmedicError as exc:
        return unavailable(NAME, str(exc))
    return from_text(text, source, budget)
