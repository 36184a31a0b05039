"""Find the training command in a launch script, and read the script a person named.

The script is interpreted statically (see `shell.py`); the training command is the one that
runs a `.py` file with Megatron model flags (`--num-layers`, `--hidden-size`, ...), else one
started by a launcher (torchrun, deepspeed, accelerate, srun, mpirun) or named *train*.
Launcher options before that file give the world size (see `launcher.py`); a batch script's
`#SBATCH` options seed the SLURM_* variables the script may read.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from trainmedic.errors import UsageError
from trainmedic.launch.launcher import (
    Launch,
    count,
    describe_launch,
    sbatch_options,
    slurm_environment,
    steps_of,
)
from trainmedic.launch.shell import Command, ScriptSyntaxError, interpret
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
    sbatch: dict[str, str] = field(default_factory=dict)  # the script's #SBATCH options
    before: list[Command] = field(default_factory=list)  # commands run before it (activate...)
    variables: dict[str, str] = field(default_factory=dict)  # the script's variables then

    @property
    def launch(self) -> Launch:
        """Its launchers, world size and node count."""
        return describe_launch(self.launcher, self.sbatch)

    @property
    def has_model_flags(self) -> bool:
        """It gives Megatron model arguments (the memory estimate and Megatron checks need)."""
        return _has_model_flags(self.args)


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


def _module_index(argv: list[str]) -> int | None:
    """`torchrun -m pkg.train ...`, `python -m pkg.train`: the module name's position (the
    launchers' own `python -m torch.distributed.run` is a launcher, not the program)."""
    for k, word in enumerate(argv[:-1]):
        if word == "-m" and not argv[k + 1].startswith(("torch.distributed.", "deepspeed.",
                                                         "accelerate.")):
            return k + 1
    return None


def _launched(prefix: list[str]) -> bool:
    return any(step.name != "python" for step in steps_of(prefix))


def find_training_command(commands: list[Command], *,
                          launcher_only: bool = False) -> TrainingCommand | None:
    """The last command running a .py with Megatron model flags, else the last one started by
    a launcher or running a file named *train*; with `launcher_only` (preflight), else the last
    `python X.py`, else the last launcher line that runs no program at all (`script` empty: a
    check says so)."""
    strong: list[tuple[int, int]] = []
    weak: list[tuple[int, int]] = []
    plain: list[tuple[int, int]] = []
    for index, cmd in enumerate(commands):
        if os.path.basename(cmd.argv[0]) in _NOT_LAUNCHERS:
            continue
        k = _python_file_index(cmd.argv)
        if k is None:
            k = _module_index(cmd.argv)
            if k is None or not steps_of(cmd.argv[:k - 1]):  # `-m` of no python or launcher
                continue
        if _has_model_flags(cmd.argv[k + 1 :]):
            strong.append((index, k))
        elif "train" in os.path.basename(cmd.argv[k]) or _launched(cmd.argv[:k]):
            weak.append((index, k))  # named *train*, or started by a launcher
        elif steps_of(cmd.argv[:k]):
            plain.append((index, k))  # `python anything.py`: for preflight only
    found = strong or weak or (plain if launcher_only else [])
    if not found:
        return _programless(commands) if launcher_only else None
    index, k = found[-1]
    cmd = commands[index]
    args = cmd.argv[k + 1 :]
    for i, word in enumerate(args):  # a redirection ends the arguments
        if re.match(r"\d*[<>]", word):
            args = args[:i]
            break
    launcher = cmd.argv[:k]
    if k > 0 and cmd.argv[k - 1] == "-m" and not cmd.argv[k].endswith(".py"):
        launcher = cmd.argv[:k - 1]  # `-m` belongs to the module, not to the launcher
    return TrainingCommand(cmd.line, launcher, cmd.argv[k], args, before=commands[:index])


def _programless(commands: list[Command]) -> TrainingCommand | None:
    spawners = {"torchrun", "deepspeed", "accelerate", "python"}
    for index in range(len(commands) - 1, -1, -1):
        cmd = commands[index]
        if any(step.name in spawners for step in steps_of(cmd.argv)):
            return TrainingCommand(cmd.line, cmd.argv, "", [], before=commands[:index])
    return None


def training_command(
    text: str,
    *,
    path: str = "<script>",
    env: dict[str, str] | None = None,
    argv: list[str] | None = None,
    launcher_only: bool = False,
) -> TrainingCommand:
    """Interpret a launch script (with positional `argv`) and return its training command;
    UsageError naming `path` when the script cannot be read or runs no training
    (`launcher_only`: a launcher line without a program is returned, for a check to name)."""
    sbatch = sbatch_options(text)
    try:
        shell = interpret(text, {**slurm_environment(sbatch), **(env or {})}, argv)
    except ScriptSyntaxError as exc:
        raise UsageError(f"{path}: {exc}") from None
    cmd = find_training_command(shell.commands, launcher_only=launcher_only)
    if cmd is None:
        raise UsageError(
            f"{path}: no training command found (expected a line running a .py through "
            "torchrun, deepspeed, accelerate, srun, mpirun or python)"
        )
    cmd.sbatch = sbatch
    cmd.variables = dict(shell.vars)
    cmd.exported = dict(shell.exported)
    cmd.notes = [f"{path}:{note[5:]}" if note.startswith("line ") else note
                 for note in shell.notes]
    cmd.world_size_var = count(shell.vars.get("WORLD_SIZE"))
    return cmd
