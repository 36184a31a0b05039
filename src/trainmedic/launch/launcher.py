"""Which launcher starts the training processes, and how many it starts.

A training command is usually a chain: `srun ... torchrun ... train.py`, `deepspeed ...
train.py`, `accelerate launch ... train.py`, `mpirun -np 16 python train.py`, or plain
`python train.py`. The innermost launcher that states a process count decides the world size
(srun starting one torchrun per node, each starting 8 ranks, is 8 x nodes, not the srun count).
Options are read as each launcher documents them; a count computed at run time stays unknown.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from trainmedic.launch.shell import UNKNOWN

# `python -m MODULE` forms of the launchers
_MODULE_LAUNCHERS = {
    "torch.distributed.run": "torchrun",
    "torch.distributed.launch": "torchrun",
    "deepspeed.launcher.runner": "deepspeed",
    "accelerate.commands.launch": "accelerate",
}
_LAUNCHER_WORDS = {"torchrun", "deepspeed", "accelerate", "srun", "mpirun", "mpiexec"}
PYTHON_WORD = re.compile(r"^python(\d+(\.\d+)?)?$")


@dataclass
class LaunchStep:
    """One launcher of the chain and the words that follow it up to the next one."""

    name: str  # torchrun, deepspeed, accelerate, srun, mpirun, python
    word: str  # as written: /opt/venv/bin/torchrun, python3, ...
    options: list[str] = field(default_factory=list)


@dataclass
class Launch:
    """What the launcher prefix of a training command says."""

    steps: list[LaunchStep]
    world_size: int | None = None
    world_source: str = ""
    nnodes: int | None = None
    nnodes_source: str = ""
    container: str = ""  # srun --container-image (pyxis): the job's Python is in there
    notes: list[str] = field(default_factory=list)

    @property
    def names(self) -> list[str]:
        """The launchers, outermost first (`python` only when nothing else launches)."""
        named = [s.name for s in self.steps if s.name != "python"]
        return named or [s.name for s in self.steps][:1]

    @property
    def python_word(self) -> str:
        """The interpreter as the command names it (`python3`, `/opt/venv/bin/python`), or ""."""
        return next((s.word for s in self.steps if s.name == "python"), "")

    def describe(self) -> str:
        chain = " → ".join(self.names) or "the command itself"
        world = (f"{self.world_size} process(es) ({self.world_source})" if self.world_size
                 else "world size unknown" + (f" ({self.world_source})" if self.world_source
                                              else ""))
        return f"{chain}; {world}"


def steps_of(prefix: list[str]) -> list[LaunchStep]:
    """Split the words before the training program into launchers and their options."""
    steps: list[LaunchStep] = []
    i = 0
    while i < len(prefix):
        word = prefix[i]
        base = os.path.basename(word)
        if PYTHON_WORD.match(base):
            step = LaunchStep("python", word)
            if i + 2 <= len(prefix) - 1 and prefix[i + 1] == "-m" \
                    and prefix[i + 2] in _MODULE_LAUNCHERS:
                steps.append(step)
                steps.append(LaunchStep(_MODULE_LAUNCHERS[prefix[i + 2]], prefix[i + 2]))
                i += 3
                continue
            steps.append(step)
        elif base in _LAUNCHER_WORDS:
            steps.append(LaunchStep(base, word))
            if base == "accelerate" and i + 1 < len(prefix) and prefix[i + 1] == "launch":
                i += 1
        elif steps:
            steps[-1].options.append(word)
        i += 1
    return steps


def option(words: list[str], *names: str) -> str | None:
    """The last value of any of `names` (`--opt V`, `--opt=V`, `-nV` for one-letter names)."""
    value = None
    for i, word in enumerate(words):
        name, eq, inline = word.partition("=")
        if name in names:
            if eq:
                value = inline
            elif i + 1 < len(words):
                value = words[i + 1]
        elif any(len(n) == 2 and word.startswith(n) and word[2:].isdigit() for n in names):
            value = word[2:]
    return value


def count(text: str | None) -> int | None:
    """A process or node count as written; None when computed at run time or not a number.
    An elastic range `1:4` counts its maximum."""
    if text is None or UNKNOWN in text:
        return None
    text = text.split(":")[-1].strip()
    return int(text) if text.isdigit() and int(text) > 0 else None


def _torchrun(step: LaunchStep, launch: Launch) -> tuple[int | None, str]:
    nproc_text = option(step.options, "--nproc_per_node", "--nproc-per-node")
    nnodes = count(option(step.options, "--nnodes"))
    if nnodes:
        launch.nnodes, launch.nnodes_source = nnodes, "torchrun --nnodes"
    nproc = count(nproc_text)
    if nproc_text in ("gpu", "auto"):
        return None, f"torchrun --nproc_per_node {nproc_text}: one process per GPU of each node"
    if nproc is None:
        return None, "" if nproc_text is None else "torchrun --nproc_per_node is computed at " \
                                                   "run time"
    return nproc * (nnodes or 1), f"torchrun --nnodes {nnodes or 1} x --nproc_per_node {nproc}"


def _deepspeed(step: LaunchStep, launch: Launch) -> tuple[int | None, str]:
    gpus = count(option(step.options, "--num_gpus", "--num-gpus"))
    nodes = count(option(step.options, "--num_nodes", "--num-nodes"))
    if nodes:
        launch.nnodes, launch.nnodes_source = nodes, "deepspeed --num_nodes"
    include = option(step.options, "--include", "-i")
    if gpus is None and include and UNKNOWN not in include:
        slots = _include_slots(include)
        if slots is not None:
            launch.nnodes, launch.nnodes_source = len(slots), "deepspeed --include"
            return sum(slots), f"deepspeed --include {include}"
    if gpus is None:
        hosts = option(step.options, "--hostfile", "-H")
        return None, ("deepspeed without --num_gpus: every GPU of " +
                      ("the hosts in its hostfile" if hosts else "each host"))
    return gpus * (nodes or 1), f"deepspeed --num_nodes {nodes or 1} x --num_gpus {gpus}"


def _include_slots(spec: str) -> list[int] | None:
    """GPUs per host of `--include host1:0,1@host2:2`; None when a host lists no slots."""
    counts: list[int] = []
    for host in spec.split("@"):
        _name, colon, slots = host.partition(":")
        if not colon or not slots:
            return None
        counts.append(len([s for s in slots.split(",") if s.strip()]))
    return counts


def _accelerate(step: LaunchStep, launch: Launch) -> tuple[int | None, str]:
    machines = count(option(step.options, "--num_machines", "--num-machines"))
    if machines:
        launch.nnodes, launch.nnodes_source = machines, "accelerate --num_machines"
    total = count(option(step.options, "--num_processes", "--num-processes"))
    if total is None:
        config = option(step.options, "--config_file", "--config-file")
        return None, ("accelerate takes its process count from "
                      + (f"{config}" if config else "its default config file"))
    return total, "accelerate --num_processes"


def _srun(step: LaunchStep, launch: Launch, sbatch: dict[str, str]) -> tuple[int | None, str]:
    image = option(step.options, "--container-image")
    if image:
        launch.container = image
    nodes = count(option(step.options, "-N", "--nodes")) or count(sbatch.get("nodes"))
    if nodes and launch.nnodes is None:
        launch.nnodes, launch.nnodes_source = nodes, "srun/#SBATCH --nodes"
    total = count(option(step.options, "-n", "--ntasks")) or count(sbatch.get("ntasks"))
    if total:
        return total, "srun --ntasks"
    per_node = count(option(step.options, "--ntasks-per-node")) \
        or count(sbatch.get("ntasks-per-node"))
    if per_node:
        return per_node * (nodes or 1), f"srun --nodes {nodes or 1} x --ntasks-per-node {per_node}"
    return None, ""


def _mpirun(step: LaunchStep, _launch: Launch) -> tuple[int | None, str]:
    total = count(option(step.options, "-np", "--np", "-n", "-c"))
    return (total, f"{step.name} -np") if total else (None, "")


def describe_launch(prefix: list[str], sbatch: dict[str, str] | None = None) -> Launch:
    """The launchers, world size and node count of the words before the training program;
    `sbatch` holds the script's `#SBATCH` options (srun inherits them)."""
    launch = Launch(steps_of(prefix))
    found: list[tuple[int | None, str]] = []
    for step in launch.steps:
        if step.name == "torchrun":
            found.append(_torchrun(step, launch))
        elif step.name == "deepspeed":
            found.append(_deepspeed(step, launch))
        elif step.name == "accelerate":
            found.append(_accelerate(step, launch))
        elif step.name == "srun":
            found.append(_srun(step, launch, sbatch or {}))
        elif step.name in ("mpirun", "mpiexec"):
            found.append(_mpirun(step, launch))
    spawners = [f for f in found if f[0] is not None]
    if spawners:
        launch.world_size, launch.world_source = spawners[-1]  # the innermost count wins
    elif found:
        launch.world_source = next((why for _n, why in reversed(found) if why), "")
    elif launch.steps and all(s.name == "python" for s in launch.steps):
        launch.world_size, launch.world_source = 1, "python without a launcher: one process"
        launch.nnodes, launch.nnodes_source = 1, "python without a launcher"
    return launch


