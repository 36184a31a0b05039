"""A training loss that drops straight to exactly 0.0 and stays there.

A cross-entropy of exactly zero is out of reach for a model that still learns: after a normal
first reading (well above zero) it means no token carried loss any more - the loss mask or the
chat template leaves nothing to predict, so the loss function averages over nothing - the
convergence tree's "loss on nothing" answer (https://github.com/xiaoachen98/Open-LLaVA-NeXT/issues/12:
'loss': 1.9166, then 'loss': 0.0 on every line). A loss that falls gradually to a rounded 0.0
(a small task memorised) passes through small values first and is left alone, as are runs with
NaN readings (HF's logging_nan_inf_filter prints a NaN step's loss as 0.0: the NaN answers
that) and losses that go negative (an RL objective, not a cross-entropy).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

ABRUPT_FROM = 0.1  # the last reading before the zeros: a real loss, not one already near zero
RL_FRAMEWORKS = frozenset({"verl"})  # a policy loss is legitimately 0 (equal rewards)


def zero_tail(points: Sequence[tuple[int, float]], *, nan_seen: bool,
              framework: str | None) -> dict[str, Any] | None:
    """{"from_step", "zeros", "before"} when the last readings are exactly 0.0 right after a
    reading of at least ABRUPT_FROM; None otherwise."""
    if nan_seen or framework in RL_FRAMEWORKS:
        return None
    values = [v for _s, v in points]
    if any(v < 0 for v in values):
        return None
    zeros = 0
    for v in reversed(values):
        if v != 0.0:
            break
        zeros += 1
    if zeros == 0 or zeros == len(values):
        return None
    before = values[-zeros - 1]
    if before < ABRUPT_FROM:
        return None
    return {"from_step": points[-zeros][0], "zeros": zeros, "before": before}
