"""A memory report in words and table cells: what `trainmedic memory` prints and the app's memory
screen shows, decided once.

Plain strings only (no Rich): the CLI (`commands/memory_output.py`) and the app draw these same
lines and rows with their own means, so the two cannot tell a different story.
"""

from __future__ import annotations

from dataclasses import dataclass

from trainmedic.memory.model import MemoryReport

MAX_STAGE_ROWS = 8
THEORETICAL_HEADER = ("weight and optimizer", "activation", "total")
STAGE_HEADER = ("stage", "params (M)", "static", "activations", "allocated", "allowances",
                "total")
LEGEND = ("static: weights, gradients, optimizer state, workspaces; activations: held at the "
          "schedule's peak; allowances: CUDA context, NCCL, fragmentation")


def gib(mib: float) -> str:
    return f"{mib / 1024:.1f}"


def verdict_line(report: MemoryReport) -> str:
    w = report.worst
    where = f"pipeline stage {w.stage}" if report.config.pp > 1 else "each GPU"
    return (
        f"{report.verdict.upper()}: {where} needs {gib(w.total_mib)} GiB of "
        f"{gib(report.capacity_mib)} GiB ({report.capacity_source}); Megatron's own report: "
        f"{gib(report.megatron.total_mib)} GiB"
    )


def stage_rows(report: MemoryReport) -> list[int]:
    """The stages a table shows: all of a short pipeline, else the first two, the most loaded
    and the last."""
    stages = list(range(len(report.stages)))
    if len(stages) <= MAX_STAGE_ROWS:
        return stages
    return sorted({0, 1, report.worst.stage, len(stages) - 1})


@dataclass(frozen=True)
class Change:
    """One of the cheapest changes that fit: what, the flags to add, the new total."""

    change: str
    args: str
    total_gib: str
    verdict: str

    def __str__(self) -> str:
        return f"{self.change}: {self.args} -> {self.total_gib} GiB ({self.verdict})"


@dataclass(frozen=True)
class MemorySummary:
    verdict: str  # "fits", "tight" or "does not fit"
    verdict_line: str
    allocated_line: str  # the allocated-memory model beside Megatron's theoretical report
    params_line: str
    theoretical: tuple[str, str, str]  # MiB, THEORETICAL_HEADER's columns
    stages: tuple[tuple[str, ...], ...]  # STAGE_HEADER's columns
    worst_row: int  # the row of the most loaded stage in `stages`
    changes_title: str
    changes: tuple[Change, ...]
    problems: tuple[tuple[str, str, str], ...]  # (STATUS, check, message) of failed checks
    notes: tuple[str, ...]


def summarize(report: MemoryReport) -> MemorySummary:
    m, pc, cfg = report.megatron, report.params, report.config
    rows: list[tuple[str, ...]] = []
    worst = 0
    for k in stage_rows(report):
        st = report.stages[k]
        if st.stage == report.worst.stage:
            worst = len(rows)
        rows.append((str(st.stage), f"{st.parameters / 1e6:.0f}",
                     gib(st.weights_and_optimizer_mib + st.workspaces_mib), gib(st.activation_mib),
                     gib(st.allocated_mib), gib(st.runtime_allowance_mib + st.fragmentation_mib),
                     gib(st.total_mib)))
    fits = bool(report.suggestions) and report.suggestions[0].verdict != "does not fit"
    notes = [*cfg.notes, *report.notes]
    ignored = sorted(set(cfg.ignored_args))
    if ignored:
        notes.append(f"{len(ignored)} arguments do not affect memory and were ignored")
    return MemorySummary(
        verdict=report.verdict, verdict_line=verdict_line(report),
        allocated_line=(f"allocated (model of torch.cuda.max_memory_allocated): "
                        f"{gib(report.worst.allocated_mib)} GiB on stage {report.worst.stage}; "
                        f"Megatron's theoretical report: {gib(m.total_mib)} GiB (stage 0)"),
        params_line=(f"parameters {pc.total / 1e9:.2f} B (active {pc.active_total / 1e9:.2f} B); "
                     f"TP {cfg.tp} PP {cfg.pp} CP {cfg.cp} DP {cfg.data_parallel_size}; "
                     f"{cfg.num_microbatches} microbatches"),
        theoretical=(f"{m.weight_and_optimizer_mib:.2f}", f"{m.activation_mib:.2f}",
                     f"{m.total_mib:.2f}"),
        stages=tuple(rows), worst_row=worst,
        changes_title=("Cheapest changes that fit:" if fits else
                       "No single or paired change fits; closest:") if report.suggestions else "",
        changes=tuple(Change(s.change, " ".join(s.args), gib(s.total_mib), s.verdict)
                      for s in report.suggestions),
        problems=tuple((c.status.upper(), c.name, c.message) for c in report.checks
                       if c.status != "pass"),
        notes=tuple(notes),
    )
