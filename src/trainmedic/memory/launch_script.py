"""Find the training command in a launch script and read its configuration.

The script is interpreted statically (see `shell.py`); the training command is the one that
runs a `.py` file with Megatron model flags (`--num-layers`, `--hidden-size`, ...). Launcher
options before that file (torchrun, deepspeed, srun) give the world size.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from trainmedic.errors import UsageError
from trainmedic.memory.config import MemoryConfig, config_from_args
from trainmedic.memory.shell import UNKNOWN, Command, ScriptSyntaxError, interpret
from trainmedic.safefile import TooLarge, read_bounded

_NOT_LAUNCHERS = {"echo", "printf", "cat", "tee", "grep", "sed", "awk", "ls", "cp", "rm", "mkdir"}
_MODEL_FLAGS = ("--num-layers", "--hidden-size", "--num-attention-heads", "--num_layers",
                "--hidden_size")


@dataclass
class TrainingCommand:
    """The training command found in a script."""

    line: int
    launcher: list[str]
    script: str
    args: list[str]
    exported: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def read_script(path: str) -> str:
    """The text of a launch script, or a one-line error for unreadable/binary/empty files."""
    try:  # a regular file only: a FIFO would block forever
        data = read_bounded(path, 8 * 1024 * 1024)
    except TooLarge:
        raise UsageError(f"{path}: larger than 8 MiB; not a launch script") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if b"\x00" in data:
        raise UsageError(f"{path}: binary file, not a launch script")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not UTF-8 text, not a launch script") from None
    if not text.strip():
        raise UsageError(f"{path}: empty script")
    return text


def _has_model_flags(args: list[str]) -> bool:
    return any(a.split("=", 1)[0] in _MODEL_FLAGS for a in args)


def _python_file_index(argv: list[str]) -> int | None:
    for k, word in enumerate(argv):
        if word.endswith(".py") and not (k > 0 and argv[k - 1] in ("-c", ">", ">>")):
            return k
    return None


def find_training_command(commands: list[Command]) -> TrainingCommand | None:
    """The last command running a .py with Megatron model flags (else one named *train*)."""
    strong: list[tuple[Command, int]] = []
    weak: list[tuple[Command, int]] = []
    for cmd in commands:
        if os.path.basename(cmd.argv[0]) in _NOT_LAUNCHERS:
            continue
        k = _python_file_index(cmd.argv)
        if k is None:
            continue
        if _has_model_flags(cmd.argv[k + 1 :]):
            strong.append((cmd, k))
        elif "train" in os.path.basename(cmd.argv[k]):
            weak.append((cmd, k))
    chosen = (strong or weak or [None])[-1]
    if chosen is None:
        return None
    cmd, k = chosen
    args = cmd.argv[k + 1 :]
    for i, word in enumerate(args):  # a redirection ends the arguments
        if re.match(r"\d*[<>]", word):
            args = args[:i]
            break
    return TrainingCommand(cmd.line, cmd.argv[:k], cmd.argv[k], args)


def _option(argv: list[str], names: tuple[str, ...]) -> str | None:
    value = None
    for i, word in enumerate(argv):
        name, _, inline = word.partition("=")
        if name in names:
            if inline:
                value = inline
            elif i + 1 < len(argv):
                value = argv[i + 1]
    return value


def _as_int(text: str | None) -> int | None:
    if text is None or UNKNOWN in text:
        return None
    text = text.split(":")[-1]  # elastic torchrun --nnodes 1:4 -> the maximum
    try:
        return int(text)
    except ValueError:
        return None


def launcher_world_size(launcher: list[str]) -> tuple[int | None, str]:
    """World size from torchrun / deepspeed / srun options, with a description of the source."""
    ntasks = _as_int(_option(launcher, ("--ntasks", "-n")))
    if ntasks:
        return ntasks, "srun --ntasks"
    nproc = _as_int(_option(launcher, ("--nproc_per_node", "--nproc-per-node", "--num_gpus",
                                       "--num-gpus", "--ntasks-per-node", "--gpus-per-node")))
    nnodes = _as_int(_option(launcher, ("--nnodes", "--num_nodes", "--num-nodes", "--nodes",
                                        "-N")))
    if nproc:
        return nproc * (nnodes or 1), "launcher --nnodes x --nproc-per-node"
    return None, ""


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
    try:
        shell = interpret(text, env, argv)
    except ScriptSyntaxError as exc:
        raise UsageError(f"{path}: {exc}") from None
    cmd = find_training_command(shell.commands)
    if cmd is None:
        raise UsageError(
            f"{path}: no training command found (expected a line running pretrain_gpt.py or "
            "another .py with --num-layers/--hidden-size)"
        )
    cmd.exported = dict(shell.exported)
    cmd.notes = [f"{path}:{note[5:]}" if note.startswith("line ") else note
                 for note in shell.notes]
    for i, word in enumerate(cmd.args):
        if UNKNOWN in word and i > 0 and cmd.args[i - 1].startswith("--"):
            flag = cmd.args[i - 1]
            from trainmedic.memory.config import FLAGS

            if flag in FLAGS:
                raise UsageError(
                    f"{path}:{cmd.line}: the value of {flag} is computed at run time "
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
        world, source = launcher_world_size(cmd.launcher)
        if world is None:
            world_var = _as_int(shell.vars.get("WORLD_SIZE"))
            if world_var:
                world, source = world_var, "WORLD_SIZE in the script"
        if world is not None:
            cfg.world_size = world
            cfg.notes.append(f"world size {world} from {source}")
        elif any(UNKNOWN in word for word in cmd.launcher):
            cfg.notes.append(
                f"{path}:{cmd.line}: the launcher's process counts are computed at run time; "
                "pass --world-size N"
            )
    return cfg, cmd
