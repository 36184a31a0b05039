"""The result of a triage: ordered findings, the loss analysis and the per-rank view.

Plain dataclasses with `to_dict()` so the CLI (`--json`), the TUI and incident reports share one
shape. Evidence text is redacted when it is recorded, never later.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from trainmedic.triage.loss_series import LossAnalysis


@dataclass
class Evidence:
    file: str
    line: int
    text: str
    rank: int | None = None

    def to_dict(self) -> dict:
        return {"file": self.file, "line": self.line, "text": self.text, "rank": self.rank}


@dataclass
class Finding:
    signature: str
    tree: str
    node: str | None
    confidence: float
    summary: str
    kind: str = "cause"
    why: str = ""
    count: int = 0
    ranks: list[int] = field(default_factory=list)
    first_time: datetime | None = None
    evidence: list[Evidence] = field(default_factory=list)
    details: dict = field(default_factory=dict)

    @property
    def link(self) -> str:
        """`tree` or `tree#node`: what `trainmedic walk` and tree references accept."""
        return f"{self.tree}#{self.node}" if self.node else self.tree

    @property
    def walk_command(self) -> str:
        return f"trainmedic walk {self.link}"

    def to_dict(self) -> dict:
        return {
            "signature": self.signature, "tree": self.tree, "node": self.node,
            "link": self.link, "confidence": round(self.confidence, 2), "summary": self.summary,
            "kind": self.kind, "why": self.why, "count": self.count, "ranks": self.ranks,
            "first_time": self.first_time.isoformat(sep=" ") if self.first_time else None,
            "evidence": [e.to_dict() for e in self.evidence],
            "details": {k: v for k, v in self.details.items() if not k.startswith("_")},
        }


@dataclass
class TriageReport:
    findings: list[Finding]
    loss: LossAnalysis
    ranks: dict
    files: list[str]
    candidate_lines: int = 0
    notes: list[str] = field(default_factory=list)  # sources read only in part, and why

    @property
    def top(self) -> Finding | None:
        return self.findings[0] if self.findings else None

    def to_dict(self) -> dict:
        return {
            "findings": [f.to_dict() for f in self.findings],
            "loss": self.loss.to_dict(),
            "ranks": self.ranks,
            "files": self.files,
            "candidate_lines": self.candidate_lines,
            "notes": self.notes,
            "next": self.top.walk_command if self.top else None,
        }
