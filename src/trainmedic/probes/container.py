"""The `container` probe: are we in a container or a Kubernetes pod, and what does it allow?

Half of the "works on bare metal, fails in the pod" incidents come from what the runtime takes
away: a cgroup memory limit that kills ranks without a CUDA message, CAP_SYS_NICE that NCCL
2.24+'s cuMem host allocations need, CAP_IPC_LOCK that RDMA registration needs. All of it is
readable from /proc and /sys without running anything.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from trainmedic.probes import procfs
from trainmedic.probes.base import NO_CONTEXT, Budget, ProbeContext, ProbeResult

NAME = "container"
GIB = 1024**3
UNLIMITED_V1 = 1 << 60  # cgroup v1 reports "no limit" as a huge page-aligned number


@dataclass(frozen=True)
class CgroupLine:
    hierarchy: str
    controllers: tuple[str, ...]
    path: str


def parse_cgroup(text: str) -> list[CgroupLine]:
    """Lines of /proc/<pid>/cgroup: `ID:controller,list:/path` (v2: `0::/path`)."""
    lines = []
    for raw in text.splitlines():
        raw = raw.strip()
        if not raw or raw.startswith("#"):
            continue
        parts = raw.split(":", 2)
        if len(parts) != 3 or not parts[0].isdigit() or not parts[2].startswith("/"):
            continue
        controllers = tuple(c for c in parts[1].split(",") if c)
        lines.append(CgroupLine(parts[0], controllers, parts[2]))
    return lines


def cgroup_version(lines: list[CgroupLine]) -> int:
    if not lines:
        return 0
    return 1 if any(line.controllers for line in lines) else 2


# (substring of a cgroup path or mountinfo line, runtime), most specific first
_PATH_MARKERS = (
    ("kubepods", "kubernetes"),
    ("/var/lib/kubelet/pods/", "kubernetes"),
    ("libpod", "podman"),
    ("/docker/containers/", "docker"),
    ("/docker/", "docker"),
    ("docker-", "docker"),
    ("cri-containerd", "containerd"),
    ("/lxc/", "lxc"),
)


_CONTAINER_FILES = ("/etc/hostname", "/etc/hosts", "/etc/resolv.conf")


def container_mounts(mountinfo: str) -> str:
    """The mountinfo lines of the files a runtime bind-mounts into each container.

    Only these say something about *this* process: a host's mountinfo also lists the mounts of
    every container running on it (/var/lib/docker/containers/..., /var/lib/kubelet/pods/...).
    """
    keep = []
    for line in mountinfo.splitlines():
        fields = line.split()
        if len(fields) > 4 and fields[4] in _CONTAINER_FILES:
            keep.append(line)
    return "\n".join(keep)


def detect_runtime(
    env: Mapping[str, str], files: set[str], cgroup_text: str, mountinfo_text: str
) -> str:
    """The container runtime, from environment markers, marker files and cgroup/mount paths."""
    if env.get("KUBERNETES_SERVICE_HOST"):
        return "kubernetes"
    haystack = cgroup_text + "\n" + container_mounts(mountinfo_text)
    for marker, runtime in _PATH_MARKERS:
        if marker in haystack and runtime == "kubernetes":
            return runtime
    if env.get("APPTAINER_CONTAINER") or env.get("SINGULARITY_CONTAINER"):
        return "apptainer"
    if "/.dockerenv" in files:
        return "docker"
    if "/run/.containerenv" in files:
        return "podman"
    for marker, runtime in _PATH_MARKERS:
        if marker in haystack:
            return runtime
    return env.get("container", "").strip()


def _limit_of(path: Path, version: int) -> int | None:
    text = procfs.read_text(path / ("memory.max" if version == 2 else "memory.limit_in_bytes"))
    if text is None:
        return None
    value = text.strip().splitlines()[0].strip() if text.strip() else ""
    if not value.isdigit():
        return None  # "max" (v2) or garbage: no limit here
    number = int(value)
    return None if version == 1 and number >= UNLIMITED_V1 else number


def memory_limit(root: Path, lines: list[CgroupLine], version: int) -> int | None:
    """The smallest memory limit on this process's cgroup or its ancestors, in bytes."""
    if version == 2:
        base = procfs.under(root, "/sys/fs/cgroup")
        own = next((line.path for line in lines if line.hierarchy == "0"), "/")
    elif version == 1:
        base = procfs.under(root, "/sys/fs/cgroup/memory")
        own = next((line.path for line in lines if "memory" in line.controllers), "/")
    else:
        return None
    parts = [p for p in own.split("/") if p and p not in (".", "..")]
    candidates = [base.joinpath(*parts[:n]) for n in range(len(parts), 0, -1)] + [base]
    limits = [limit for c in candidates if (limit := _limit_of(c, version)) is not None]
    return min(limits) if limits else None


