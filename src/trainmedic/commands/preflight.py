"""`trainmedic preflight`: check a launch script before it burns GPU hours.

Configuration checks, the memory verdict and the environment findings, as one checklist;
exit 1 when any item fails.
"""

from __future__ import annotations

import argparse
import json

from trainmedic.memory.checks import run_checks
from trainmedic.memory.environment import environment_checks
from trainmedic.memory.inputs import add_common_arguments, capacity_from_args, load_config
from trainmedic.memory.model import estimate
from trainmedic.redact import redact_argv


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_common_arguments(parser)


def memory_check(report) -> dict[str, str]:  # type: ignore[no-untyped-def]
    from trainmedic.memory.render import verdict_line

    status = {"fits": "pass", "tight": "warn", "does not fit": "fail"}[report.verdict]
    message = verdict_line(report)
    if report.suggestions and report.verdict == "does not fit":
        first = report.suggestions[0]
        message += f"; cheapest fix: {first['change']} ({' '.join(map(str, first['args']))})"
    return {"name": "memory", "status": status, "message": message}


def run(args: argparse.Namespace) -> int:
    cfg, cmd = load_config(args)
    capacity, source = capacity_from_args(args)
    report = estimate(cfg, capacity_mib=capacity, capacity_source=source)
    checks = run_checks(cfg)
    checks.append(memory_check(report))
    checks.extend(environment_checks(cfg, cmd.exported if cmd else {}))
    failed = any(c["status"] == "fail" for c in checks)
    if args.json:
        from trainmedic.commands.outputs import stamped

        print(json.dumps(stamped("preflight", {
            "ok": not failed,
            "checks": checks,
            "memory": report.to_dict(),
            "training_command": {"line": cmd.line, "launcher": redact_argv(cmd.launcher),
                                 "script": cmd.script} if cmd else None,
        }), indent=2))
    else:
        from trainmedic.memory.render import print_checks

        counts = {s: sum(c["status"] == s for c in checks) for s in ("pass", "warn", "fail")}
        print(f"preflight: {counts['fail']} failed, {counts['warn']} warnings, "
              f"{counts['pass']} passed")
        print_checks(checks)
        for note in cfg.notes + report.notes:
            print(f"note: {note}")
    return 1 if failed else 0
