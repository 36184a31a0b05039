"""The cheapest configuration changes that make a run fit, each re-estimated.

A suggestion is only offered when the changed configuration breaks no configuration check the
original passed (heads, groups, layers, world size and global batch still divide: the same
`run_checks` preflight shows), and its number comes from re-running the model, never from a rule
of thumb. Changes are ordered by what they cost the run: free switches
first, then throughput-costing ones, then those that need more GPUs per model replica.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from itertools import combinations

from trainmedic.memory.checks import run_checks
from trainmedic.memory.config import MemoryConfig
from trainmedic.memory.model import MemoryReport, Suggestion, estimate

MAX_TP = 8  # TP beyond one NVLink domain is rarely worth it


@dataclass
class Change:
    cost: int
    text: str
    args: list[str]
    fields: dict[str, object]


def failed_checks(cfg: MemoryConfig) -> set[str]:
    return {c.name for c in run_checks(cfg) if c.status == "fail"}


def candidate_changes(cfg: MemoryConfig) -> Iterator[Change]:
    if not cfg.use_distributed_optimizer and cfg.data_parallel_size * cfg.cp > 1:
        yield Change(1, "use the distributed optimizer", ["--use-distributed-optimizer"],
                     {"use_distributed_optimizer": True})
    if cfg.tp > 1 and not cfg.sequence_parallel:
        yield Change(1, "enable sequence parallelism", ["--sequence-parallel"],
                     {"sequence_parallel": True})
    if cfg.micro_batch_size > 1:
        mbs = cfg.micro_batch_size // 2
        yield Change(2, f"halve the micro batch to {mbs} (more accumulation steps)",
                     ["--micro-batch-size", str(mbs)], {"micro_batch_size": mbs})
    if cfg.recompute_granularity != "full":
        yield Change(3, "full activation recompute (uniform, 1 layer)",
                     ["--recompute-granularity", "full", "--recompute-method", "uniform",
                      "--recompute-num-layers", "1"],
                     {"recompute_granularity": "full", "recompute_method": "uniform",
                      "recompute_num_layers": 1})
    if cfg.tp * 2 <= MAX_TP:
        tp = cfg.tp * 2
        yield Change(4, f"raise tensor parallelism to {tp}",
                     ["--tensor-model-parallel-size", str(tp)], {"tensor_model_parallel_size": tp})
    if cfg.pp * 2 <= cfg.num_layers:
        pp = cfg.pp * 2
        yield Change(4, f"raise pipeline parallelism to {pp}",
                     ["--pipeline-model-parallel-size", str(pp)],
                     {"pipeline_model_parallel_size": pp})
    cp = cfg.cp * 2
    yield Change(5, f"context parallelism {cp}", ["--context-parallel-size", str(cp)],
                 {"context_parallel_size": cp})


def _try(report: MemoryReport, changes: tuple[Change, ...],
         allowed: set[str]) -> Suggestion | None:
    fields: dict[str, object] = {}
    for change in changes:
        fields.update(change.fields)
    new = report.config.replace(**fields)
    if not failed_checks(new) <= allowed:  # the change itself breaks the layout
        return None
    est = estimate(new, capacity_mib=report.capacity_mib,
                   capacity_source=report.capacity_source)
    return Suggestion(
        change=" + ".join(c.text for c in changes),
        args=[a for c in changes for a in c.args],
        total_mib=est.worst.total_mib,
        megatron_total_mib=est.megatron.total_mib,
        verdict=est.verdict,
        cost=sum(c.cost for c in changes),
    )


def suggestions(report: MemoryReport, limit: int = 5) -> list[Suggestion]:
    """Single changes that fit, else pairs; failing both, the changes that help most."""
    allowed = failed_checks(report.config)
    singles = list(candidate_changes(report.config))
    tried = [r for c in singles if (r := _try(report, (c,), allowed)) is not None]
    fitting = [r for r in tried if r.verdict != "does not fit"]
    if not fitting:
        pairs = [r for pair in combinations(singles, 2)
                 if (r := _try(report, pair, allowed)) is not None]
        fitting = [r for r in pairs if r.verdict != "does not fit"]
    if fitting:
        fitting.sort(key=lambda r: (r.cost, r.total_mib))
        return fitting[:limit]
    tried.sort(key=lambda r: r.total_mib)
    return tried[:limit]


def add_suggestions(report: MemoryReport) -> MemoryReport:
    """`report` with its suggestions filled in when it does not fit comfortably."""
    if report.verdict != "fits":
        report.suggestions = suggestions(report)
    return report
