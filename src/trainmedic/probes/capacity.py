"""The smallest GPU on this node, for memory estimates that were not told the card size."""

from __future__ import annotations

from trainmedic.probes.base import ProbeResult


def capacity_of(result: ProbeResult) -> float | None:
    """The smallest card's memory in MiB from a `gpu` probe result; None when it has none."""
    value = result.facts.get("min_memory_total_mib")
    if result.status in ("unavailable", "unknown") or isinstance(value, bool) \
            or not isinstance(value, int | float) or value <= 0:
        return None
    return float(value)


def smallest_card_mib(timeout: float = 10.0) -> float | None:
    """Run the `gpu` probe (under the runner's deadline) for the smallest card; None when it
    fails in any way: the capacity is optional, an estimate then assumes a card size."""
    from trainmedic.probes.runner import run_probes

    try:
        results = run_probes(["gpu"], timeout=timeout)
    except Exception:
        return None
    return capacity_of(results[0]) if results else None
