"""Command-line plumbing shared by `trainmedic memory` and `trainmedic preflight`.

Both take Megatron's own flags verbatim, which argparse cannot know in advance: `split_argv`
(the CLI's hook for such commands) hands argparse our few options and keeps everything else for
`config_from_args`, as `args.passthrough`.
"""

from __future__ import annotations

import argparse
import os
import shlex
from typing import TYPE_CHECKING

from trainmedic.errors import UsageError
from trainmedic.memory.capacity import parse_capacity
from trainmedic.memory.config import MemoryConfig, config_from_args, require

if TYPE_CHECKING:
    from trainmedic.launch.script import TrainingCommand


def add_common_arguments(parser: argparse.ArgumentParser) -> None:
    """Our options; any other argument is a Megatron flag (see `split_argv`)."""
    parser.allow_abbrev = False  # never let a Megatron flag be read as a prefix of ours
    parser.add_argument("--script", metavar="FILE", help="read the arguments from a launch script")
    parser.add_argument("--script-args", metavar="ARGS", default="",
                        help="positional arguments the script expects ($1 $2 ...), as one "
                             "quoted string")
    parser.add_argument("--gpu-memory", metavar="SIZE",
                        help="card capacity, e.g. 80GiB, 141GB, 81559MiB (default: the gpu probe, "
                             "else 80 GiB)")
    parser.add_argument("--no-probe", action="store_true",
                        help="do not ask the local GPUs for their capacity")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.epilog = (
        "Megatron arguments are taken as written: trainmedic memory --num-layers 80 "
        "--hidden-size 8192 --num-attention-heads 64 --seq-length 8192 ..."
    )


_OURS_WITH_VALUE = ("--script", "--script-args", "--gpu-memory", "--trees")
_OURS_FLAGS = ("--no-probe", "--json", "-h", "--help")


def split_argv(argv: list[str]) -> tuple[list[str], list[str]]:
    """(our options, Megatron's), each in the order given."""
    ours: list[str] = []
    megatron: list[str] = []
    i = 0
    while i < len(argv):
        token = argv[i]
        name = token.split("=", 1)[0]
        if name in _OURS_WITH_VALUE:
            ours.append(token)
            if "=" not in token and i + 1 < len(argv):
                ours.append(argv[i + 1])
                i += 1
        elif token in _OURS_FLAGS:
            ours.append(token)
        else:
            megatron.append(token)
        i += 1
    return ours, megatron


def capacity_from_args(args: argparse.Namespace) -> tuple[float | None, str | None]:
    if args.gpu_memory:
        try:
            return parse_capacity(args.gpu_memory), f"--gpu-memory {args.gpu_memory}"
        except ValueError as exc:
            raise UsageError(f"--gpu-memory: {exc}") from None
    if not args.no_probe:
        from trainmedic.probes.capacity import smallest_card_mib

        probed = smallest_card_mib()
        if probed:
            return probed, "gpu probe (smallest card on this node)"
    return None, None


def load_config(args: argparse.Namespace) -> tuple[MemoryConfig, TrainingCommand | None]:
    """The configuration from --script and/or the Megatron flags (flags override the script)."""
    extra: list[str] = list(args.passthrough)
    stray = [a for a in extra if a.startswith("-") and not a.startswith("--") and not _number(a)]
    if stray:
        raise UsageError(f"unrecognised option {stray[0]!r} (Megatron flags start with --)")
    cmd = None
    if args.script:
        from trainmedic.launch.script import read_script
        from trainmedic.memory.from_script import script_config_and_command

        try:
            script_argv = shlex.split(args.script_args)
        except ValueError as exc:
            raise UsageError(f"--script-args: {exc}") from None
        cfg, cmd = script_config_and_command(read_script(args.script), path=args.script,
                                             argv=script_argv)
        cfg = config_from_args(extra, config=cfg)
    else:
        if args.script_args:
            raise UsageError("--script-args needs --script FILE")
        if not extra:
            raise UsageError(
                "give Megatron arguments (--num-layers 80 --hidden-size 8192 ...) or --script FILE"
            )
        cfg = config_from_args(extra)
    if cfg.world_size is None and os.environ.get("WORLD_SIZE", "").isdigit():
        cfg.world_size = int(os.environ["WORLD_SIZE"])
        cfg.notes.append(f"world size {cfg.world_size} from WORLD_SIZE")
    return require(cfg), cmd


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
