"""`trainmedic preflight`: check a launch script before it burns GPU hours.

Configuration checks, the memory verdict and the environment findings, as one checklist;
exit 1 when any item fails.
"""

from __future__ import annotations

import argparse
import json
import os

from trainmedic.commands.memory_args import (
    add_common_arguments,
    capacity_from_args,
    load_config,
    split_argv,
)
from trainmedic.memory.checks import Check, CheckStatus, run_checks
from trainmedic.memory.environment import environment_checks
from trainmedic.memory.model import MemoryReport, estimate
from trainmedic.memory.suggest import add_suggestions
from trainmedic.redact import redact_argv

__all__ = ["add_arguments", "run", "split_argv"]

VERDICT_STATUS: dict[str, CheckStatus] = {"fits": "pass", "tight": "warn", "does not fit": "fail"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_common_arguments(parser)


def memory_check(report: MemoryReport) -> Check:
    from trainmedic.commands.memory_output import verdict_line

    message = verdict_line(report)
    if report.suggestions and report.verdict == "does not fit":
        first = report.suggestions[0]
        message += f"; cheapest fix: {first.change} ({' '.join(first.args)})"
    return Check("memory", VERDICT_STATUS[report.verdict], message)


def env_facts(exported: dict[str, str]) -> tuple[dict[str, object] | None, str]:
    """The env probe's facts for the environment the job will see (the script's exports win),
    and where they came from; (None, why) when the examination failed."""
    from trainmedic.probes.env import examine

    try:
        return dict(examine({**os.environ, **exported}).facts), \
            "env probe (script exports applied)"
    except Exception as exc:  # a preflight must never end in a traceback
        return None, f"env probe failed ({type(exc).__name__}: {exc})"


def run(args: argparse.Namespace) -> int:
    cfg, cmd = load_config(args)
    capacity, source = capacity_from_args(args)
    report = add_suggestions(estimate(cfg, capacity_mib=capacity, capacity_source=source))
    checks = run_checks(cfg)
    checks.append(memory_check(report))
    checks.extend(environment_checks(cfg, *env_facts(cmd.exported if cmd else {})))
    failed = any(c.status == "fail" for c in checks)
    if args.json:
        print(json.dumps({
            "ok": not failed,
            "checks": [c.to_dict() for c in checks],
            "memory": report.to_dict(),
            "training_command": {"line": cmd.line, "launcher": redact_argv(cmd.launcher),
                                 "script": cmd.script} if cmd else None,
        }, indent=2))
    else:
        from trainmedic.commands.memory_output import print_checks, shown

        counts = {s: sum(c.status == s for c in checks) for s in ("pass", "warn", "fail")}
        print(f"preflight: {counts['fail']} failed, {counts['warn']} warnings, "
              f"{counts['pass']} passed")
        print_checks(checks)
        for note in cfg.notes + report.notes:
            print(shown(f"note: {note}"))
    return 1 if failed else 0
