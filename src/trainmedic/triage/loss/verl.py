"""verl's progress lines: `step:N - key:value - key:value ...`, one line per training step.

verl's trainer prints every metric of a step on one line (its console logger joins
`step:N` and each `key:value` with ` - `), often behind Ray's `(TaskRunner pid=...)` prefix.
Its SFT trainer prints the same way (`train/loss`, `train/lr(1e-3)`). Read here: the step; a
NaN/inf in any `*loss` field (actor, critic, kl, entropy) or any `*grad_norm` field as a NaN
point; the actor's grad norm (else the critic's, else SFT's); `timing_s/step` (SFT:
`train/time(s)`) as the time per step. Not read: the learning rate (printed with three decimals,
so 1e-6 shows as `actor/lr:0.000`, which would read as a rate of 0; SFT prints it scaled).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

# the step comes first on the line (after a Ray prefix); not `timing_s/step:96.5 - `
_STEP = re.compile(r"(?<![\w/])step:(\d+) - ")
SEP = " - "
# The loss of verl's SFT trainer (`train/loss`, next to `train/lr(1e-3)`) is a supervised loss:
# tested for spikes like any other.
SUPERVISED_LOSS_KEYS = ("train/loss", "loss")
# In RL runs, the value counted and drawn as the loss: the actor's total loss where verl prints
# it, else its policy-gradient loss, else the critic's value loss. Never given to the spike
# detector: an RL policy loss sits near zero and changes sign from step to step, so a detector of
# rises above the recent level would fire on healthy runs.
RL_LOSS_KEYS = ("actor/loss", "actor/pg_loss", "critic/vf_loss")
GRAD_KEYS = ("actor/grad_norm", "critic/grad_norm", "train/grad_norm")
STEP_TIME_KEYS = ("timing_s/step", "train/time(s)")  # seconds (RL trainer, SFT trainer)


@dataclass(frozen=True)
class VerlPoint:
    step: int
    loss: float | None  # NaN when any loss field is not finite
    spikes: bool  # a supervised loss, tested for spikes (not an RL policy loss)
    grad: float | None  # NaN when any grad-norm field is not finite
    time_ms: float | None


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def read_line(text: str) -> VerlPoint | None:
    """The point of one verl step line, or None when the line is not one. Linear: one search
    for the step, then one split of the rest."""
    m = _STEP.search(text)
    if m is None:
        return None
    fields: dict[str, float] = {}
    bad_loss = bad_grad = False
    for part in text[m.end():].split(SEP):
        key, sep, raw = part.partition(":")
        if not sep:
            continue
        value = _number(raw.strip())
        if value is None:
            continue  # a value cut where the excerpt ends, or a word
        if not math.isfinite(value):
            if key.endswith("loss"):
                bad_loss = True
            elif key.endswith("grad_norm"):
                bad_grad = True
        fields.setdefault(key, value)
    if not fields:
        return None
    loss_key = next((k for k in SUPERVISED_LOSS_KEYS if k in fields), None)
    spikes = loss_key is not None
    loss_key = loss_key or next((k for k in RL_LOSS_KEYS if k in fields), None)
    loss = math.nan if bad_loss else (fields[loss_key] if loss_key is not None else None)
    grad = math.nan if bad_grad else next((fields[k] for k in GRAD_KEYS if k in fields), None)
    seconds = next((fields[k] for k in STEP_TIME_KEYS if k in fields), None)
    return VerlPoint(int(m.group(1)), loss, spikes, grad,
                     seconds * 1000.0 if seconds is not None else None)
