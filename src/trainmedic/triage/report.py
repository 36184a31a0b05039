"""The result of a triage: ordered findings, the loss analysis and the per-rank view.

Plain dataclasses with `to_dict()` so the CLI (`--json`), the TUI, saved walks and incident
reports share one shape; `Evidence.from_dict`/`Finding.from_dict` read it back (and the older
shapes saved walks hold). Evidence text is redacted when it is recorded, never later.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from trainmedic.triage.loss.model import LossAnalysis
    from trainmedic.triage.symptom import SymptomUse

NO_ORDER = (1 << 30, 0)  # sorts after every position a scanner records
_WHERE = re.compile(r"^(?P<file>[^\s:][^:]*):(?P<line>\d+): (?P<text>.*)$", re.DOTALL)


def _int_or_none(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@dataclass
class Evidence:
    file: str
    line: int
    text: str
    rank: int | None = None
    host: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "text": self.text, "rank": self.rank,
                "host": self.host}

    @property
    def where(self) -> str:
        """`rank3.log:812`: the file's name and the line, as people quote them."""
        name = self.file.replace("\\", "/").rsplit("/", 1)[-1]
        return f"{name}:{self.line}" if name else f"line {self.line}"

    @classmethod
    def from_dict(cls, data: object) -> Evidence | None:
        """A saved evidence line: the mapping `to_dict()` writes, or the `file:line: text`
        string that walks saved by 0.1.0's app hold; None for anything else."""
        if isinstance(data, str):
            m = _WHERE.match(data)
            if m is None:
                return cls("", 0, data)
            return cls(m["file"], int(m["line"]), m["text"])
        if not isinstance(data, Mapping):
            return None
        host = data.get("host")
        return cls(str(data.get("file") or ""), _int_or_none(data.get("line")) or 0,
                   str(data.get("text") or ""), _int_or_none(data.get("rank")),
                   host if isinstance(host, str) else None)


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
    details: dict[str, Any] = field(default_factory=dict)
    # where the first line was seen (file index, line): orders findings of equal weight and
    # time; kept in memory only
    first_order: tuple[int, int] = NO_ORDER
    hosts: list[str] = field(default_factory=list)
    # whether it fits the symptom the user reported (`--symptom`); None when none was given
    fits_symptom: bool | None = None

    @property
    def guess(self) -> bool:
        """No signature knew the error: the tree was guessed from its words."""
        return self.kind == "guess"

    @property
    def link(self) -> str:
        """`tree` or `tree#node`: what `trainmedic walk` and tree references accept."""
        return f"{self.tree}#{self.node}" if self.node else self.tree

    @property
    def walk_command(self) -> str:
        return f"trainmedic walk {self.link}"

    def to_dict(self) -> dict[str, Any]:
        out = {
            "signature": self.signature, "tree": self.tree, "node": self.node,
            "link": self.link, "confidence": round(self.confidence, 2), "summary": self.summary,
            "kind": self.kind, "guess": self.guess, "why": self.why, "count": self.count,
            "ranks": self.ranks, "hosts": self.hosts,
            "first_time": self.first_time.isoformat(sep=" ") if self.first_time else None,
            "evidence": [e.to_dict() for e in self.evidence],
            "details": dict(self.details),
        }
        if self.fits_symptom is not None:  # only when a symptom was given: output unchanged
            out["fits_symptom"] = self.fits_symptom
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Finding | None:
        """A finding as `to_dict()` wrote it, or as 0.1.0's app saved it in a walk
        (`tree, node, link, summary, evidence: [str]`); None without a tree to link to."""
        tree, node = data.get("tree"), data.get("node")
        link = data.get("link")
        if not tree and isinstance(link, str):
            tree, _, node = link.partition("#")
        if not isinstance(tree, str) or not tree:
            return None
        try:
            first_time = datetime.fromisoformat(str(data["first_time"]))
        except (KeyError, TypeError, ValueError):
            first_time = None
        confidence = data.get("confidence")
        count = _int_or_none(data.get("count"))
        ranks = data.get("ranks")
        hosts = data.get("hosts")
        evidence = data.get("evidence")
        details = data.get("details")
        fits = data.get("fits_symptom")
        return cls(
            signature=str(data.get("signature") or ""), tree=tree,
            node=str(node) if node else None,
            confidence=float(confidence) if isinstance(confidence, int | float) else 0.0,
            summary=str(data.get("summary") or ""), kind=str(data.get("kind") or "cause"),
            why=str(data.get("why") or ""), count=count or 0,
            ranks=[r for r in ranks if _int_or_none(r) is not None]
            if isinstance(ranks, list) else [],
            first_time=first_time,
            evidence=[e for e in map(Evidence.from_dict, evidence) if e is not None]
            if isinstance(evidence, list) else [],
            details=dict(details) if isinstance(details, Mapping) else {},
            hosts=[h for h in hosts if isinstance(h, str)] if isinstance(hosts, list) else [],
            fits_symptom=fits if isinstance(fits, bool) else None,
        )


@dataclass
class TriageReport:
    findings: list[Finding]
    loss: LossAnalysis
    ranks: dict[str, Any]
    files: list[str]
    candidate_lines: int = 0
    notes: list[str] = field(default_factory=list)  # sources read only in part, and why
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (file, why it was not read)
    root_cause: dict[str, Any] | None = None  # the launcher's "first observed failure"
    # lines read that hold an error word (Error, Killed, exit code, ...), frames aside; lines
    # whose only needle is a generic error word are not read (`unmatched.ErrorTracker`)
    errors: int = 0
    symptom: SymptomUse | None = None  # what the user said they saw, and how it was used

    @property
    def top(self) -> Finding | None:
        return self.findings[0] if self.findings else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "findings": [f.to_dict() for f in self.findings],
            "loss": self.loss.to_dict(),
            "ranks": self.ranks,
            "files": self.files,
            "candidate_lines": self.candidate_lines,
            "notes": self.notes,
            "skipped": [{"file": f, "reason": why} for f, why in self.skipped],
            "root_cause": self.root_cause,
            "errors": self.errors,
            "next": self.top.walk_command if self.top else None,
            # only when a symptom was given, so output without one stays as it was
            **({"symptom": self.symptom.to_dict()} if self.symptom is not None else {}),
        }
