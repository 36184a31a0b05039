"""Declarations of the host probes: shared memory, locked memory, container, fabric, PCIe and
the torch.compile cache directories.

Kept apart from `registry.py` as plain tuples (name, description, timeout, facts, module) so
the registry stays one import and one loop away from them and imports no probe code.
"""

from __future__ import annotations

HOST_PROBES: tuple[tuple[str, str, float, dict[str, str], str], ...] = (
    (
        "shm",
        "/dev/shm: size, free space and NCCL segments left behind (NCCL and DataLoader use it)",
        2.0,
        {
            "size_mib": "float",
            "free_mib": "float",
            "used_fraction": "float",
            "small": "bool",
            "nccl_segments": "int",
            "nccl_segments_mib": "float",
        },
        "shm",
    ),
    (
        "memlock",
        "locked-memory limit (ulimit -l) of this shell and CAP_IPC_LOCK, which RDMA needs",
        2.0,
        {
            "unlimited": "bool",
            "soft_mib": "float",
            "hard_mib": "float",
            "ipc_lock": "bool",
            "rdma_devices": "bool",
            "ok_for_rdma": "bool",
        },
        "memlock",
    ),
    (
        "container",
        "Docker, Podman, Kubernetes, Apptainer or Slurm cgroup; memory limit; SYS_NICE",
        2.0,
        {
            "in_container": "bool",
            "runtime": "str",
            "kubernetes": "bool",
            "slurm_cgroup": "bool",
            "cgroup_version": "int",
            "memory_limited": "bool",
            "memory_limit_gib": "float",
            "cap_sys_nice": "bool",
            "cap_ipc_lock": "bool",
        },
        "container",
    ),
    (
        "fabric",
        "NVSwitch fabric state per GPU (nvidia-smi -q) and the nvidia-fabricmanager service",
        10.0,
        {
            "nvswitch": "bool",
            "state": "str",
            "gpus_not_ready": "int",
            "service": "str",
        },
        "fabric",
    ),
    (
        "pcie",
        "PCIe link generation and width of each GPU against its maximum, and replay counters",
        10.0,
        {
            "gpus": "int",
            "width_degraded": "int",
            "gen_degraded": "int",
            "min_width": "int",
            "min_gen": "int",
            "replay_errors": "int",
            "degraded": "list",
        },
        "pcie",
    ),
    (
        "compile-cache",
        "where torch.compile's Inductor/Triton caches live: file system type, free space, writable",
        2.0,
        {
            "inductor_dir": "str",
            "inductor_fs": "str",
            "triton_dir": "str",
            "network_fs": "bool",
            "writable": "bool",
            "min_free_gib": "float",
        },
        "compile_cache",
    ),
)
