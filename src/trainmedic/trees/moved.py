"""Nodes merged into another, so a walk saved before the merge still resumes.

Where two trees held the same fix, one copy was deleted and the other tree's answers now lead
to the one kept. Walks saved earlier name the deleted node (as their place, a step's target, a
fix tried); their reader maps each old `tree#node` here instead of refusing the walk.
"""

from __future__ import annotations

MOVED: dict[str, str] = {
    # the same fix (two ranks on one GPU) was in startup and nccl-hang; startup owns the cause
    "nccl-hang#invalid-usage": "startup#nccl-invalid-usage",
    # the container's /dev/shm is the containers tree's; nccl-hang's NCCL-error question leads there
    "nccl-hang#shm-too-small": "containers#dev-shm-size",
}


def current_ref(ref: str) -> str:
    """`ref`, or the node it was merged into."""
    return MOVED.get(ref, ref)
