"""Human output of `memory` and `preflight`: the verdict line first, then compact tables.

rich is imported when something is printed, so `--json` stays import-cheap. Notes and check
messages quote words of a launch script, which may be anyone's: they are printed as plain text
(never markup), redacted and with control characters made visible (`shown`).
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
from trainmedic.redact import redact_text
from trainmedic.textsafe import inert

_STATUS_STYLE = {"pass": "green", "warn": "yellow", "fail": "bold red", "skip": "dim"}
_VERDICT_STYLE = {"fits": "bold green", "tight": "bold yellow", "does not fit": "bold red"}

__all__ = ["gib", "print_checks", "print_memory", "shown", "verdict_line"]


def shown(text: str) -> str:
    """Text that quotes a launch script or a tool, as it may reach a terminal."""
    return inert(redact_text(text))


def print_memory(report: MemoryReport) -> None:
    """The summary the app's memory screen shows too (`memory.summary`), drawn with Rich."""
    from rich.console import Console
    from rich.table import Table

    summary = summarize(report)
    console = Console(highlight=False)
    console.print(shown(summary.verdict_line), style=_VERDICT_STYLE[summary.verdict],
                  markup=False)
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
            console.print(shown(f"  {k}. {change}"), markup=False)
    print_checks(report.checks, only_problems=True)
    for note in summary.notes:
        console.print(shown(f"note: {note}"), style="dim", markup=False)


def print_checks(checks: list[Check], *, only_problems: bool = False) -> None:
    from rich.console import Console

    console = Console(highlight=False)
    for check in checks:
        if only_problems and check.status == "pass":
            continue
        style = _STATUS_STYLE.get(check.status, "")
        console.print(f"[{style}]{check.status.upper():4}[/] ", end="")
        console.print(shown(f"{check.name}: {check.message}"), markup=False)
