"""The Python interpreter a launch script's training command runs in.

The versions of torch, NCCL, TE and flash-attn that matter are those of the job's environment,
not of whatever Python reads the script. The command names it (`/opt/venv/bin/python -m
torch.distributed.run`), or a launcher whose console script starts with `#!/path/to/python`
(`torchrun`, `deepspeed`, `accelerate`), found on the PATH the script sets up (`source
venv/bin/activate`, `conda activate NAME`, `export PATH=...`). Nothing is run here.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from trainmedic.launch.launcher import PYTHON_WORD, Launch
from trainmedic.launch.script import TrainingCommand
from trainmedic.launch.shell import UNKNOWN, Command


@dataclass(frozen=True)
class Interpreter:
    """The job's Python (`path`, "" when it cannot be told) and how it was found (or why not);
    `elsewhere`: the script runs it where this node cannot see (a container image, a path this
    node lacks), so no Python here is the job's."""

    path: str
    how: str
    elsewhere: bool = False


def _activated_bin(before: list[Command], env: Mapping[str, str]) -> tuple[str, str]:
    """(bin folder, how) of the last venv or conda env the script activates, or ("", "")."""
    found = ("", "")
    for cmd in before:
        argv = cmd.argv
        if argv[0] in ("source", ".") and len(argv) > 1 and argv[1].endswith("/activate"):
            found = (str(Path(argv[1]).parent), f"line {cmd.line}: {argv[0]} {argv[1]}")
        elif (os.path.basename(argv[0]) in ("conda", "mamba", "micromamba")
              and len(argv) > 2 and argv[1] == "activate"):
            prefix = _conda_prefix(argv[2], env)
            if prefix:
                found = (str(Path(prefix) / "bin"), f"line {cmd.line}: conda activate {argv[2]}")
    return found


def _conda_prefix(name: str, env: Mapping[str, str]) -> str:
    """The folder of a conda env named or given as a path, where this machine has it."""
    if "/" in name:
        return name
    roots = []
    conda_exe = env.get("CONDA_EXE", "")
    if conda_exe:
        roots.append(Path(conda_exe).parent.parent)
    prefix = env.get("CONDA_PREFIX", "")
    if "/envs/" in prefix:
        roots.append(Path(prefix.split("/envs/")[0]))
    elif prefix:
        roots.append(Path(prefix))
    if name == "base":
        return str(roots[0]) if roots else ""
    candidates = [root / "envs" / name for root in roots]
    candidates.append(Path(env.get("HOME", "~")).expanduser() / ".conda" / "envs" / name)
    return next((str(c) for c in candidates if c.is_dir()), "")


def _shebang_python(path: str) -> str:
    """The interpreter on a console script's `#!` line (`#!/opt/venv/bin/python3`), or ""."""
    try:
        with open(path, "rb") as handle:
            first = handle.readline(512).decode("utf-8", errors="replace").strip()
    except OSError:
        return ""
    if not first.startswith("#!"):
        return ""
    words = first[2:].split()
    if words and os.path.basename(words[0]) == "env" and len(words) > 1:
        return shutil.which(words[-1]) or ""  # `#!/usr/bin/env python3`: the PATH's
    return words[0] if words and PYTHON_WORD.match(os.path.basename(words[0])) else ""


def _search_path(cmd: TrainingCommand, env: Mapping[str, str]) -> tuple[str, str]:
    """(PATH the command runs with, where it came from)."""
    bin_dir, how = _activated_bin(cmd.before, env)
    script_path = cmd.variables.get("PATH", "")
    if script_path and UNKNOWN not in script_path and script_path != env.get("PATH"):
        path, how = script_path, how or "the PATH the script sets"
    else:
        path = env.get("PATH", "")
        how = how or "this shell's PATH"
    if bin_dir:
        path = bin_dir + os.pathsep + path
    return path, how


def job_interpreter(cmd: TrainingCommand, env: Mapping[str, str] | None = None,
                    where: str = "the script") -> Interpreter:
    """The Python the training command runs in, found without running anything."""
    env = dict(os.environ if env is None else env)
    launch: Launch = cmd.launch
    at = f"{where}:{cmd.line}"
    if launch.container:
        return Interpreter("", f"{at} runs in the container image {launch.container}: its "
                               "Python is inside the image", elsewhere=True)
    search, how = _search_path(cmd, env)
    word = launch.python_word
    if word:
        if UNKNOWN in word:
            return Interpreter("", f"{at}: the interpreter is computed at run time")
        found = word if "/" in word else shutil.which(word, path=search)
        if found and os.access(found, os.X_OK):
            return Interpreter(found, f"{at}: {word}" + ("" if "/" in word else f", on {how}"))
        return Interpreter("", f"{at}: {word} is not on this node"
                               + ("" if "/" in word else f" ({how})"), elsewhere=True)
    for step in launch.steps:  # a launcher's console script names its Python on line 1
        if UNKNOWN in step.word:
            continue
        found = step.word if "/" in step.word else shutil.which(step.word, path=search)
        if not found:
            continue
        python = _shebang_python(found)
        if python:
            return Interpreter(python, f"{at}: the #! line of {found}")
    names = ", ".join(launch.names) or "its command"
    return Interpreter("", f"{at}: cannot tell which Python {names} runs in from this node")
