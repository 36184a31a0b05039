"""The `shm` probe: how large /dev/shm is, how full, and which NCCL segments lie in it.

NCCL's shared-memory transport (and, from NCCL 2.26.5, its fallback when cuMem host
allocations fail) creates `/dev/shm/nccl-*` segments of several MiB per peer, and DataLoader
workers pass batches through it. Docker's default is 64 MB, so both fail inside containers
started without --shm-size or --ipc=host. Segments a crashed job left behind keep the space.
"""

from __future__ import annotations

import os
from pathlib import Path

from trainmedic.probes.base import NO_CONTEXT, Budget, ProbeContext, ProbeResult

NAME = "shm"
SHM_PATH = Path("/dev/shm")
SMALL_MIB = 1024.0  # below 1 GiB an 8-GPU node runs out (Docker's default is 64 MB)
FULL_FRACTION = 0.9
MIB = 1024 * 1024


def nccl_segments(path: Path, limit: int = 10_000) -> tuple[int, float]:
    """Number and total MiB of `nccl-*` files directly under `path` (first `limit` entries)."""
    count, size = 0, 0
    try:
        with os.scandir(path) as entries:
            for i, entry in enumerate(entries):
                if i >= limit:
                    break
                if entry.name.startswith("nccl-"):
                    count += 1
                    try:
                        size += entry.stat(follow_symlinks=False).st_blocks * 512
                    except OSError:
                        continue
    except OSError:
        return 0, 0.0
    return count, size / MIB


def inspect(path: Path) -> ProbeResult:
    """Measure the shared-memory file system at `path`; never raises."""
    try:
        st = os.statvfs(path)
    except OSError as exc:
        return ProbeResult(
            NAME,
            "fail",
            f"{path} is not usable ({exc.strerror or exc}): NCCL's shared-memory transport and "
            "DataLoader workers cannot create segments",
        )
    size = st.f_blocks * st.f_frsize / MIB
    free = st.f_bavail * st.f_frsize / MIB
    if size <= 0:
        return ProbeResult(NAME, "unavailable", f"{path} reports a size of 0 (not a tmpfs?)")
    used = max(0.0, min(1.0, 1.0 - free / size))
    count, seg_mib = nccl_segments(path)
    facts: dict[str, object] = {
        "size_mib": round(size, 1),
        "free_mib": round(free, 1),
        "used_fraction": round(used, 3),
        "small": size < SMALL_MIB,
        "nccl_segments": count,
        "nccl_segments_mib": round(seg_mib, 1),
    }
    line = f"{path}: {size:,.0f} MiB, {free:,.0f} MiB free ({used:.0%} used)"
    evidence = {
        "size_mib": line + (" - below 1 GiB, as in a container without --shm-size" if
                            size < SMALL_MIB else ""),
        "nccl_segments": f"{count} nccl-* segment(s) using {seg_mib:,.0f} MiB"
        + (" (left by a job that did not exit cleanly, if no job runs now)" if count else ""),
    }
    for fact in ("free_mib", "used_fraction", "small"):
        evidence[fact] = evidence["size_mib"]
    evidence["nccl_segments_mib"] = evidence["nccl_segments"]
    problems = []
    if size < SMALL_MIB:
        problems.append("small for NCCL and DataLoader workers (give the container "
                        "--shm-size=16g or --ipc=host)")
    if used > FULL_FRACTION:
        problems.append("nearly full")
    summary = line + ("; " + "; ".join(problems) if problems else "")
    if count:
        summary += f"; {count} nccl-* segment(s)"
    return ProbeResult(NAME, "warn" if problems else "ok", summary, facts, evidence=evidence)


def probe(budget: Budget, _context: ProbeContext = NO_CONTEXT) -> ProbeResult:
    return inspect(SHM_PATH)
