"""Preflight checks any launch script gets, whatever framework it trains with.

The launcher and its world size, a batch script that starts one process where it asked Slurm for
many, a launcher line that runs no program, the DeepSpeed batch arithmetic of a config JSON
beside the script, and the environment the ranks will see (a forced NCCL_ALGO, no
NCCL_SOCKET_IFNAME on a multi-NIC node of a multi-node job...). Megatron's own checks (layout
divisibility, the memory estimate) live in `trainmedic.memory` and need Megatron's arguments;
here is everything that does not.

Every check is one `Check` (`trainmedic.launch.check`): a name, pass/warn/fail/skip and one
line; `to_dict()` is the `--json` form. `skip` says plainly that a check could not run, and why.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

from trainmedic.launch.check import Check
from trainmedic.launch.launcher import Launch, count, option
from trainmedic.launch.script import TrainingCommand

MAX_CONFIG_BYTES = 1024 * 1024
# HF TrainingArguments defaults, used where a DeepSpeed config says "auto" and the command line
# does not give the value (transformers' TrainingArguments: per_device_train_batch_size=8,
# gradient_accumulation_steps=1)
HF_DEFAULTS = {"per_device_train_batch_size": 8, "gradient_accumulation_steps": 1}
# NCCL skips these by default when it picks a socket interface (NCCL docs, NCCL_SOCKET_IFNAME)
_NCCL_SKIPPED = ("lo", "docker")


# -- the launcher --------------------------------------------------------------------------

def launcher_checks(cmd: TrainingCommand, where: str) -> list[Check]:
    """The launcher and its world size; a program-less launcher line; one process where the
    batch script asked Slurm for many."""
    launch = cmd.launch
    at = f"{where}:{cmd.line}"
    out: list[Check] = []
    if not cmd.script:
        out.append(Check("launcher-program", "fail",
                         f"{at}: `{' '.join(cmd.launcher)[:120]}` starts no Python program "
                         "(the line ends before any .py: an unset variable?)"))
    if launch.world_size:
        out.append(Check("launcher", "pass", f"{at}: {launch.describe()}"))
    else:
        why = launch.world_source or "the launcher's process count is not in the script"
        out.append(Check("launcher", "warn", f"{at}: {' → '.join(launch.names) or 'no launcher'}"
                         f"; world size unknown ({why})"))
    asked = _sbatch_tasks(cmd.sbatch)
    if asked and asked > 1 and launch.names == ["python"]:
        out.append(Check("launcher-starts-one", "warn",
                         f"{at}: the batch script asks Slurm for {asked} tasks but runs python "
                         "directly: one process, on the first node only (start it with srun, "
                         "or torchrun on each node)"))
    return out


def _sbatch_tasks(sbatch: Mapping[str, str]) -> int | None:
    tasks = count(sbatch.get("ntasks"))
    if tasks:
        return tasks
    per_node = count(sbatch.get("ntasks-per-node") or sbatch.get("tasks-per-node"))
    return per_node * (count(sbatch.get("nodes")) or 1) if per_node else None


# -- DeepSpeed batch arithmetic -----------------------------------------------------------

def deepspeed_config_path(cmd: TrainingCommand) -> str | None:
    """The DeepSpeed config the program is given: `--deepspeed_config FILE` (DeepSpeed's
    argument), or `--deepspeed FILE` (the HF Trainer's; DeepSpeed's own `--deepspeed` is a bare
    switch, followed by another option)."""
    named = option(cmd.args, "--deepspeed_config", "--deepspeed-config")
    if named:
        return named
    value = option(cmd.args, "--deepspeed")
    return value if value and not value.startswith("-") and value.endswith(".json") else None


def find_config(name: str, script_dir: Path | None, cwd: Path) -> Path | None:
    """`name` where the job would find it: as given from the working directory, next to the
    script, or from a folder above the script (scripts/run.sh run from the repository root)."""
    path = Path(name).expanduser()
    if path.is_absolute():
        return path if path.is_file() else None
    bases = [cwd]
    if script_dir is not None:
        bases += [script_dir, *list(script_dir.parents)[:3]]
    return next((base / path for base in bases if (base / path).is_file()), None)


def _config_value(config: Mapping[str, object], key: str) -> int | str | None:
    """An int, "auto", or None (absent or not a usable value)."""
    value = config.get(key)
    if value == "auto":
        return "auto"
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return None


def deepspeed_batch_check(cmd: TrainingCommand, where: str, script_dir: Path | None,
                          cwd: Path) -> Check | None:
    """train_batch_size = micro x grad-accum x world, as DeepSpeed derives and asserts it;
    None when the program is given no DeepSpeed config."""
    name = deepspeed_config_path(cmd)
    if name is None:
        return None
    path = find_config(name, script_dir, cwd)
    if path is None:
        return Check("deepspeed-batch", "warn", f"{where}:{cmd.line}: DeepSpeed config {name} "
                     "not found from here (nor next to the script): batch arithmetic not checked")
    try:
        with open(path, "rb") as handle:
            data = json.loads(handle.read(MAX_CONFIG_BYTES + 1)[:MAX_CONFIG_BYTES])
    except (OSError, ValueError) as exc:
        return Check("deepspeed-batch", "fail", f"{path}: not a readable JSON config ({exc})")
    if not isinstance(data, dict):
        return Check("deepspeed-batch", "fail", f"{path}: a DeepSpeed config is a JSON object")
    return batch_arithmetic(data, str(path), cmd.args, cmd.launch)


def batch_arithmetic(config: Mapping[str, object], shown: str, args: list[str],
                     launch: Launch) -> Check:
    """DeepSpeed's `_set_batch_related_parameters` and `_batch_assertion` over the config, with
    "auto" filled as the HF Trainer fills it (from its command-line arguments)."""
    world = launch.world_size
    values = {key: _config_value(config, key) for key in (
        "train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps")}
    notes: list[str] = []
    if "auto" in values.values():
        per_device = count(option(args, "--per_device_train_batch_size",
                                  "--per-device-train-batch-size"))
        accum = count(option(args, "--gradient_accumulation_steps",
                             "--gradient-accumulation-steps"))
        if per_device is None:
            per_device = HF_DEFAULTS["per_device_train_batch_size"]
            notes.append(f"--per_device_train_batch_size not given: the HF default {per_device}")
        if accum is None:
            accum = HF_DEFAULTS["gradient_accumulation_steps"]
        fill = {"train_micro_batch_size_per_gpu": per_device,
                "gradient_accumulation_steps": accum,
                "train_batch_size": per_device * accum * world if world else None}
        for key, value in values.items():
            if value == "auto":
                values[key] = fill[key]
        notes.append('"auto" filled from the HF Trainer arguments')
    train, micro, accum_steps = (v if isinstance(v, int) else None for v in values.values())
    head = f"{shown}: "
    if train is None and micro is None:
        return Check("deepspeed-batch", "fail", head + "gives neither train_batch_size nor "
                     "train_micro_batch_size_per_gpu: DeepSpeed needs one of them")
    if not world:
        return Check("deepspeed-batch", "skip", head + "the world size is unknown, so "
                     f"train_batch_size = micro x grad-accum x world cannot be checked "
                     f"({launch.world_source or 'no process count in the launcher'})")
    # what DeepSpeed derives when a value is missing (integer division, as it does)
    if train is not None and micro is not None and accum_steps is None:
        accum_steps = train // micro // world
    elif train is not None and accum_steps is not None and micro is None:
        micro = train // world // accum_steps
    elif micro is not None and train is None:
        accum_steps = accum_steps or 1
        train = micro * accum_steps * world
    elif train is not None and micro is None:
        accum_steps, micro = 1, train // world
    assert train is not None and micro is not None and accum_steps is not None
    said = f"{train} = {micro} x {accum_steps} x {world} (world: {launch.world_source})"
    extra = f" [{'; '.join(notes)}]" if notes else ""
    if min(train, micro, accum_steps) <= 0 or train != micro * accum_steps * world:
        return Check("deepspeed-batch", "fail", head + "DeepSpeed will stop at start-up: "
                     f"train_batch_size {train} != micro {micro} x grad-accum {accum_steps} x "
                     f"world {world} (data-parallel ranks)" + extra)
    return Check("deepspeed-batch", "pass", head + f"train_batch_size {said}" + extra)


# -- the environment the ranks see ----------------------------------------------------------

def launcher_exports(cmd: TrainingCommand) -> dict[str, str]:
    """Variables an MPI launcher passes to the ranks (`mpirun -x NAME=VALUE`)."""
    out: dict[str, str] = {}
    for step in cmd.launch.steps:
        if step.name not in ("mpirun", "mpiexec"):
            continue
        for i, word in enumerate(step.options[:-1]):
            if word == "-x" and "=" in step.options[i + 1]:
                name, _, value = step.options[i + 1].partition("=")
                out[name] = value
    return out


def environment_checks(facts: Mapping[str, object] | None, source: str, *,
                       nnodes: int | None = None,
                       megatron_overlap: bool | None = None) -> list[Check]:
    """Checks over the env probe's `facts` (None when the examination failed; `source` says
    why or how). `nnodes`: the job's node count, when known. `megatron_overlap`: Megatron runs
    tensor parallel or sequence parallel (None: not a Megatron command; that check is
    skipped, saying so)."""
    if facts is None:
        return [Check("environment", "warn", f"environment not examined: {source}")]
    out: list[Check] = []

    def add(name: str, bad: bool, good: str, problem: str) -> None:
        out.append(Check(name, "warn" if bad else "pass", (problem if bad else good)
                         + f" [{source}]"))

    myths = facts.get("myth_vars")
    myth_names = [str(m) for m in myths] if isinstance(myths, list) else []
    add("env-no-effect-vars", bool(myth_names), "no variables that nothing reads",
        f"set but read by no library: {', '.join(myth_names)} (the collective timeout is "
        "init_process_group(timeout=...); Megatron: --distributed-timeout-minutes)")
    add("env-launch-blocking", bool(facts.get("launch_blocking")),
        "CUDA_LAUNCH_BLOCKING is off",
        "CUDA_LAUNCH_BLOCKING=1 serialises every kernel: for debugging only")
    add("env-async-error-handling", facts.get("async_error_handling") is False,
        "NCCL errors and timeouts tear the job down (TORCH_NCCL_ASYNC_ERROR_HANDLING)",
        "TORCH_NCCL_ASYNC_ERROR_HANDLING=0: a NCCL timeout will hang instead of failing")
    forced = [f"{name}={facts.get(fact)}" for name, fact in (("NCCL_ALGO", "nccl_algo"),
                                                             ("NCCL_PROTO", "nccl_proto"))
              if facts.get(fact)]
    add("env-nccl-forced", bool(forced), "NCCL chooses its own algorithm and protocol",
        f"{', '.join(forced)} forces NCCL's choice: NCCL documents these for debugging only "
        "(slower, or hangs on other topologies); remove them unless a workaround needs them")
    out.append(_socket_ifname(facts, source, nnodes))
    if megatron_overlap is None:
        out.append(Check("env-max-connections", "skip", "CUDA_DEVICE_MAX_CONNECTIONS: needs "
                         "Megatron arguments (only Megatron's TP/SP overlap requires 1)"))
    elif megatron_overlap:
        add("env-max-connections", not facts.get("max_connections_one"),
            "CUDA_DEVICE_MAX_CONNECTIONS=1 for TP communication overlap",
            "CUDA_DEVICE_MAX_CONNECTIONS is not 1: Megatron needs it with TP/sequence parallel "
            "to order communication before compute")
    return out


def _socket_ifname(facts: Mapping[str, object], source: str, nnodes: int | None) -> Check:
    interfaces = facts.get("interfaces")
    names = [str(i) for i in interfaces] if isinstance(interfaces, list) else []
    candidates = [n for n in names if not n.startswith(_NCCL_SKIPPED)]
    if facts.get("socket_ifname_set"):
        if facts.get("socket_ifname_matches") is False:
            return Check("env-socket-ifname", "warn",
                         "NCCL_SOCKET_IFNAME selects no interface of this node (it has: "
                         f"{', '.join(names) or 'none'}): on nodes like this one NCCL's "
                         f"bootstrap fails [{source}]")
        return Check("env-socket-ifname", "pass", f"NCCL_SOCKET_IFNAME is set [{source}]")
    if nnodes == 1:
        return Check("env-socket-ifname", "pass", "one node: NCCL talks over NVLink/PCIe and "
                     "shared memory, no socket interface to choose")
    if len(candidates) > 1:
        where = "a multi-node job" if nnodes else "a job that may span nodes"
        return Check("env-socket-ifname", "warn",
                     f"NCCL_SOCKET_IFNAME is unset and this node has {len(candidates)} "
                     f"interfaces NCCL may pick from ({', '.join(candidates[:6])}): in {where} "
                     "the ranks can pick different ones and hang at bootstrap; set it to the "
                     f"interface the nodes reach each other on [{source}]")
    return Check("env-socket-ifname", "pass",
                 f"NCCL_SOCKET_IFNAME unset; {len(candidates) or 'no'} candidate interface "
                 f"here [{source}]")


def script_folder(path: str | None) -> Path | None:
    """The folder of the launch script, for files it names relative to itself."""
    if not path:
        return None
    folder = Path(path).expanduser().resolve().parent
    return folder if folder.is_dir() else None


def working_folder() -> Path:
    return Path(os.getcwd())
