"""`trainmedic preflight`: check a launch script before it burns GPU hours.

Any script gets the launcher checks (which launcher, how many processes, a launcher line that
runs no program, a batch script that starts one process where it asked for many), the batch
arithmetic of a DeepSpeed config JSON the program is given, and the environment the ranks will
see. A Megatron command also gets Megatron's layout and batch checks and the memory verdict;
without Megatron's model arguments those are listed as skipped, saying why. One checklist;
exit 1 when any item fails, 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
from typing import TYPE_CHECKING

from trainmedic.commands.memory_args import (
    add_common_arguments,
    capacity_from_args,
    load_config,
    split_argv,
)
from trainmedic.errors import UsageError
from trainmedic.launch.checks import (
    deepspeed_batch_check,
    environment_checks,
    launcher_checks,
    launcher_exports,
    script_folder,
    working_folder,
)
from trainmedic.memory.checks import Check, CheckStatus, run_checks
from trainmedic.memory.model import MemoryReport, estimate
from trainmedic.memory.suggest import add_suggestions
from trainmedic.redact import redact_argv

if TYPE_CHECKING:
    from trainmedic.launch.script import TrainingCommand
    from trainmedic.memory.config import MemoryConfig

__all__ = ["add_arguments", "run", "split_argv"]

VERDICT_STATUS: dict[str, CheckStatus] = {"fits": "pass", "tight": "warn", "does not fit": "fail"}
MEGATRON_ONLY = ("layout divisibility, Megatron's batch arithmetic (global = micro x grad-accum "
                 "x data parallel), the memory estimate")


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
    from trainmedic.probes.env import examine, local_hcas, local_interfaces

    try:
        return dict(examine({**os.environ, **exported}, local_interfaces(),
                            local_hcas()).facts), "this shell with the script's exports"
    except Exception as exc:  # a preflight must never end in a traceback
        return None, f"env probe failed ({type(exc).__name__}: {exc})"


def _launch_command(args: argparse.Namespace) -> TrainingCommand | None:
    """The script's training command (a launcher line without a program too), or None."""
    if not args.script:
        return None
    from trainmedic.launch.script import read_script, training_command

    try:
        script_argv = shlex.split(args.script_args)
    except ValueError as exc:
        raise UsageError(f"--script-args: {exc}") from None
    return training_command(read_script(args.script), path=args.script, argv=script_argv,
                            launcher_only=True)


def _megatron(args: argparse.Namespace, cmd: TrainingCommand | None,
              ) -> tuple[MemoryConfig | None, MemoryReport | None, list[Check]]:
    """Megatron's checks and memory verdict, or one `skip` saying what they need."""
    if cmd is not None and not (cmd.script and cmd.has_model_flags) and not args.passthrough:
        program = os.path.basename(cmd.script) or "no program"
        launcher = " → ".join(cmd.launch.names) or "the command"
        return None, None, [Check("megatron", "skip", f"{MEGATRON_ONLY}: need Megatron's model "
                                  "arguments (--num-layers, --hidden-size, --num-attention-"
                                  f"heads); this script runs {program} with {launcher}")]
    cfg, _cmd = load_config(args)
    capacity, source = capacity_from_args(args)
    report = add_suggestions(estimate(cfg, capacity_mib=capacity, capacity_source=source))
    return cfg, report, [*run_checks(cfg), memory_check(report)]


def run(args: argparse.Namespace) -> int:
    cmd = _launch_command(args)
    cfg, report, checks = _megatron(args, cmd)
    exported: dict[str, str] = {}
    if cmd is not None:
        checks.extend(launcher_checks(cmd, args.script))
        batch = deepspeed_batch_check(cmd, args.script, script_folder(args.script),
                                      working_folder())
        if batch is not None:
            checks.append(batch)
        exported = {**cmd.exported, **launcher_exports(cmd)}
    overlap = (cfg.tp > 1 or cfg.sequence_parallel) if cfg is not None else None
    checks.extend(environment_checks(*env_facts(exported),
                                     nnodes=cmd.launch.nnodes if cmd is not None else None,
                                     megatron_overlap=overlap))
    failed = any(c.status == "fail" for c in checks)
    if args.json:
        from trainmedic.commands.outputs import stamped

        print(json.dumps(stamped("preflight", {
            "ok": not failed,
            "checks": [c.to_dict() for c in checks],
            "memory": report.to_dict() if report is not None else None,
            "training_command": _command_json(cmd),
        }), indent=2))
    else:
        from trainmedic.commands.memory_output import print_checks, shown

        counts = {s: sum(c.status == s for c in checks) for s in ("pass", "warn", "fail", "skip")}
        print(f"preflight: {counts['fail']} failed, {counts['warn']} warnings, "
              f"{counts['pass']} passed" + (f", {counts['skip']} skipped" if counts["skip"]
                                           else ""))
        print_checks(checks)
        notes = (cfg.notes if cfg is not None else []) + (report.notes if report else [])
        for note in notes:
            print(shown(f"note: {note}"))
    return 1 if failed else 0


def _command_json(cmd: TrainingCommand | None) -> dict[str, object] | None:
    if cmd is None:
        return None
    launch = cmd.launch
    return {"line": cmd.line, "launcher": redact_argv(cmd.launcher), "script": cmd.script,
            "launchers": launch.names, "world_size": launch.world_size,
            "world_source": launch.world_source, "nnodes": launch.nnodes}
