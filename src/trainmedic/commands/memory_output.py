"""Human output of `memory` and `preflight`: the verdict line first, then compact tables.

rich is imported when something is printed, so `--json` stays import-cheap.
"""

from __future__ import annotations

from trainmedic.memory.checks import Check
from trainmedic.memory.model import MemoryReport
from trainmedic.memory.summary import (
    LEGEND,
    STAGE_HEADER,
    THEORETICAL_HEADER,
    gib,
    summarize,
    verdict_line,
)

_STATUS_STYLE = {"pass": "green", "warn": "yellow", "fail": "bold red", "skip": "dim"}
_VERDICT_STYLE = {"fits": "bold green", "tight": "bold yellow", "does not fit": "bold red"}

__all__ = ["gib", "print_checks", "print_memory", "verdict_line"]


def print_memory(report: MemoryReport) -> None:
    """The summary the app's memory screen shows too (`memory.summary`), drawn with Rich."""
    from rich.console import Console
    from rich.table import Table

    summary = summarize(report)
    console = Console(highlight=False)
    console.print(summary.verdict_line, style=_VERDICT_STYLE[summary.verdict])
    console.print(summary.allocated_line)
    console.print(summary.params_line)
    table = Table(title="Megatron theoretical memory (stage 0, MiB)", title_justify="left")
    for col in THEORETICAL_HEADER:
        table.add_column(col, justify="right")
    table.add_row(*summary.theoretical)
    console.print(table)
    stages = Table(title="Allocated-memory model per pipeline stage (GiB)", title_justify="left")
    for col in STAGE_HEADER:
        stages.add_column(col, justify="right")
    for k, row in enumerate(summary.stages):
        stages.add_row(*row, style="bold" if k == summary.worst_row else None)
    console.print(stages)
    console.print(LEGEND, style="dim")
    if summary.changes:
        console.print(summary.changes_title)
        for k, change in enumerate(summary.changes, 1):
            console.print(f"  {k}. {change}", markup=False)
    print_checks(report.checks, only_problems=True)
    for note in summary.notes:
        console.print(f"note: {note}", style="dim", markup=False)


def print_checks(checks: list[Check], *, only_problems: bool = False) -> None:
    from rich.console import Console

    console = Console(highlight=False)
    for check in checks:
        if only_problems and check.status == "pass":
            continue
        style = _STATUS_STYLE.get(check.status, "")
        console.print(f"[{style}]{check.status.upper():4}[/] {check.name}: ", end="")
        console.print(check.message, markup=False)
