"""One line of a checklist: the record every configuration check returns.

Preflight's launcher and environment checks (`trainmedic.launch.checks`), Megatron's layout
checks (`trainmedic.memory.checks`) and preflight's memory verdict all return `Check`. It lives
apart from the checks so that `trainmedic memory` gets the record without the launch-script
reader behind them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

CheckStatus = Literal["pass", "warn", "fail", "skip"]
_STATUSES: tuple[CheckStatus, ...] = ("pass", "warn", "fail", "skip")


@dataclass(frozen=True)
class Check:
    """One line of the preflight checklist."""

    name: str
    status: CheckStatus
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"name": self.name, "status": self.status, "message": self.message}

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> Check:
        """Tolerant: an unknown status reads as a warning, missing text as empty."""
        status: CheckStatus = next((s for s in _STATUSES if s == data.get("status")), "warn")
        return cls(str(data.get("name", "")), status, str(data.get("message", "")))
