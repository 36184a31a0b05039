"""Where the job runs: its Python and its environment, as far as this machine can tell.

trainmedic is often installed in a venv of its own (pipx, uv tool) and run from a login shell,
so its own interpreter and its own environment are not the job's. The versions and env probes
read the job's instead, from what the person said (`--python`, `--pid`, TRAINMEDIC_PYTHON,
TRAINMEDIC_JOB_PID), the launch script (its interpreter and its exports), or the activated
venv/conda env; and say where they read it. The launch script is read through
`trainmedic.launch` (this module is the probes' adapter to it).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from trainmedic.errors import TrainmedicError
from trainmedic.probes.base import ProbeContext
from trainmedic.probes.memory_estimate import SCRIPT_ENV

PYTHON_ENV = "TRAINMEDIC_PYTHON"
PID_ENV = "TRAINMEDIC_JOB_PID"
# where pipx and `uv tool` keep the venv of an installed application
_TOOL_VENVS = ("/pipx/venvs/", "/uv/tools/", "/.local/share/uv/tools/")


@dataclass(frozen=True)
class JobPython:
    """The job's interpreter: `path` ("" when unknown), `source` (how it was found or why not)
    and `own` (it is trainmedic's own interpreter, chosen for want of any other)."""

    path: str
    source: str
    own: bool = False


def tool_venv(prefix: str | None = None) -> bool:
    """trainmedic runs from an application venv of its own (pipx, uv tool): never the job's."""
    folder = (sys.prefix if prefix is None else prefix).replace(os.sep, "/") + "/"
    return any(part in folder for part in _TOOL_VENVS)


def _launch_text(context: ProbeContext, env: Mapping[str, str]) -> tuple[str, str] | None:
    """(script text, where) from the walk's launch command or TRAINMEDIC_LAUNCH_SCRIPT."""
    from trainmedic.launch.script import read_launch_text, read_script

    try:
        if context.launch_command.strip():
            return read_launch_text(context.launch_command)
        path = env.get(SCRIPT_ENV, "").strip()
        return (read_script(path), path) if path else None
    except TrainmedicError:
        return None


def _from_script(text: str, where: str, env: Mapping[str, str]) -> JobPython | None:
    from trainmedic.launch.interpreter import job_interpreter
    from trainmedic.launch.script import training_command

    try:
        cmd = training_command(text, path=where)
    except TrainmedicError:
        return None
    found = job_interpreter(cmd, env, where=os.path.basename(where) or where)
    if not found.path and not found.elsewhere:
        return None  # the script does not say: look further
    return JobPython(found.path, found.how)


def job_python(context: ProbeContext, env: Mapping[str, str] | None = None) -> JobPython:
    """The job's Python: --python, TRAINMEDIC_PYTHON, the launch script's, the activated
    venv/conda env's, else trainmedic's own (`own`: the caller must not trust it blindly)."""
    env = os.environ if env is None else env
    if context.python.strip():
        return JobPython(context.python.strip(), "--python")
    if env.get(PYTHON_ENV, "").strip():
        return JobPython(env[PYTHON_ENV].strip(), PYTHON_ENV)
    script = _launch_text(context, env)
    if script is not None:
        found = _from_script(*script, env)
        if found is not None:
            return found
    for variable in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        prefix = env.get(variable, "").strip()
        if prefix:
            python = Path(prefix) / "bin" / "python"
            if os.access(python, os.X_OK):
                own = Path(prefix).resolve() == Path(sys.prefix).resolve()
                return JobPython(str(python), f"the activated env ({variable}={prefix})"
                                 + (", trainmedic's own" if own else ""))
    return JobPython(sys.executable, "trainmedic's own Python", own=True)


# -- the job's environment ------------------------------------------------------------------

@dataclass(frozen=True)
class JobEnvironment:
    """Variables the job sees, as far as can be read: `env` (None when unreadable), `source`
    (where they came from, or why they could not be read) and `from_job` (read from a running
    rank, not guessed from this shell)."""

    env: dict[str, str] | None
    source: str
    from_job: bool = False


def _parse_environ(data: bytes) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in data.split(b"\0"):
        name, eq, value = item.partition(b"=")
        if eq and name:
            out[name.decode("utf-8", "replace")] = value.decode("utf-8", "replace")
    return out


def _find_pid(name: str, proc: Path) -> tuple[str, int]:
    """(lowest PID whose command line holds `name`, how many match), never this process."""
    me = os.getpid()
    matches: list[int] = []
    try:
        entries = list(proc.iterdir())
    except OSError:
        return "", 0
    for entry in entries:
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()[:65536]
        except OSError:
            continue
        if name.encode() in cmdline.replace(b"\0", b" "):
            matches.append(int(entry.name))
    return (str(min(matches)) if matches else ""), len(matches)


def read_process_env(target: str, proc: Path = Path("/proc")) -> JobEnvironment:
    """The environment of a running rank: a PID, or a name in its command line (the lowest
    PID that matches); where permitted (the same user, or root)."""
    pid, matches = (target, 1) if target.isdigit() else _find_pid(target, proc)
    if not pid:
        return JobEnvironment(None, f"no running process matches {target!r}")
    path = proc / pid / "environ"
    try:
        data = path.read_bytes()
    except PermissionError:
        return JobEnvironment(None, f"{path}: permission denied (another user's process; run "
                                    "as that user or as root)")
    except OSError as exc:
        return JobEnvironment(None, f"{path}: {exc.strerror or exc}")
    more = f", the lowest of {matches} matching" if matches > 1 else ""
    return JobEnvironment(_parse_environ(data), f"pid {pid} ({path}{more})", from_job=True)


def job_environment(context: ProbeContext, env: Mapping[str, str] | None = None,
                    proc: Path = Path("/proc")) -> JobEnvironment:
    """A running rank's environment when one was named (--pid, TRAINMEDIC_JOB_PID), else this
    shell's with the launch script's exports on top, labelled as not the job's."""
    env = dict(os.environ if env is None else env)
    target = context.job_pid.strip() or env.get(PID_ENV, "").strip()
    if target:
        return read_process_env(target, proc)
    script = _launch_text(context, env)
    if script is not None:
        exported = _script_exports(script[0])
        if exported is not None:
            return JobEnvironment({**env, **exported}, f"this shell with the exports of "
                                  f"{os.path.basename(script[1])}, not the running job")
    return JobEnvironment(env, "this shell, not the job")


def _script_exports(text: str) -> dict[str, str] | None:
    from trainmedic.launch.launcher import sbatch_options, slurm_environment
    from trainmedic.launch.shell import UNKNOWN, interpret

    try:
        shell = interpret(text, slurm_environment(sbatch_options(text)))
    except TrainmedicError:
        return None
    return {k: v for k, v in shell.exported.items() if UNKNOWN not in v}
