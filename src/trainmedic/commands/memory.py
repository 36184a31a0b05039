"""`trainmedic memory`: theoretical per-GPU memory of a Megatron-style configuration.

Exit 0 when it fits (or is tight), 1 when it does not fit (as `preflight` fails its memory
item), 2 on bad input.
"""

from __future__ import annotations

import argparse
import json

from trainmedic.commands.memory_args import (
    add_common_arguments,
    capacity_from_args,
    load_config,
    split_argv,
)
from trainmedic.memory.checks import run_checks
from trainmedic.memory.model import estimate
from trainmedic.memory.suggest import add_suggestions

__all__ = ["add_arguments", "run", "split_argv"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_common_arguments(parser)


def run(args: argparse.Namespace) -> int:
    cfg, _cmd = load_config(args)
    capacity, source = capacity_from_args(args)
    report = add_suggestions(estimate(cfg, capacity_mib=capacity, capacity_source=source))
    report.checks = run_checks(cfg)
    if args.json:
        from trainmedic.commands.outputs import stamped

        print(json.dumps(stamped("memory", report.to_dict()), indent=2))
    else:
        from trainmedic.commands.memory_output import print_memory

        print_memory(report)
    return 1 if report.verdict == "does not fit" else 0
