"""Theoretical per-GPU memory of Megatron-style training, and launch-time configuration checks.

Library API (used by the CLI, the TUI and the OOM tree):
`config_from_args(argv)`, `config_from_script(text)`, `estimate(config) -> MemoryReport`,
`memory_facts(report)`, `run_checks(config)`. Pure Python: no torch, no Megatron, no rich.
"""

from __future__ import annotations

from trainmedic.memory.checks import run_checks
from trainmedic.memory.config import MemoryConfig, config_from_args, require
from trainmedic.memory.launch_script import config_from_script
from trainmedic.memory.model import MemoryReport, estimate, megatron_report, memory_facts

__all__ = [
    "MemoryConfig",
    "MemoryReport",
    "config_from_args",
    "config_from_script",
    "estimate",
    "megatron_report",
    "memory_facts",
    "require",
    "run_checks",
]
