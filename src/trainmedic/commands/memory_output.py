"""Human output of `memory` and `preflight`: the verdict line first, then compact tables.

rich is imported when something is printed, so `--json` stays import-cheap. Notes and check
messages quote words of a launch script, which may be anyone's: they are printed as plain text
(never markup), redacted and with control characters made visible (`shown`).
"""

from __future__ import annotations

from trainmedic.memory.checks import Check
from trainmedic.memory.model import MemoryReport
from trainmedic.redact import redact_text
from trainmedic.textsafe import inert

_STATUS_STYLE = {"pass": "green", "warn": "yellow", "fail": "bold red", "skip": "dim"}
_VERDICT_STYLE = {"fits": "bold green", "tight": "bold yellow", "does not fit": "bold red"}
MAX_STAGE_ROWS = 8


def shown(text: str) -> str:
    """Text that quotes a launch script or a tool, as it may reach a terminal."""
    return inert(redact_text(text))


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


def _stage_rows(report: MemoryReport) -> list[int]:
    stages = list(range(len(report.stages)))
    if len(stages) <= MAX_STAGE_ROWS:
        return stages
    keep = {0, 1, report.worst.stage, len(stages) - 1}
    return sorted(keep)


def print_memory(report: MemoryReport) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(highlight=False)
    console.print(shown(verdict_line(report)), style=_VERDICT_STYLE[report.verdict],
                  markup=False)
    m = report.megatron
    console.print(
        f"allocated (model of torch.cuda.max_memory_allocated): "
        f"{gib(report.worst.allocated_mib)} GiB on stage {report.worst.stage}; "
        f"Megatron's theoretical report: {gib(m.total_mib)} GiB (stage 0)"
    )
    pc = report.params
    console.print(
        f"parameters {pc.total / 1e9:.2f} B (active {pc.active_total / 1e9:.2f} B); "
        f"TP {report.config.tp} PP {report.config.pp} CP {report.config.cp} "
        f"DP {report.config.data_parallel_size}; {report.config.num_microbatches} microbatches"
    )
    table = Table(title="Megatron theoretical memory (stage 0, MiB)", title_justify="left")
    for col in ("weight and optimizer", "activation", "total"):
        table.add_column(col, justify="right")
    table.add_row(f"{m.weight_and_optimizer_mib:.2f}", f"{m.activation_mib:.2f}",
                  f"{m.total_mib:.2f}")
    console.print(table)
    stages = Table(title="Allocated-memory model per pipeline stage (GiB)", title_justify="left")
    for col in ("stage", "params (M)", "static", "activations", "allocated", "allowances",
                "total"):
        stages.add_column(col, justify="right")
    for k in _stage_rows(report):
        st = report.stages[k]
        stages.add_row(
            str(st.stage), f"{st.parameters / 1e6:.0f}",
            gib(st.weights_and_optimizer_mib + st.workspaces_mib), gib(st.activation_mib),
            gib(st.allocated_mib), gib(st.runtime_allowance_mib + st.fragmentation_mib),
            gib(st.total_mib), style="bold" if st.stage == report.worst.stage else None,
        )
    console.print(stages)
    console.print("static: weights, gradients, optimizer state, workspaces; activations: held "
                  "at the schedule's peak; allowances: CUDA context, NCCL, fragmentation",
                  style="dim")
    if report.suggestions:
        fits = report.suggestions[0].verdict != "does not fit"
        console.print("Cheapest changes that fit:" if fits else "No single or paired change fits; "
                      "closest:")
        for k, sug in enumerate(report.suggestions, 1):
            console.print(
                shown(f"  {k}. {sug.change}: {' '.join(sug.args)} -> "
                      f"{gib(sug.total_mib)} GiB ({sug.verdict})"), markup=False,
            )
    print_checks(report.checks, only_problems=True)
    for note in [*report.config.notes, *report.notes]:
        console.print(shown(f"note: {note}"), style="dim", markup=False)
    ignored = sorted(set(report.config.ignored_args))
    if ignored:
        console.print(f"note: {len(ignored)} arguments do not affect memory and were ignored",
                      style="dim")


def print_checks(checks: list[Check], *, only_problems: bool = False) -> None:
    from rich.console import Console

    console = Console(highlight=False)
    for check in checks:
        if only_problems and check.status == "pass":
            continue
        style = _STATUS_STYLE.get(check.status, "")
        console.print(f"[{style}]{check.status.upper():4}[/] ", end="")
        console.print(shown(f"{check.name}: {check.message}"), markup=False)
