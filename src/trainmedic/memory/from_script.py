"""The Megatron configuration of a launch script's training command.

`trainmedic.launch` finds the training command without knowing any flag; this module reads its
Megatron arguments, and the world size from the launcher when the arguments do not give it.
"""

from __future__ import annotations

import os

from trainmedic.errors import UsageError
from trainmedic.launch.script import TrainingCommand, training_command
from trainmedic.launch.shell import UNKNOWN
from trainmedic.memory.config import FLAGS, MemoryConfig, config_from_args


def config_from_script(
    text: str,
    *,
    path: str = "<script>",
    env: dict[str, str] | None = None,
    argv: list[str] | None = None,
) -> MemoryConfig:
    """Interpret a launch script (with positional `argv`) and read its Megatron arguments."""
    cfg, _cmd = script_config_and_command(text, path=path, env=env, argv=argv)
    return cfg


def script_config_and_command(
    text: str,
    *,
    path: str = "<script>",
    env: dict[str, str] | None = None,
    argv: list[str] | None = None,
) -> tuple[MemoryConfig, TrainingCommand]:
    cmd = training_command(text, path=path, env=env, argv=argv)
    if not cmd.has_model_flags:
        launcher = " → ".join(cmd.launch.names) or "the command"
        raise UsageError(
            f"{path}:{cmd.line}: {launcher} runs {os.path.basename(cmd.script)} without "
            "Megatron model arguments (--num-layers, --hidden-size, --num-attention-heads): the "
            "memory estimate needs them; `trainmedic preflight --script` still checks the "
            "launcher, a DeepSpeed config and the environment"
        )
    for i, word in enumerate(cmd.args):
        if UNKNOWN in word and i > 0 and cmd.args[i - 1] in FLAGS:
            raise UsageError(
                f"{path}:{cmd.line}: the value of {cmd.args[i - 1]} is computed at run time "
                "($(...), `...` or an unset variable); pass it explicitly"
            )
    try:
        cfg = config_from_args(cmd.args)
    except UsageError as exc:
        hint = ""
        if str(exc).endswith("needs a value"):
            hint = " (an unset variable: pass the script's own arguments with --script-args)"
        raise UsageError(f"{path}:{cmd.line}: {exc}{hint}") from None
    cfg.notes.append(f"training command: {os.path.basename(cmd.script)} at {path}:{cmd.line}")
    cfg.notes.extend(cmd.notes)
    if cfg.world_size is None:
        world, source = cmd.launch.world_size, cmd.launch.world_source
        if world is None and cmd.world_size_var:
            world, source = cmd.world_size_var, "WORLD_SIZE in the script"
        if world is not None:
            cfg.world_size = world
            cfg.notes.append(f"world size {world} from {source}")
        elif any(UNKNOWN in word for word in cmd.launcher):
            cfg.notes.append(
                f"{path}:{cmd.line}: the launcher's process counts are computed at run time; "
                "pass --world-size N"
            )
    return cfg, cmd
