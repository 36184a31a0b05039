"""Command-line plumbing shared by `trainmedic memory` and `trainmedic preflight`.

Both take Megatron's own flags verbatim, which argparse cannot know in advance; we let argparse
read our few options and hand everything else to `config_from_args`.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
from collections.abc import Sequence
from typing import TYPE_CHECKING

from trainmedic.errors import UsageError
from trainmedic.memory.config import MemoryConfig, config_from_args, require

if TYPE_CHECKING:
    from trainmedic.memory.launch_script import TrainingCommand

_UNITS = {"": 1024.0, "g": 1024.0, "gi": 1024.0, "gib": 1024.0, "gb": 1e9 / 2**20,
          "m": 1.0, "mi": 1.0, "mib": 1.0, "mb": 1e6 / 2**20, "t": 1024.0**2, "tib": 1024.0**2}


def add_common_arguments(parser: argparse.ArgumentParser) -> None:
    """Our options; any other argument is a Megatron flag (see `parse_with_megatron_args`)."""
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
    original = parser.parse_args

    def parse_args(args: Sequence[str] | None = None, namespace: object = None) -> object:
        ours, extra = split_arguments(list(args or []))
        ns = original(ours, namespace)  # type: ignore[arg-type]
        ns.megatron_args = extra
        return ns

    parser.parse_args = parse_args  # type: ignore[method-assign]
    parser._trainmedic_original_parse_args = original  # type: ignore[attr-defined]


_OURS_WITH_VALUE = ("--script", "--script-args", "--gpu-memory", "--trees")
_OURS_FLAGS = ("--no-probe", "--json", "-h", "--help")


def split_arguments(argv: list[str]) -> tuple[list[str], list[str]]:
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


def parse_capacity(text: str) -> float:
    """'80GiB' -> MiB.  GB/MB are decimal, G/GiB/M/MiB binary; a bare number is GiB."""
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*", text)
    unit = m.group(2).lower() if m else ""
    if not m or unit not in _UNITS:
        raise UsageError(f"--gpu-memory: expected a size such as 80GiB or 141GB, got {text!r}")
    value = float(m.group(1)) * _UNITS[unit]
    if value <= 0:
        raise UsageError("--gpu-memory must be positive")
    return value


def probe_capacity(timeout: float = 10.0) -> float | None:
    """The smallest card on this node from the gpu probe; None when there is none or it fails."""
    try:
        from trainmedic.probes.runner import run_probes

        results = run_probes(["gpu"], timeout=timeout)
        value = results[0].facts.get("min_memory_total_mib") if results else None
        if results and results[0].status != "unavailable" and isinstance(value, int | float):
            return float(value) if value > 0 else None
    except Exception:  # the probe is optional here; any failure means "unknown"
        return None
    return None


def capacity_from_args(args: argparse.Namespace) -> tuple[float | None, str | None]:
    if args.gpu_memory:
        return parse_capacity(args.gpu_memory), f"--gpu-memory {args.gpu_memory}"
    if not args.no_probe:
        probed = probe_capacity()
        if probed:
            return probed, "gpu probe (smallest card on this node)"
    return None, None


def load_config(args: argparse.Namespace) -> tuple[MemoryConfig, TrainingCommand | None]:
    """The configuration from --script and/or the Megatron flags (flags override the script)."""
    extra: list[str] = list(getattr(args, "megatron_args", []))
    stray = [a for a in extra if a.startswith("-") and not a.startswith("--") and not _number(a)]
    if stray:
        raise UsageError(f"unrecognised option {stray[0]!r} (Megatron flags start with --)")
    cmd = None
    if args.script:
        from trainmedic.memory.launch_script import read_script, script_config_and_command

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
