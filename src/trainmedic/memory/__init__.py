"""Theoretical per-GPU memory of Megatron-style training, and launch-time configuration checks.

Library API (used by the CLI, the TUI and the OOM tree):
`config_from_args(argv)`, `config_from_script(text)`, `require(config)`,
`estimate(config) -> MemoryReport`, `add_suggestions(report)`, `run_checks(config) -> [Check]`.
Pure Python: no torch, no Megatron, no rich. Names load on first use so that a command
importing one piece does not pay for the others (the script reader is the largest).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainmedic.lazy import lazy_attributes

_WHERE = {
    "Check": "checks",
    "MemoryConfig": "config",
    "config_from_args": "config",
    "require": "config",
    "config_from_script": "from_script",
    "MemoryReport": "model",
    "estimate": "model",
    "megatron_report": "model",
    "add_suggestions": "suggest",
    "run_checks": "checks",
}

__all__ = [
    "Check",
    "MemoryConfig",
    "MemoryReport",
    "add_suggestions",
    "config_from_args",
    "config_from_script",
    "estimate",
    "megatron_report",
    "require",
    "run_checks",
]

if TYPE_CHECKING:
    from trainmedic.memory.checks import Check, run_checks
    from trainmedic.memory.config import MemoryConfig, config_from_args, require
    from trainmedic.memory.from_script import config_from_script
    from trainmedic.memory.model import MemoryReport, estimate, megatron_report
    from trainmedic.memory.suggest import add_suggestions


__getattr__ = lazy_attributes(__name__, _WHERE)
