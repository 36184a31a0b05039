"""The `memlock` probe: the locked-memory limit RDMA registration runs into.

InfiniBand, RoCE and EFA pin every buffer NCCL registers (ibv_reg_mr). The kernel refuses once
the process's RLIMIT_MEMLOCK is reached unless it holds CAP_IPC_LOCK, and NCCL then fails with
"Call to ibv_reg_mr failed" or "ibv_create_qp failed". Containers start with 64 KiB (kernels
before 5.16) or 8 MiB unless the runtime raises it.

This reads the limit of trainmedic's own process, i.e. of the shell it was started from. Ranks
launched by srun, mpirun, docker or the kubelet inherit the limits of *their* parent, which can
differ: check inside the job as well (the summary says how).
"""

from __future__ import annotations

import resource
from pathlib import Path

from trainmedic.probes import procfs
from trainmedic.probes.base import NO_CONTEXT, Budget, ProbeContext, ProbeResult

NAME = "memlock"
RDMA_DIR = Path("/dev/infiniband")
MIB = 1024 * 1024
IN_JOB = "srun --ntasks-per-node=1 bash -c 'ulimit -l'   (or: docker exec <ctr> sh -c 'ulimit -l')"


def _mib(value: int) -> float | None:
    return None if value == resource.RLIM_INFINITY else round(value / MIB, 3)


def build_result(soft: int, hard: int, caps: int | None, rdma_devices: bool) -> ProbeResult:
    soft_mib, hard_mib = _mib(soft), _mib(hard)
    unlimited = soft_mib is None
    ipc_lock = bool(procfs.has_cap(caps, procfs.CAP_IPC_LOCK))
    ok = unlimited or ipc_lock
    facts: dict[str, object] = {
        "unlimited": unlimited,
        "ipc_lock": ipc_lock,
        "rdma_devices": rdma_devices,
        "ok_for_rdma": ok,
    }
    if soft_mib is not None:
        facts["soft_mib"] = soft_mib
    if hard_mib is not None:
        facts["hard_mib"] = hard_mib

    def show(value: float | None) -> str:
        return "unlimited" if value is None else f"{value * 1024:g} KiB"

    line = f"ulimit -l of this shell: soft {show(soft_mib)}, hard {show(hard_mib)}"
    cap_line = (
        "CAP_IPC_LOCK held (the limit does not apply to registration)"
        if ipc_lock
        else "no CAP_IPC_LOCK" if caps is not None else "capabilities unknown"
    )
    evidence = {
        "unlimited": line,
        "soft_mib": line,
        "hard_mib": line,
        "ipc_lock": cap_line,
        "rdma_devices": "/dev/infiniband present (RDMA NICs visible)"
        if rdma_devices
        else "no /dev/infiniband: no RDMA device visible here",
        "ok_for_rdma": f"{line}; {cap_line}. Ranks may get other limits: {IN_JOB}",
    }
    summary = f"{line}; {cap_line}"
    if ok:
        return ProbeResult(NAME, "ok", summary, facts, evidence=evidence)
    if rdma_devices:
        return ProbeResult(
            NAME,
            "warn",
            summary + "; too low for RDMA (ibv_reg_mr fails): raise memlock to unlimited",
            facts,
            evidence=evidence,
        )
    return ProbeResult(
        NAME, "ok", summary + " (matters only for InfiniBand/RoCE/EFA)", facts, evidence=evidence
    )


def probe(budget: Budget, _context: ProbeContext = NO_CONTEXT) -> ProbeResult:
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    except (OSError, ValueError) as exc:
        return ProbeResult(NAME, "unavailable", f"cannot read RLIMIT_MEMLOCK: {exc}")
    return build_result(soft, hard, procfs.effective_caps(), RDMA_DIR.is_dir())
