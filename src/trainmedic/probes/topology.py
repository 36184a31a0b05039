"""The `topology` probe: how GPUs (and NICs) connect, from `nvidia-smi topo -m`.

GPU pairs that talk through the CPU (SYS/NODE/PHB) make NCCL all-reduce several times slower
than NVLink; a GPU without a nearby NIC (PIX/PXB) loses GPUDirect RDMA.
"""

from __future__ import annotations

import re

from trainmedic.probes import nvsmi
from trainmedic.probes.base import NO_CONTEXT, Budget, ProbeContext, ProbeResult, Status
from trainmedic.probes.subproc import run_cmd

NAME = "topology"
ARGV = [nvsmi.NVIDIA_SMI, "topo", "-m"]
VIA_CPU = {"SYS", "NODE", "PHB"}
VIA_SWITCH = {"PIX", "PXB"}
_DEVICE = re.compile(r"^(GPU\d+|NIC\d+|mlx\d+_\d+|mlx\w+)$")
_NIC_LEGEND = re.compile(r"^\s*(NIC\d+)\s*:\s*(\S+)")
# nvidia-smi 580 underlines the header row even when its output is a pipe: ESC[4m ... ESC[0m
_SGR = re.compile(r"\x1b\[[0-9;]*m")


def _split(line: str) -> list[str]:
    if "\t" in line:
        return [cell.strip() for cell in line.split("\t")]
    return [cell.strip() for cell in re.split(r"\s{2,}", line.strip())]


def parse_matrix(text: str) -> tuple[list[str], dict[str, dict[str, str]], dict[str, str]]:
    """(device columns, row -> column -> cell, NIC legend) of a `topo -m` matrix."""
    columns: list[str] = []
    matrix: dict[str, dict[str, str]] = {}
    legend: dict[str, str] = {}
    for line in _SGR.sub("", text).splitlines():
        if line.lstrip().startswith("#") or not line.strip():
            continue
        nic = _NIC_LEGEND.match(line)
        if nic and columns:
            legend[nic.group(1)] = nic.group(2)
            continue
        cells = _split(line)
        if not columns:
            names = [c for c in cells if c]
            if names and names[0] == "GPU0":
                columns = [c for c in names if _DEVICE.match(c)]
            continue
        if cells and cells[0] in columns:
            row = cells[0]
            values = cells[1 : 1 + len(columns)]
            if len(values) == len(columns):
                matrix[row] = dict(zip(columns, values, strict=True))
    return columns, matrix, legend


def build_result(text: str) -> ProbeResult:
    columns, matrix, legend = parse_matrix(text)
    gpus = [c for c in columns if c.startswith("GPU") and c in matrix]
    nics = [c for c in columns if not c.startswith("GPU")]
    if not gpus:
        return nvsmi.unreadable(NAME, "the topology matrix", text)
    via_cpu: list[str] = []
    via_switch = 0
    nv_counts: list[int] = []
    for i, a in enumerate(gpus):
        for b in gpus[i + 1 :]:
            cell = matrix[a].get(b, "")
            if cell.startswith("NV"):
                nv_counts.append(int(cell[2:]) if cell[2:].isdigit() else 1)
            elif cell in VIA_CPU:
                via_cpu.append(f"{a}-{b} {cell}")
            elif cell in VIA_SWITCH:
                via_switch += 1
    far = [g for g in gpus if nics and not any(matrix[g].get(n) in VIA_SWITCH for n in nics)]
    nic_names = [legend.get(n, n) for n in nics]
    facts: dict[str, object] = {
        "gpu_count": len(gpus),
        "nvlink": bool(nv_counts),
        "pairs_via_cpu": len(via_cpu),
        "pairs_via_pcie_switch": via_switch,
        "min_nvlinks": min(nv_counts, default=0),
        "nics": nic_names,
        "gpus_without_near_nic": len(far),
    }
    evidence = {
        "nvlink": f"{len(nv_counts)} GPU pair(s) on NVLink"
        + (f" (NV{min(nv_counts)}..NV{max(nv_counts)})" if nv_counts else ""),
        "pairs_via_cpu": ", ".join(via_cpu[:6]) + (" ..." if len(via_cpu) > 6 else "")
        if via_cpu
        else "no GPU pair goes through the CPU",
        "gpus_without_near_nic": (", ".join(far) + " have no NIC at PIX/PXB (no GPUDirect RDMA)")
        if far
        else ("every GPU has a nearby NIC" if nics else "no NIC in the matrix"),
    }
    pairs = len(gpus) * (len(gpus) - 1) // 2
    status: Status
    if via_cpu and nv_counts:
        status, summary = (
            "warn",
            (
                f"{len(gpus)} GPUs, NVLink on {len(nv_counts)}/{pairs} pairs but "
                f"{len(via_cpu)} pair(s) go through the CPU"
            ),
        )
    elif via_cpu:
        status, summary = (
            "warn",
            (
                f"{len(gpus)} GPUs without NVLink: {len(via_cpu)}/{pairs} pair(s) go through "
                "the CPU (slow all-reduce inside the node)"
            ),
        )
    else:
        link = "NVLink" if nv_counts else "PCIe switch"
        status, summary = "ok", f"{len(gpus)} GPU(s), all pairs on {link}" if pairs else "1 GPU"
    if far and status == "ok":
        status = "warn"
    if far:
        summary += f"; {len(far)} GPU(s) without a nearby NIC"
    return ProbeResult(NAME, status, summary, facts, text, evidence=evidence)


def probe(budget: Budget, _context: ProbeContext = NO_CONTEXT) -> ProbeResult:
    res = run_cmd(ARGV, budget.remaining())
    failed = nvsmi.failure(NAME, res)
    if failed is not None:
        return failed
    if res.returncode != 0:
        return ProbeResult(
            NAME,
            "fail",
            f"nvidia-smi topo failed: {res.first_error_line()[:160]}",
            raw=res.combined(),
        )
    return build_result(res.stdout)
