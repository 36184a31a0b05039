"""The `env` probe: the environment that NCCL, PyTorch and Megatron read, and what is wrong in it.

Incidents often trace back to a variable: a debugging switch left on (CUDA_LAUNCH_BLOCKING=1
serialises every kernel), a variable no library reads (NCCL_TIMEOUT), a deprecated name, or two
spellings that disagree. Values are shown redacted: secrets never leave this probe.

The variables that matter are the job's. A running rank's are read from /proc/PID/environ when
one is named (`--pid`, TRAINMEDIC_JOB_PID); otherwise this shell's are read, with the launch
script's exports on top, and every line says so: a login shell is not the job.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping
from pathlib import Path

from trainmedic.probes.base import NO_CONTEXT, Budget, ProbeContext, ProbeResult, unknown
from trainmedic.redact import is_secret_name, redact_env

NAME = "env"
PREFIXES = (
    "NCCL_",
    "TORCH_NCCL_",
    "TORCH_FR_",
    "TORCH_DISTRIBUTED",
    "TORCHELASTIC_",
    "CUDA_",
    "NVTE_",
    "SLURM_",
    "PYTORCH_",
    "UCX_",
    "FI_",
    "NVIDIA_",
    "MEGATRON_",
    "DEEPSPEED_",
    "ACCELERATE_",
)
NAMES = {
    "MASTER_ADDR",
    "MASTER_PORT",
    "RANK",
    "WORLD_SIZE",
    "LOCAL_RANK",
    "LOCAL_WORLD_SIZE",
    "NODE_RANK",
    "GROUP_RANK",
    "OMP_NUM_THREADS",
    "TORCH_SHOW_CPP_STACKTRACES",
    "TORCH_CPP_LOG_LEVEL",
    "TORCH_LOGS",
    "HF_HOME",
    "TRANSFORMERS_CACHE",
}
# Variables that circulate in scripts and tutorials but that no library reads.
MYTHS = {
    "NCCL_TIMEOUT": "NCCL and PyTorch read no NCCL_TIMEOUT: set the collective timeout with "
    "init_process_group(timeout=...) (HF: ddp_timeout); IB waits are NCCL_IB_TIMEOUT",
}
DEPRECATED = {
    "NCCL_ASYNC_ERROR_HANDLING": "TORCH_NCCL_ASYNC_ERROR_HANDLING",
    "NCCL_BLOCKING_WAIT": "TORCH_NCCL_BLOCKING_WAIT",
    "NCCL_DESYNC_DEBUG": "TORCH_NCCL_DESYNC_DEBUG",
    "NCCL_IB_GDR_LEVEL": "NCCL_NET_GDR_LEVEL",
}


# short labels for the one-line summary; the full explanation is in `findings`/evidence
_LABELS = {
    **{name: f"{name} has no effect" for name in MYTHS},
    **{name: f"{name} is deprecated (use {new})" for name, new in DEPRECATED.items()},
    "launch_blocking": "CUDA_LAUNCH_BLOCKING=1 (serialises kernels)",
    "nccl_debug": "NCCL_DEBUG={nccl_debug} left on",
    "distributed_debug": "TORCH_DISTRIBUTED_DEBUG=DETAIL (slow)",
    "ib_disabled": "NCCL_IB_DISABLE=1 (sockets instead of IB)",
    "p2p_disabled": "NCCL_P2P_DISABLE=1",
    "alloc_conf": "PYTORCH_CUDA_ALLOC_CONF and PYTORCH_ALLOC_CONF disagree",
    "async_error_handling": "TORCH_NCCL_ASYNC_ERROR_HANDLING=0 (hangs instead of failing)",
    "socket_ifname_matches": "NCCL_SOCKET_IFNAME matches no interface here",
    "ib_hca_matches": "NCCL_IB_HCA matches no RDMA device here",
    "nccl_algo": "NCCL_ALGO={nccl_algo} forced",
    "nccl_proto": "NCCL_PROTO={nccl_proto} forced",
}
# NCCL's documentation lists these under "Debugging": not for production nor kept in scripts.
FORCED = {"NCCL_ALGO": "nccl_algo", "NCCL_PROTO": "nccl_proto"}


def relevant(env: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in sorted(env.items()) if k in NAMES or k.startswith(PREFIXES)}


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in {"1", "true", "yes", "on"}


def _positive(value: str | None) -> bool:
    try:
        return int((value or "0").strip()) > 0
    except ValueError:
        return False


def select_devices(spec: str, devices: list[str]) -> list[str]:
    """The devices an NCCL list selects: prefixes, `^` to exclude, `=` for exact names.

    Same syntax for NCCL_SOCKET_IFNAME (interfaces) and NCCL_IB_HCA (HCAs, optional :port).
    """
    spec = spec.strip()
    exclude = exact = False
    while spec[:1] in {"^", "="}:
        exclude |= spec[0] == "^"
        exact |= spec[0] == "="
        spec = spec[1:]
    items = [item.split(":")[0].strip() for item in spec.split(",") if item.strip()]

    def hit(name: str) -> bool:
        return any(name == item if exact else name.startswith(item) for item in items)

    return [name for name in devices if hit(name) != exclude]


def local_interfaces() -> list[str]:
    try:
        return [name for _index, name in socket.if_nameindex()]
    except OSError:
        return []


def local_hcas(root: Path = Path("/sys/class/infiniband")) -> list[str]:
    try:
        return sorted(entry.name for entry in root.iterdir())
    except OSError:
        return []


def examine(
    env: Mapping[str, str],
    interfaces: list[str] | None = None,
    hcas: list[str] | None = None,
    *,
    where: str = "",
    from_job: bool = False,
) -> ProbeResult:
    """Facts and findings for an environment (os.environ and this node's devices in production).

    `interfaces`/`hcas` are this node's network interfaces and RDMA devices; None or empty
    means unknown, and then the NCCL device lists are not checked. `where` says whose variables
    these are ("this shell, not the job"; "pid 4242 (...)"), `from_job` that they are a running
    rank's: every evidence line and the summary carry it.
    """
    findings: dict[str, str] = {}  # fact or variable -> human line
    ifname = env.get("NCCL_SOCKET_IFNAME", "").strip()
    ifname_ok = True
    if ifname and interfaces:
        ifname_ok = bool(select_devices(ifname, interfaces))
        if not ifname_ok:
            findings["socket_ifname_matches"] = (
                f"NCCL_SOCKET_IFNAME={ifname} selects no interface on this node "
                f"(it has: {', '.join(interfaces)}); bootstrap will fail"
            )
    hca = env.get("NCCL_IB_HCA", "").strip()
    hca_ok = True
    if hca and hcas:
        hca_ok = bool(select_devices(hca, hcas))
        if not hca_ok:
            findings["ib_hca_matches"] = (
                f"NCCL_IB_HCA={hca} selects no RDMA device on this node "
                f"(it has: {', '.join(hcas)})"
            )
    myths = sorted(name for name in MYTHS if name in env)
    for name in myths:
        findings[name] = f"{name} is set but has no effect: {MYTHS[name]}"
    deprecated = sorted(name for name in DEPRECATED if name in env)
    for name in deprecated:
        new = DEPRECATED[name]
        extra = (
            f" (both set and they differ: {env[name]} vs {env[new]})"
            if new in env and env[new] != env[name]
            else ""
        )
        findings[name] = f"{name} is a deprecated name: use {new}{extra}"

    launch_blocking = _truthy(env.get("CUDA_LAUNCH_BLOCKING"))
    if launch_blocking:
        findings["launch_blocking"] = (
            "CUDA_LAUNCH_BLOCKING=1 serialises every kernel launch: several times slower and it "
            "changes hang behaviour; keep it for locating a device-side assert only"
        )
    nccl_debug = env.get("NCCL_DEBUG", "").strip().upper()
    if nccl_debug in {"INFO", "TRACE"}:
        findings["nccl_debug"] = (
            f"NCCL_DEBUG={nccl_debug}: right while debugging, very verbose in production"
            + (" (TRACE also slows collectives)" if nccl_debug == "TRACE" else "")
        )
    distributed_debug = env.get("TORCH_DISTRIBUTED_DEBUG", "").strip().upper()
    if distributed_debug == "DETAIL":
        findings["distributed_debug"] = (
            "TORCH_DISTRIBUTED_DEBUG=DETAIL checks every collective (and turns on desync "
            "debug): good for finding a mismatch, costly in production"
        )
    ib_disabled = _truthy(env.get("NCCL_IB_DISABLE"))
    if ib_disabled:
        findings["ib_disabled"] = (
            "NCCL_IB_DISABLE=1: inter-node traffic falls back to TCP sockets (diagnostic only)"
            + ("; NCCL_IB_HCA is also set and is ignored" if "NCCL_IB_HCA" in env else "")
        )
    p2p_disabled = _truthy(env.get("NCCL_P2P_DISABLE"))
    if p2p_disabled:
        findings["p2p_disabled"] = (
            "NCCL_P2P_DISABLE=1: no NVLink/PCIe peer-to-peer inside the node (slow)"
        )
    old_alloc, new_alloc = env.get("PYTORCH_CUDA_ALLOC_CONF"), env.get("PYTORCH_ALLOC_CONF")
    if old_alloc is not None and new_alloc is not None and old_alloc != new_alloc:
        findings["alloc_conf"] = (
            f"PYTORCH_CUDA_ALLOC_CONF={old_alloc} and PYTORCH_ALLOC_CONF={new_alloc} disagree; "
            "newer PyTorch reads PYTORCH_ALLOC_CONF first"
        )
    alloc = f"{new_alloc or ''},{old_alloc or ''}".replace(" ", "").lower()
    expandable = "expandable_segments:true" in alloc
    async_value = env.get("TORCH_NCCL_ASYNC_ERROR_HANDLING", env.get("NCCL_ASYNC_ERROR_HANDLING"))
    async_handling = (async_value or "3").strip() != "0"
    if not async_handling:
        findings["async_error_handling"] = (
            "TORCH_NCCL_ASYNC_ERROR_HANDLING=0: a timed-out collective is not aborted, the job "
            "hangs instead of failing"
        )
    trace_buffer = _positive(env.get("TORCH_NCCL_TRACE_BUFFER_SIZE")) or _positive(
        env.get("TORCH_FR_BUFFER_SIZE")
    )
    max_connections = env.get("CUDA_DEVICE_MAX_CONNECTIONS", "").strip()
    forced = {fact: env.get(name, "").strip() for name, fact in FORCED.items()}
    for name, fact in FORCED.items():
        if forced[fact]:
            findings[fact] = (f"{name}={forced[fact]} forces NCCL's choice: NCCL documents it "
                              "for debugging only (slower or hangs on other topologies)")

    facts: dict[str, object] = {
        "myth_vars": myths,
        "myth_count": len(myths),
        "launch_blocking": launch_blocking,
        "max_connections_one": max_connections == "1",
        "nccl_debug": nccl_debug,
        "socket_ifname_set": bool(ifname),
        "socket_ifname_matches": ifname_ok,
        "ib_hca_matches": hca_ok,
        "ib_disabled": ib_disabled,
        "master_addr_set": bool(env.get("MASTER_ADDR", "").strip()),
        "expandable_segments": expandable,
        "async_error_handling": async_handling,
        "trace_buffer_set": trace_buffer,
        "deprecated_vars": deprecated,
        "distributed_debug": distributed_debug,
        "p2p_disabled": p2p_disabled,
        "finding_count": len(findings),
        "findings": list(findings.values()),
        **forced,
        "interfaces": [name for name in interfaces or [] if name != "lo"],
        "from_job": from_job,
    }
    shown = redact_env(relevant(env))
    evidence = {
        "myth_vars": "; ".join(findings[n] for n in myths) or "no myth variable set",
        "deprecated_vars": "; ".join(findings[n] for n in deprecated) or "no deprecated name",
        "max_connections_one": f"CUDA_DEVICE_MAX_CONNECTIONS={max_connections or '(unset)'}"
        " (Megatron needs 1 with tensor parallel + sequence parallel overlap)",
        "trace_buffer_set": "TORCH_NCCL_TRACE_BUFFER_SIZE="
        f"{env.get('TORCH_NCCL_TRACE_BUFFER_SIZE', '(unset)')}: Flight Recorder "
        + ("on" if trace_buffer else "off; set 2000 to see which collective hung"),
        "expandable_segments": "PYTORCH_CUDA_ALLOC_CONF="
        f"{shown.get('PYTORCH_CUDA_ALLOC_CONF', '(unset)')}",
        "socket_ifname_set": f"NCCL_SOCKET_IFNAME={shown.get('NCCL_SOCKET_IFNAME', '(unset)')}",
        "master_addr_set": f"MASTER_ADDR={shown.get('MASTER_ADDR', '(unset)')}",
    }
    for key in (
        "launch_blocking",
        "nccl_debug",
        "distributed_debug",
        "ib_disabled",
        "p2p_disabled",
        "async_error_handling",
        "socket_ifname_matches",
        "ib_hca_matches",
        "nccl_algo",
        "nccl_proto",
    ):
        if key in findings:
            evidence[key] = findings[key]
    if where:
        evidence = {k: f"{v} [{where}]" for k, v in evidence.items()}
    secrets = sum(1 for k in env if is_secret_name(k))
    raw = "\n".join(f"{k}={v}" for k, v in shown.items())
    if secrets:
        raw += f"\n# {secrets} secret-named variable(s) present, values not shown"
    prefix = "" if from_job or not where else "in this shell, not the job: "
    if findings:
        labels = [_LABELS.get(key, f"{key} set") for key in findings]
        summary = f"{prefix}{len(findings)} finding(s): " + "; ".join(
            label.format(nccl_debug=nccl_debug, **forced) for label in labels
        )
        return ProbeResult(NAME, "warn", summary, facts, raw, evidence=evidence, source=where)
    return ProbeResult(
        NAME,
        "ok",
        f"{prefix}{len(shown)} relevant variable(s), nothing suspicious",
        facts,
        raw,
        evidence=evidence,
        source=where,
    )


def probe(budget: Budget, context: ProbeContext = NO_CONTEXT) -> ProbeResult:
    from trainmedic.probes.job_env import job_environment

    job = job_environment(context)
    if job.env is None:  # a rank was named but its variables cannot be read
        return unknown(NAME, f"cannot read the job's environment: {job.source}",
                       source=job.source)
    return examine(job.env, local_interfaces(), local_hcas(), where=job.source,
                   from_job=job.from_job)
