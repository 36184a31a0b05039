"""Find the training command in a launch script, and read the script a person named.

The script is interpreted statically (see `shell.py`); the training command is the one that
runs a `.py` file with Megatron model flags (`--num-layers`, `--hidden-size`, ...). Launcher
options before that file (torchrun, deepspeed, srun) give the world size.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from trainmedic.errors import UsageError
from trainmedic.launch.shell import UNKNOWN, Command, ScriptSyntaxError, interpret
from trainmedic.safefile import TooLarge, read_bounded

MAX_SCRIPT_BYTES = 8 * 1024 * 1024
_NOT_LAUNCHERS = {"echo", "printf", "cat", "tee", "grep", "sed", "awk", "ls", "cp", "rm", "mkdir"}
_MODEL_FLAGS = ("--num-layers", "--hidden-size", "--num-attention-heads", "--num_layers",
                "--hidden_size")


@dataclass
class TrainingCommand:
    """The training command found in a script, with what the script around it set."""

    line: int
    launcher: list[str]
    script: str
    args: list[str]
    exported: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    world_size_var: int | None = None  # WORLD_SIZE as the script set it, when it is a number


def read_script(path: str) -> str:
    """The text of a launch script, or a one-line error for unreadable/binary/empty files."""
    try:  # a regular file only: a FIFO would block forever
        data = read_bounded(path, MAX_SCRIPT_BYTES)
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


SCRIPT_SUFFIXES = (".sh", ".bash", ".slurm", ".sbatch", ".zsh")


def read_launch_text(text: str) -> tuple[str, str]:
    """(script text, where it came from) for what a person pasted: one line naming an existing
    file is that file (read with `read_script`'s checks), anything else is the command itself."""
    stripped = text.strip()
    if stripped and "\n" not in stripped:
        path = Path(stripped).expanduser()
        try:
            if path.is_file():
                return read_script(str(path)), str(path)
        except OSError:
            pass
        if _looks_like_path(stripped):  # a typo in a path is not a command to parse
            raise UsageError(f"cannot read {stripped}: no such file")
    return text, "launch command"


def _looks_like_path(text: str) -> bool:
    """One word with a folder or a script's suffix: meant as a file, not a command line."""
    return not any(c.isspace() for c in text) and (
        "/" in text or text.startswith("~") or text.endswith(SCRIPT_SUFFIXES))


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
    found = strong or weak
    if not found:
        return None
    cmd, k = found[-1]
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


def training_command(
    text: str,
    *,
    path: str = "<script>",
    env: dict[str, str] | None = None,
    argv: list[str] | None = None,
) -> TrainingCommand:
    """Interpret a launch script (with positional `argv`) and return its training command;
    UsageError naming `path` when the script cannot be read or runs no training."""
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
    cmd.world_size_var = _as_int(shell.vars.get("WORLD_SIZE"))
    return cmd
