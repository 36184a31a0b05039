"""One reading of a CUDA OOM's process list: every other rank's bare CUDA context on this GPU.

Since PyTorch 2.1 the allocator's message lists each process on the GPU ("Process PID has X
memory in use"). Several other processes of one small size (a CUDA context with little or no
allocation, 0.2-2.5 GiB) are the job's other ranks, which touched this GPU before selecting their
own (https://github.com/rwth-i6/returnn/issues/1469: fifteen processes of 1.19 GiB each on GPU 0):
the oom tree's device-zero answer, not a foreign process. One process, or processes of differing
or large sizes, stay the other-process answer.
"""

from __future__ import annotations

CONTEXT_MIN_MIB = 200.0  # a CUDA context alone takes a few hundred MiB
CONTEXT_MAX_MIB = 2560.0  # ... up to about 2 GiB with NCCL's buffers and a cuBLAS workspace
SAME_SIZE = 0.1  # sizes within 10 % of each other are "one size"
MIN_RANKS = 2


def rank_contexts(sizes: list[float]) -> bool:
    """True when at least two other processes hold about the same context-sized memory."""
    if len(sizes) < MIN_RANKS:
        return False
    low, high = min(sizes), max(sizes)
    return low >= CONTEXT_MIN_MIB and high <= CONTEXT_MAX_MIB and high <= low * (1 + SAME_SIZE)


# When the driver cannot tell a process's memory (NVML inside a container that does not share
# the host's PID namespace), the message lists every process with "0 bytes memory in use", the
# failing one included ("this process has 0 bytes memory in use") although PyTorch itself
# allocated GiBs: the sizes say nothing, but several other processes on one GPU of a
# distributed job are its other ranks (https://github.com/huggingface/trl/issues/3172: seven
# processes at 0 bytes on GPU 0 of an 8-GPU run). Two could as well be foreign jobs.
MIN_UNSIZED_RANKS = 3


def unsized_rank_contexts(sizes: list[float], own_unsized: bool, allocated_mib: float) -> bool:
    """True when at least MIN_UNSIZED_RANKS other processes are listed, every size (this
    process's too) reads 0 while PyTorch reports memory of its own: the other ranks, unsized."""
    return (own_unsized and allocated_mib > 0.0 and len(sizes) >= MIN_UNSIZED_RANKS
            and all(size == 0.0 for size in sizes))
