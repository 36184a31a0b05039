"""The `fabric` probe: has every GPU of an NVSwitch system registered with the NVLink fabric?

On HGX/DGX baseboards (A100, H100, H200, B200...) CUDA refuses to start - error 802, "system
not yet initialized" - until the fabric manager has configured the NVSwitches and each GPU's
fabric state reads Completed. nvidia-smi -q shows that state per GPU (newer drivers); the
systemd unit nvidia-fabricmanager says whether the daemon runs on this host (it can also run
inside the GPU Operator's driver container, where systemctl does not see it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from trainmedic.probes import nvsmi
from trainmedic.probes.base import NO_CONTEXT, Budget, ProbeContext, ProbeResult, Status
from trainmedic.probes.subproc import run_cmd

NAME = "fabric"
QUERY_ARGV = [nvsmi.NVIDIA_SMI, "-q"]
SERVICE_ARGV = ["systemctl", "is-active", "nvidia-fabricmanager"]
SERVICE_STATES = {"active", "inactive", "failed", "activating", "deactivating", "reloading",
                  "unknown"}
UNSUPPORTED = {"", "N/A", "Not Supported"}
# worst first: the summary reports the worst state any GPU is in
STATE_ORDER = ("Not Started", "In Progress", "Completed")

_GPU = re.compile(r"^GPU\s+([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s*$")
_FIELD = re.compile(r"^(\s*)([A-Za-z][A-Za-z ]*?)\s*:\s*(.*?)\s*$")


@dataclass
class GpuFabric:
    bus_id: str
    state: str = ""
    status: str = ""

    @property
    def supported(self) -> bool:
        return self.state not in UNSUPPORTED

    @property
    def ready(self) -> bool:
        return self.state == "Completed" and self.status in ("Success", "N/A", "")

    def label(self) -> str:
        who = self.bus_id or "GPU"
        return f"{who}: {self.state}" + (f" / {self.status}" if self.status else "")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def parse_fabric(text: str) -> list[GpuFabric]:
    """One entry per `Fabric` section of `nvidia-smi -q`, with the GPU it belongs to."""
    found: list[GpuFabric] = []
    bus_id = ""
    current: GpuFabric | None = None
    depth = -1
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if m := _GPU.match(line.strip()):
            bus_id, current = m.group(1), None
            continue
        if line.strip() == "Fabric":
            current = GpuFabric(bus_id)
            found.append(current)
            depth = _indent(line)
            continue
        if current is None:
            continue
        if _indent(line) <= depth:
            current = None
            continue
        m = _FIELD.match(line)
        if m and _indent(line) > depth:
            key, value = m.group(2).strip().lower(), m.group(3).strip()
            if key == "state" and not current.state:
                current.state = value
            elif key == "status" and not current.status:
                current.status = value
    return found


def _worst(states: list[str]) -> str:
    for state in STATE_ORDER:
        if state in states:
            return state
    return states[0] if states else ""


def service_state(stdout: str) -> str:
    """The unit's state from `systemctl is-active`; "" where systemd does not run (containers)."""
    word = stdout.strip().splitlines()[0].strip() if stdout.strip() else ""
    if word in SERVICE_STATES:
        return word
    if re.search(r"not been booted with systemd|Failed to connect to bus", stdout):
        return ""
    return "unknown"


def build_result(gpus: list[GpuFabric], service: str, raw: str) -> ProbeResult:
    supported = [g for g in gpus if g.supported]
    not_ready = [g for g in supported if not g.ready]
    facts: dict[str, object] = {
        "nvswitch": bool(supported),
        "state": _worst([g.state for g in supported]) if supported else "N/A",
        "gpus_not_ready": len(not_ready),
        "service": service,
    }
    service_line = (
        f"systemctl is-active nvidia-fabricmanager: {service}" if service
        else "no systemctl here (a container?): the fabric manager runs on the host"
    )
    if not supported:
        line = f"{len(gpus)} GPU(s), fabric state N/A: not an NVSwitch system (or one GPU only)"
    elif not_ready:
        line = f"{len(not_ready)} of {len(supported)} GPU(s) not registered with the fabric: " + \
            "; ".join(g.label() for g in not_ready[:4])
    else:
        line = f"all {len(supported)} GPU(s) registered with the NVLink fabric (Completed)"
    evidence = {
        "nvswitch": line,
        "state": line,
        "gpus_not_ready": line,
        "service": service_line,
    }
    summary = f"{line}; {service_line}"
    if not_ready:
        hint = (
            " - CUDA fails with error 802 until this completes; the daemon runs, so check its "
            "log and that its version equals the driver's (Blackwell also needs NVLSM)"
            if service == "active"
            else " - CUDA fails with error 802 until the fabric manager runs (an operator's job)"
        )
        return ProbeResult(NAME, "fail", summary + hint, facts, raw, evidence=evidence)
    if supported and service == "failed":
        return ProbeResult(NAME, "warn", summary, facts, raw, evidence=evidence)
    return ProbeResult(NAME, "ok", summary, facts, raw, evidence=evidence)


def probe(budget: Budget, _context: ProbeContext = NO_CONTEXT) -> ProbeResult:
    res = run_cmd(QUERY_ARGV, budget.remaining())
    service = ""
    if budget.remaining() > 0.05:
        svc = run_cmd(SERVICE_ARGV, min(budget.remaining(), 3.0))
        if not svc.error:  # systemctl ran; is-active exits 3 for inactive units
            service = service_state(svc.combined())
    raw = f"$ {' '.join(QUERY_ARGV)}\n{res.combined()[:20000]}"
    failed = nvsmi.failure(NAME, res)
    if failed is not None:
        if service:
            failed.facts = {"service": service}
            failed.summary += f"; nvidia-fabricmanager is {service}"
        failed.raw = raw
        return failed
    if res.returncode != 0:
        return ProbeResult(NAME, "fail", f"nvidia-smi -q failed: {res.first_error_line()[:160]}",
                           {"service": service} if service else {}, raw)
    gpus = parse_fabric(res.stdout)
    if gpus:
        return build_result(gpus, service, raw)
    facts: dict[str, object] = {"service": service} if service else {}
    if "NVSMI LOG" not in res.stdout and not re.search(r"^GPU\s+\S+:", res.stdout, re.M):
        return nvsmi.unreadable(NAME, "nvidia-smi -q output", res.stdout, raw, facts)
    summary = "this driver's nvidia-smi -q shows no Fabric section (an older driver)"
    if service:
        summary += f"; nvidia-fabricmanager is {service}"
    status: Status = "unavailable"
    if service in ("failed", "active"):
        status = "warn" if service == "failed" else "ok"
    return ProbeResult(NAME, status, summary, facts, raw)
