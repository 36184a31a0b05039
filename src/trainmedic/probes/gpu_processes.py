"""The `gpu-processes` probe: which compute processes hold GPU memory right now.

A process left over from a crashed run (or a colleague's notebook) holding 20 GiB is the
classic cause of an OOM at the first step; the PyTorch OOM message names it only by PID.
"""

from __future__ import annotations

from collections import Counter

from trainmedic.probes import nvsmi
from trainmedic.probes.base import NO_CONTEXT, Budget, ProbeContext, ProbeResult
from trainmedic.probes.subproc import run_cmd

NAME = "gpu-processes"
APPS_ARGV = [
    nvsmi.NVIDIA_SMI,
    "--query-compute-apps=pid,process_name,used_memory,gpu_uuid",
    "--format=csv,nounits",
]
INDEX_ARGV = [nvsmi.NVIDIA_SMI, "--query-gpu=index,uuid", "--format=csv,nounits"]


def build_result(
    apps: list[dict[str, str]], uuid_to_index: dict[str, str], raw: str
) -> ProbeResult:
    per_gpu: Counter[str] = Counter()
    lines: list[str] = []
    pids: list[str] = []
    total = 0.0
    for app in apps:
        uuid = nvsmi.clean(app.get("gpu_uuid")) or "?"
        gpu = uuid_to_index.get(uuid, uuid)
        per_gpu[gpu] += 1
        mib = nvsmi.number(app.get("used_memory") or app.get("used_gpu_memory"))
        total += mib or 0.0
        pid = nvsmi.clean(app.get("pid")) or "?"
        pids.append(pid)
        name = nvsmi.clean(app.get("process_name")) or "?"
        size = f"{mib:g} MiB" if mib is not None else "memory unknown"
        lines.append(f"GPU {gpu}: pid {pid} {name} holds {size}")
    facts: dict[str, object] = {
        "count": len(apps),
        "max_per_gpu": max(per_gpu.values(), default=0),
        "total_memory_mib": total,
        "pids": pids,
    }
    evidence = {
        "count": "; ".join(lines[:8]) + (f"; and {len(lines) - 8} more" if len(lines) > 8 else "")
        if lines
        else "no compute process holds GPU memory",
    }
    evidence["total_memory_mib"] = evidence["max_per_gpu"] = evidence["count"]
    if not apps:
        return ProbeResult(
            NAME, "ok", "no compute process holds GPU memory", facts, raw, evidence=evidence
        )
    summary = (
        f"{len(apps)} compute process(es) hold {total / 1024:.1f} GiB "
        f"(if your job is not running, these are leftovers: the classic OOM cause)"
    )
    return ProbeResult(NAME, "warn", summary, facts, raw, evidence=evidence)


def probe(budget: Budget, _context: ProbeContext = NO_CONTEXT) -> ProbeResult:
    res = run_cmd(APPS_ARGV, budget.remaining())
    failed = nvsmi.failure(NAME, res)
    raw = f"$ {' '.join(APPS_ARGV)}\n{res.combined()}"
    if failed is not None:
        failed.raw = raw
        return failed
    if res.returncode != 0:
        return ProbeResult(
            NAME, "fail", f"nvidia-smi failed: {res.first_error_line()[:160]}", raw=raw
        )
    apps, other = nvsmi.parse_csv(res.stdout)
    junk = [line for line in other if "no running processes" not in line.lower()]
    if not apps and junk:
        return nvsmi.unreadable(NAME, "nvidia-smi output", "\n".join(junk), raw)
    uuid_to_index: dict[str, str] = {}
    if apps:
        idx = run_cmd(INDEX_ARGV, budget.remaining())
        rows, _ = nvsmi.parse_csv(idx.stdout) if idx.ok else ([], [])
        uuid_to_index = {
            row["uuid"]: row["index"] for row in rows if "uuid" in row and "index" in row
        }
    return build_result(apps, uuid_to_index, raw)
