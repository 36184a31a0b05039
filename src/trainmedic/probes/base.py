"""The result every probe returns, the time budget it runs under and what it may know.

Probes are read by tree rules (`facts`), shown to people (`summary`, `evidence`) and attached
to bug reports and saved walks (`raw`); one small dataclass carries all of it so every front end
agrees. A probe is `probe(budget, context) -> ProbeResult`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal

# `unavailable`: the thing is not here (no nvidia-smi, not an InfiniBand node). `unknown`: it is
# here but the probe cannot tell (garbage output, not the job's environment): never read as ok.
Status = Literal["ok", "warn", "fail", "unavailable", "unknown"]
_STATUSES: tuple[Status, ...] = ("ok", "warn", "fail", "unavailable", "unknown")


def status_of(value: object, default: Status = "unknown") -> Status:
    """`value` as a probe status, or `default` when it is none (a hand-edited saved walk)."""
    return next((s for s in _STATUSES if s == value), default)


@dataclass(frozen=True)
class ProbeContext:
    """What a walk knows that a probe may use instead of asking the machine.

    `launch_command` is the job's launch command or the path of its script, as the person gave
    it (the memory probe estimates it; the versions probe finds the job's Python in it; empty:
    the probes read TRAINMEDIC_LAUNCH_SCRIPT). `python` is the job's interpreter when the person
    named it (`--python`); `job_pid` a running rank (a PID or a name in its command line) whose
    environment the env probe reads instead of this shell's.
    """

    launch_command: str = ""
    python: str = ""
    job_pid: str = ""


NO_CONTEXT = ProbeContext()


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
    # where the facts were read, when that is not simply this machine ("this shell, not the
    # job", "/opt/venv/bin/python (from launch.sh:12)"): evidence without provenance misleads
    source: str = ""

    def to_dict(self, *, include_raw: bool = True) -> dict[str, object]:
        data: dict[str, object] = {
            "name": self.name,
            "status": self.status,
            "summary": self.summary,
            "facts": dict(self.facts),
            "evidence": dict(self.evidence),
            "duration_s": round(self.duration_s, 3),
        }
        if self.source:
            data["source"] = self.source
        if include_raw:
            data["raw"] = self.raw
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> ProbeResult | None:
        """A saved or received result; None when it has no name, or facts or evidence that are
        not mappings (a hand-edited walk must not crash the screen that reads it). Missing
        parts are empty; a status it does not know reads `unknown`."""
        name = data.get("name")
        facts = data.get("facts") or {}
        evidence = data.get("evidence") or {}
        if not isinstance(name, str) or not name or not isinstance(facts, Mapping) \
                or not isinstance(evidence, Mapping):
            return None
        duration = data.get("duration_s")
        return cls(
            name=name, status=status_of(data.get("status")),
            summary=str(data.get("summary") or ""),
            facts={str(k): v for k, v in facts.items()},
            raw=str(data.get("raw") or ""),
            duration_s=float(duration) if isinstance(duration, int | float) else 0.0,
            evidence={str(k): str(v) for k, v in evidence.items()},
            source=str(data.get("source") or ""),
        )


def unavailable(name: str, reason: str, raw: str = "") -> ProbeResult:
    return ProbeResult(name=name, status="unavailable", summary=reason, raw=raw)


def quoted(text: str, limit: int = 100) -> str:
    """`text` cut to `limit` characters and quoted with every non-ASCII or control character
    escaped (`'\\ufffdgarbage ,,,'`): a garbled tool line is shown for what it is."""
    return ascii(text[:limit] + ("..." if len(text) > limit else ""))


def unknown(name: str, reason: str, raw: str = "", source: str = "") -> ProbeResult:
    """A probe that ran but cannot tell: no facts, so no rule fires on a guess."""
    return ProbeResult(name=name, status="unknown", summary=reason, raw=raw, source=source)


class Budget:
    """The time a probe has left; each external command gets at most what remains."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._deadline = time.monotonic() + seconds

    def remaining(self) -> float:
        return max(0.0, self._deadline - time.monotonic())


Probe = Callable[[Budget, ProbeContext], ProbeResult]
