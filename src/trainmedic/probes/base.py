"""The result every probe returns, and the time budget it runs under.

Probes are read by tree rules (`facts`), shown to people (`summary`, `evidence`) and attached
to bug reports (`raw`); one small dataclass carries all of it so every front end agrees.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Literal

Status = Literal["ok", "warn", "fail", "unavailable"]
STATUSES: tuple[Status, ...] = ("ok", "warn", "fail", "unavailable")


@dataclass
class ProbeResult:
    """What one probe found. `facts` are flat: fact name (no probe prefix) -> scalar or list."""

    name: str
    status: Status
    summary: str
    facts: dict[str, object] = field(default_factory=dict)
    raw: str = ""
    duration_s: float = 0.0
    # fact name -> one human line that shows why the fact has its value ("GPU 3: 79.4 of 80 GiB")
    evidence: dict[str, str] = field(default_factory=dict)

    def to_dict(self, *, include_raw: bool = True) -> dict:
        data: dict[str, object] = {
            "name": self.name,
            "status": self.status,
            "summary": self.summary,
            "facts": dict(self.facts),
            "evidence": dict(self.evidence),
            "duration_s": round(self.duration_s, 3),
        }
        if include_raw:
            data["raw"] = self.raw
        return data


def unavailable(name: str, reason: str, raw: str = "") -> ProbeResult:
    return ProbeResult(name=name, status="unavailable", summary=reason, raw=raw)


class Budget:
    """The time a probe has left; each external command gets at most what remains."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._deadline = time.monotonic() + seconds

    def remaining(self) -> float:
        return max(0.0, self._deadline - time.monotonic())

    def expired(self) -> bool:
        return self.remaining() <= 0.0
