"""nvidia-smi's process table pasted into a log: every rank's CUDA context on one GPU.

A process that touches CUDA before selecting its own device opens a context on GPU 0. When every
rank does so, nvidia-smi lists under GPU 0 one large process (the rank that trains there) and
one small process of about the same size per other rank (their contexts, 0.2-2.5 GiB each). The
`gpu-process-rows` hook reads the rows one by one; the finding is kept only when one GPU shows
that pattern, so a table with one process per GPU is no finding.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from typing import Any

from trainmedic.triage import oom_contexts

# "|    0   N/A  N/A   2695172      C   python      26167MiB |" (the GI and CI columns since
# driver 450) or "|    0     12345      C   python     871MiB |" (older drivers); every
# repetition is bounded, so a hostile line stays linear
_ROW = re.compile(r"^\s{0,8}\|?\s{0,12}(\d{1,2})\s{1,12}(?:N/A\s{1,12}N/A\s{1,12}|\d{1,3}\s{1,12}"
                  r"\d{1,3}\s{1,12})?(\d{1,9})\s{1,12}C\s{1,12}(\S[^|]{0,200}?)\s{1,40}"
                  r"(\d{1,9}) ?MiB\s{0,12}\|?\s{0,12}$")

# a bare CUDA context's size, as the OOM message's process list reads it too
CONTEXT_MIN_MIB, CONTEXT_MAX_MIB = oom_contexts.CONTEXT_MIN_MIB, oom_contexts.CONTEXT_MAX_MIB
MIN_EXTRA = 2  # at least two other ranks' contexts of the same size on that GPU


def read_row(text: str) -> dict[str, Any]:
    """One compute process's row (type C; a desktop's graphics processes are G): its GPU, PID,
    memory (MiB) and name; {} when the line is not one."""
    row = _ROW.match(text)
    if row is None:
        return {}
    return {"rows": [[int(row.group(1)), int(row.group(2)), int(row.group(4)), row.group(3)]]}


def contexts_on_one_gpu(rows: list[list[Any]]) -> tuple[int, int, int, int] | None:
    """(gpu, largest MiB, context MiB, number of context rows) for the first GPU that holds one
    large process and at least MIN_EXTRA small ones of the same size, all of one program (the
    same process name); None when none does."""
    by_gpu: dict[tuple[int, str], list[int]] = defaultdict(list)
    for gpu, _pid, mib, name in rows:
        by_gpu[(gpu, name)].append(mib)
    for (gpu, _name), sizes in sorted(by_gpu.items()):
        small = Counter(m for m in sizes if CONTEXT_MIN_MIB <= m <= CONTEXT_MAX_MIB)
        if not small:
            continue
        size, count = small.most_common(1)[0]
        if count >= MIN_EXTRA and max(sizes) >= 2 * size:
            return gpu, max(sizes), size, count
    return None


def keep(details: dict[str, Any]) -> bool:
    return contexts_on_one_gpu(details.get("rows", [])) is not None


def summary(details: dict[str, Any]) -> str | None:
    found = contexts_on_one_gpu(details.get("rows", []))
    if found is None:
        return None
    gpu, big, size, count = found
    return (f"nvidia-smi lists on GPU {gpu} a {big} MiB process and {count} more of {size} MiB "
            "each: a CUDA context from every rank on one GPU")
