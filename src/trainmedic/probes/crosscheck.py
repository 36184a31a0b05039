"""Where two probes disagree, say so: the disagreement is often the clue.

Each probe sees one side. nvidia-smi reporting 70 GiB used on a GPU while listing no compute
process means the process lives where this shell cannot see it: another container, another PID
namespace (or a process nvidia-smi may not name). The gpu probe and the topology matrix listing
different GPU counts means a GPU is missing from one view. These checks run once every probe of
a run is back, and amend (a copy of) the result that should carry the finding.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from trainmedic.probes.base import ProbeResult

HIDDEN_MIB = 2048.0  # an idle GPU shows a few hundred MiB used; a job shows GiBs


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _answered(result: ProbeResult | None) -> bool:
    return result is not None and result.status in ("ok", "warn", "fail")


def _copy(result: ProbeResult) -> ProbeResult:
    """A result to amend: the original may already be on a screen, in another thread."""
    return replace(result, facts=dict(result.facts), evidence=dict(result.evidence))


def _hidden_memory(gpu: ProbeResult, processes: ProbeResult) -> ProbeResult | None:
    used = _number(gpu.facts.get("max_memory_used_mib"))
    if used is None or processes.facts.get("count") != 0 or used < HIDDEN_MIB:
        return None
    processes = _copy(processes)
    processes.facts["hidden_memory_mib"] = used
    where = gpu.evidence.get("max_memory_used_mib") or f"{used / 1024:.1f} GiB used"
    line = (f"no compute process visible here, yet {where} (gpu probe): a process in another "
            "container or PID namespace holds it")
    processes.evidence["hidden_memory_mib"] = line
    processes.summary = line
    if processes.status == "ok":
        processes.status = "warn"
    return processes


def _gpu_count(gpu: ProbeResult, topology: ProbeResult) -> ProbeResult | None:
    listed = gpu.facts.get("count")
    matrix = topology.facts.get("gpu_count")
    if not isinstance(listed, int) or not isinstance(matrix, int) or listed in (0, matrix):
        return None
    topology = _copy(topology)
    topology.facts["count_matches_gpu"] = False
    line = (f"the topology matrix shows {matrix} GPU(s), the gpu probe lists {listed}: a GPU is "
            "missing from one view (fallen off the bus, or hidden by CUDA_VISIBLE_DEVICES)")
    topology.evidence["count_matches_gpu"] = line
    topology.summary += f"; {line}"
    if topology.status == "ok":
        topology.status = "warn"
    return topology


def cross_check(results: Sequence[ProbeResult]) -> list[ProbeResult]:
    """Amended copies of the results two probes contradict (the others are left as they are)."""
    by_name = {r.name: r for r in results}
    gpu = by_name.get("gpu")
    if gpu is None or not _answered(gpu):
        return []
    changed: list[ProbeResult | None] = []
    processes = by_name.get("gpu-processes")
    if processes is not None and _answered(processes):
        changed.append(_hidden_memory(gpu, processes))
    topology = by_name.get("topology")
    if topology is not None and _answered(topology):
        changed.append(_gpu_count(gpu, topology))
    return [r for r in changed if r is not None]