_SBATCH = re.compile(r"^#SBATCH\s+(.*)$")
_SBATCH_SHORT = {"-N": "nodes", "-n": "ntasks", "-G": "gpus"}


def sbatch_options(text: str) -> dict[str, str]:
    """`#SBATCH` options of a batch script, as long names (`nodes`, `ntasks-per-node`, ...).
    sbatch reads them only until the first command, and so do we."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or (stripped.startswith("#") and not stripped.startswith("#SBATCH")):
            continue
        match = _SBATCH.match(stripped)
        if not match:
            break
        words = match.group(1).split("#", 1)[0].split()
        for i, word in enumerate(words):
            if word.startswith("--"):
                name, eq, value = word[2:].partition("=")
                if not eq and i + 1 < len(words) and not words[i + 1].startswith("-"):
                    value = words[i + 1]
                found[name] = value
            elif word[:2] in _SBATCH_SHORT:
                value = word[2:] or (words[i + 1] if i + 1 < len(words) else "")
                found[_SBATCH_SHORT[word[:2]]] = value
    return found


def slurm_environment(sbatch: dict[str, str]) -> dict[str, str]:
    """The SLURM_* variables a job with these `#SBATCH` options sees, for scripts that build
    their launcher from them (`--nnodes $SLURM_NNODES`)."""
    env: dict[str, str] = {}
    nodes = count(sbatch.get("nodes"))
    if nodes:
        env["SLURM_NNODES"] = env["SLURM_JOB_NUM_NODES"] = str(nodes)
    per_node = count(sbatch.get("ntasks-per-node"))
    if per_node:
        env["SLURM_NTASKS_PER_NODE"] = str(per_node)
    ntasks = count(sbatch.get("ntasks")) or (per_node * nodes if per_node and nodes else None)
    if ntasks:
        env["SLURM_NTASKS"] = env["SLURM_NPROCS"] = str(ntasks)
    gpus = sbatch.get("gpus-per-node") or ""
    gres = re.search(r"gpu(?::[\w-]+)?:(\d+)", sbatch.get("gres", ""))
    per_node_gpus = count(gpus.split(":")[-1] if gpus else None) or (
        int(gres.group(1)) if gres else None)
    if per_node_gpus:
        env["SLURM_GPUS_ON_NODE"] = env["SLURM_GPUS_PER_NODE"] = str(per_node_gpus)
    return env
