"""The optimizer step's share of an iteration, read from a framework's timer summary line.

DeepSpeed's wall-clock breakdown prints `time (ms) | forward: F | backward: B | ... | step: S`
(and the same with `_microstep` names); Megatron-LM's timers print `forward-backward: FB` and
`optimizer: O` on one `time (ms) |` line. On a GPU the optimizer step is a small part of the
iteration; when it takes twice as long as forward and backward together (CPU Adam under
offload, an unfused or unsharded step) it is where the time goes: the slow-training tree's
optimizer-step node. (A healthy ZeRO run's step, which includes the parameters' all-gather, was
seen at 42% of the three: https://github.com/huggingface/accelerate/issues/1589.) The
`optimizer-share` hook reads each timer line's share; the finding is kept only when the median
share over the lines read reaches `SHARE_MIN`, so a run whose step is the usual few percent is
no finding.
"""

from __future__ import annotations

import re
from statistics import median
from typing import Any

SHARE_MIN = 2 / 3  # the optimizer step takes at least twice forward and backward together

# "name: 123.45" fields of one timer line; a name is bounded, a number too
_FIELD = re.compile(r"([A-Za-z_][\w-]{0,60}):\s{0,4}(\d{1,12}(?:\.\d{1,6})?)")
# (forward and backward timers, the optimizer step's timer) as each framework names them
_PAIRS = (
    (("forward", "backward"), "step"),  # DeepSpeed engine timers
    (("forward_microstep", "backward_microstep"), "step_microstep"),  # DeepSpeed micro-steps
    (("forward-backward",), "optimizer"),  # Megatron-LM
)


def read_line(text: str) -> dict[str, Any]:
    """{"shares": [share]} for a timer line that prints both the forward/backward time and the
    optimizer step's time; {} for any other line."""
    if "time (ms)" not in text:
        return {}
    fields = {name: float(value) for name, value in _FIELD.findall(text)}
    for fb_names, opt_name in _PAIRS:
        if opt_name in fields and all(n in fields for n in fb_names):
            fb, opt = sum(fields[n] for n in fb_names), fields[opt_name]
            if fb + opt > 0:
                return {"shares": [round(opt / (fb + opt), 4)]}
    return {}


def share(details: dict[str, Any]) -> float | None:
    shares = details.get("shares", [])
    return median(shares) if shares else None


def keep(details: dict[str, Any]) -> bool:
    s = share(details)
    return s is not None and s >= SHARE_MIN


def summary(details: dict[str, Any]) -> str | None:
    s = share(details)
    if s is None:
        return None
    return f"the optimizer step takes {s:.0%} of forward, backward and step together"
