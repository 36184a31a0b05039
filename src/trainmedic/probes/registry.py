"""Every probe, declared as data: name, one-line description, timeout and typed facts.

Tree lint checks rule facts against `declared_facts()`, so this module stays cheap: it imports
no probe code (nor any engine a probe reads) and runs nothing. A probe's code is imported only
when the probe runs.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import cast

from trainmedic.errors import UsageError
from trainmedic.probes.base import Probe
from trainmedic.probes.host_specs import HOST_PROBES

FACT_TYPES = ("int", "float", "bool", "str", "list")


@dataclass(frozen=True)
class ProbeSpec:
    name: str
    description: str
    timeout: float  # seconds; the runner may override it (tests, --timeout)
    facts: dict[str, str]  # fact name -> type name among FACT_TYPES
    module: str = ""  # trainmedic.probes.<module>.probe(budget, context) does the work
    func: Probe | None = field(default=None, compare=False)
    uses_launch_command: bool = False  # reads ProbeContext.launch_command
    # the program a probe waits on: when the probe does not finish in time, that program hung
    # (a hung nvidia-smi is a node fault, not "cannot tell")
    waits_on: str = ""
    # reads a saved record (the last cluster sweep), not this machine: shown only when asked
    # for, and never part of a local run's exit status
    recorded: bool = False

    def load(self) -> Probe:
        if self.func is not None:
            return self.func
        return cast(Probe, importlib.import_module(f"trainmedic.probes.{self.module}").probe)


_GPU_FACTS = {
    "count": "int",
    "expected": "int",
    "missing": "int",
    "max_memory_fraction": "float",
    "max_memory_used_mib": "float",
    "min_memory_total_mib": "float",
    "ecc_uncorrected": "int",
    "max_temperature_c": "float",
    "throttled": "bool",
    "remap_pending": "bool",
    "reset_required": "bool",
    "mig_enabled": "bool",
    "driver_ok": "bool",
    "driver_version": "str",
    "wedged": "int",
    "models": "list",
    "throttle_reasons": "list",
}

PROBES: dict[str, ProbeSpec] = {
    spec.name: spec
    for spec in (
        ProbeSpec(
            "gpu",
            "nvidia-smi per-GPU memory, ECC, temperature, throttling, MIG; -q -x for row remapping",
            10.0,
            _GPU_FACTS,
            "gpu",
        ),
        ProbeSpec(
            "gpu-processes",
            "compute processes holding GPU memory (a leftover process is a classic OOM cause)",
            8.0,
            {
                "count": "int",
                "max_per_gpu": "int",
                "total_memory_mib": "float",
                "pids": "list",
                "hidden_memory_mib": "float",
            },
            "gpu_processes",
        ),
        ProbeSpec(
            "topology",
            "nvidia-smi topo -m: NVLink, GPU pairs through the CPU, NIC affinity",
            8.0,
            {
                "gpu_count": "int",
                "nvlink": "bool",
                "pairs_via_cpu": "int",
                "pairs_via_pcie_switch": "int",
                "min_nvlinks": "int",
                "nics": "list",
                "gpus_without_near_nic": "int",
                "count_matches_gpu": "bool",
            },
            "topology",
        ),
        ProbeSpec(
            "env",
            "environment variables that matter to NCCL/PyTorch/Megatron, with myths and leftovers",
            2.0,
            {
                "myth_vars": "list",
                "myth_count": "int",
                "launch_blocking": "bool",
                "max_connections_one": "bool",
                "nccl_debug": "str",
                "socket_ifname_set": "bool",
                "socket_ifname_matches": "bool",
                "ib_hca_matches": "bool",
                "ib_disabled": "bool",
                "master_addr_set": "bool",
                "expandable_segments": "bool",
                "async_error_handling": "bool",
                "trace_buffer_set": "bool",
                "deprecated_vars": "list",
                "distributed_debug": "str",
                "p2p_disabled": "bool",
                "finding_count": "int",
                "findings": "list",
                "nccl_algo": "str",
                "nccl_proto": "str",
                "interfaces": "list",
                "from_job": "bool",
            },
            "env",
            uses_launch_command=True,
        ),
        ProbeSpec(
            "versions",
            "Python, torch (+CUDA, NCCL), TE, flash-attn, apex, Megatron-Core, DeepSpeed, driver",
            5.0,
            {
                "python": "str",
                "torch": "str",
                "torch_cuda": "str",
                "nccl": "str",
                "transformer_engine": "str",
                "flash_attn": "str",
                "apex": "str",
                "megatron_core": "str",
                "deepspeed": "str",
                "accelerate": "str",
                "transformers": "str",
                "driver": "str",
                "driver_too_old": "bool",
            },
            "versions",
            uses_launch_command=True,
        ),
        ProbeSpec(
            "kernel-xid",
            "NVRM Xid errors and fallen-off-the-bus lines in the kernel log, with what to do",
            6.0,
            {
                "count": "int",
                "codes": "list",
                "fatal": "bool",
                "fallen_off_bus": "bool",
                "ecc": "bool",
                "sxid_count": "int",
            },
            "kernel_xid",
        ),
        ProbeSpec(
            "infiniband",
            "ibstat (or ibv_devinfo): InfiniBand/RoCE port states and rates",
            6.0,
            {
                "ports": "int",
                "ports_down": "int",
                "ib_ports_down": "int",
                "min_rate_gbps": "float",
                "down_ports": "list",
            },
            "infiniband",
        ),
        ProbeSpec(
            "rendezvous",
            "does MASTER_ADDR resolve, does MASTER_PORT answer, is the port taken on this node",
            5.0,
            {
                "master_addr_resolves": "bool",
                "master_port_open": "bool",
                "port_in_use_locally": "bool",
                "master_is_local": "bool",
                "port": "int",
            },
            "rendezvous",
        ),
    )
}


# Fact sources that read recorded inputs rather than the machine: the launch script's memory
# estimate and the last cluster sweep. They run like any probe and are declared the same way.
PROBES["memory"] = ProbeSpec(
    "memory",
    "theoretical per-GPU memory of the walk's launch command, or of TRAINMEDIC_LAUNCH_SCRIPT",
    12.0,
    {
        "total_gib": "float",
        "megatron_total_gib": "float",
        "capacity_gib": "float",
        "fits": "bool",
        "verdict": "str",
        "most_loaded_stage": "int",
        "check_failures": "int",
    },
    "memory_estimate",
    uses_launch_command=True,
)
PROBES["checkpoint-dir"] = ProbeSpec(
    "checkpoint-dir",
    "space, inodes and tracker file of the save directory (TRAINMEDIC_SAVE_DIR or --save)",
    6.0,
    {
        "path": "str",
        "source": "str",
        "exists": "bool",
        "used_fraction": "float",
        "free_gib": "float",
        "inodes_used_fraction": "float",
        "inodes_free": "int",
        "worst_used_fraction": "float",
        "fs_type": "str",
        "network_fs": "bool",
        "tracker_iteration": "int",
        "newest_iteration": "int",
        "partial_saves": "int",
    },
    "checkpoint_dir",
)
PROBES["slurm-job"] = ProbeSpec(
    "slurm-job",
    "this Slurm job's time limit, run time, restarts and its --signal before the limit",
    6.0,
    {
        "job_id": "str",
        "state": "str",
        "unlimited": "bool",
        "time_limit_s": "int",
        "run_time_s": "int",
        "time_left_s": "int",
        "requeue": "bool",
        "restarts": "int",
        "batch": "bool",
        "signal_in_script": "bool",
        "script_signal": "str",
        "signal_lead_s": "int",
        "signal_batch_only": "bool",
    },
    "slurm_job",
)
PROBES["cluster"] = ProbeSpec(
    "cluster",
    "the last `trainmedic probe --nodes` sweep: which nodes differ or fail",
    3.0,
    {
        "nodes": "int", "answered": "int", "bad_count": "int", "bad_nodes": "list",
        "verdicts": "list", "unreachable_count": "int", "hardware_nodes": "list",
        "xid_nodes": "list", "gpu_missing_nodes": "list", "ib_down_nodes": "list",
        "software_mismatch": "bool", "env_mismatch": "bool", "stray_process_nodes": "list",
        "split_facts": "list", "age_s": "float",
    },
    "cluster_last",
    recorded=True,
)
for _name, _description, _timeout, _facts, _module in HOST_PROBES:
    PROBES[_name] = ProbeSpec(_name, _description, _timeout, dict(_facts), _module)
for _name in ("gpu", "gpu-processes", "topology", "fabric", "pcie"):
    PROBES[_name] = replace(PROBES[_name], waits_on="nvidia-smi")


def machine_probes() -> list[str]:
    """The probes that read this machine: what a plain `trainmedic probe` runs."""
    return [name for name, spec in PROBES.items() if not spec.recorded]


def require_known(names: Iterable[str]) -> None:
    """Refuse unknown probe names up front (locally, or once before fanning out to every node)."""
    unknown = [n for n in names if n not in PROBES]
    if unknown:
        raise UsageError(
            f"unknown probe {', '.join(map(repr, unknown))}; valid: {', '.join(PROBES)}"
        )


def launch_command_readers(names: Iterable[str]) -> list[str]:
    """Those of `names` that read the walk's launch command."""
    return [n for n in names if n in PROBES and PROBES[n].uses_launch_command]


def declared_facts() -> dict[str, dict[str, str]]:
    """probe name -> {fact name -> type name}; cheap to call, runs nothing."""
    return {name: dict(spec.facts) for name, spec in PROBES.items()}