def mem_total(root: Path) -> int | None:
    text = procfs.read_text(procfs.under(root, "/proc/meminfo")) or ""
    for line in text.splitlines():
        if line.startswith("MemTotal:"):
            fields = line.split()
            if len(fields) >= 2 and fields[1].isdigit():
                return int(fields[1]) * 1024
    return None


def examine(root: Path, env: Mapping[str, str]) -> ProbeResult:
    cgroup_text = procfs.read_text(procfs.under(root, "/proc/self/cgroup")) or ""
    mountinfo = procfs.read_text(procfs.under(root, "/proc/self/mountinfo")) or ""
    files = {f for f in ("/.dockerenv", "/run/.containerenv")
             if procfs.under(root, f).exists()}
    lines = parse_cgroup(cgroup_text)
    version = cgroup_version(lines)
    runtime = detect_runtime(env, files, cgroup_text, mountinfo)
    slurm = any("slurm" in line.path for line in lines)
    limit = memory_limit(root, lines, version)
    total = mem_total(root)
    if limit is not None and total is not None and limit >= total:
        limit = None  # a limit above the machine's memory limits nothing
    caps = procfs.parse_cap_eff(procfs.read_text(procfs.under(root, "/proc/self/status")) or "")

    facts: dict[str, object] = {
        "in_container": bool(runtime),
        "runtime": runtime,
        "kubernetes": runtime == "kubernetes",
        "slurm_cgroup": slurm,
        "cgroup_version": version,
        "memory_limited": limit is not None,
    }
    if limit is not None:
        facts["memory_limit_gib"] = round(limit / GIB, 2)
    if caps is not None:
        facts["cap_sys_nice"] = bool(procfs.has_cap(caps, procfs.CAP_SYS_NICE))
        facts["cap_ipc_lock"] = bool(procfs.has_cap(caps, procfs.CAP_IPC_LOCK))

    where = {
        "kubernetes": "a Kubernetes pod",
        "docker": "a Docker container",
        "podman": "a Podman container",
        "apptainer": "an Apptainer/Singularity container",
        "containerd": "a containerd container",
        "lxc": "an LXC container",
    }.get(runtime, f"a container ({runtime})" if runtime else "no container")
    parts = [f"{where}, cgroup v{version}" if version else where]
    if slurm:
        parts.append("inside a Slurm job cgroup")
    mem_line = (
        f"cgroup memory limit {limit / GIB:.1f} GiB" if limit is not None
        else "no cgroup memory limit below the machine's memory"
    )
    parts.append(mem_line)
    if caps is not None:
        missing = [n for n, c in (("SYS_NICE", procfs.CAP_SYS_NICE),
                                  ("IPC_LOCK", procfs.CAP_IPC_LOCK)) if not caps >> c & 1]
        parts.append("without CAP_" + " and CAP_".join(missing) if missing
                     else "with CAP_SYS_NICE and CAP_IPC_LOCK")
    summary = "; ".join(parts)
    evidence = {
        "in_container": where,
        "runtime": where,
        "kubernetes": where + (" (KUBERNETES_SERVICE_HOST is set)"
                               if env.get("KUBERNETES_SERVICE_HOST") else ""),
        "slurm_cgroup": "cgroup path names a Slurm job" if slurm else "no Slurm cgroup",
        "cgroup_version": f"/proc/self/cgroup: cgroup v{version}" if version
        else "/proc/self/cgroup unreadable",
        "memory_limited": mem_line,
        "memory_limit_gib": mem_line,
        "cap_sys_nice": "CAP_SYS_NICE " + ("held" if facts.get("cap_sys_nice") else
                                           "missing: NCCL 2.24+ cuMem host allocations need "
                                           "NUMA calls (docker --cap-add SYS_NICE)"),
        "cap_ipc_lock": "CAP_IPC_LOCK " + ("held" if facts.get("cap_ipc_lock") else "missing"),
    }
    raw = cgroup_text[:4000]
    if not lines and not runtime:
        return ProbeResult(NAME, "unavailable", "cannot read /proc/self/cgroup (not Linux?)",
                           facts, raw, evidence=evidence)
    return ProbeResult(NAME, "ok", summary, facts, raw, evidence=evidence)


def probe(budget: Budget, _context: ProbeContext = NO_CONTEXT) -> ProbeResult:
    return examine(Path("/"), dict(os.environ))
