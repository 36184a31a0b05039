"""What a walk keeps of the triage it was started from: the findings, the logs, the choice.

One shape for every reader: the triage screen attaches it, the walk saves it, the evidence
panel shows the chosen finding and the incident report lists them all. `from_dict` also reads
the two shapes saved walks hold from 0.1.0: the `TriageReport.to_dict()` subset (`findings`,
`files`) and the app's single finding (`tree, node, link, summary, evidence: [str]`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from trainmedic.triage.report import Finding, TriageReport


@dataclass
class TriageAttachment:
    findings: list[Finding] = field(default_factory=list)  # most decisive first
    files: list[str] = field(default_factory=list)  # the logs that were read
    chosen: int = 0  # the finding the walk was started from

    @classmethod
    def of(cls, report: TriageReport, chosen: int = 0) -> TriageAttachment:
        return cls(list(report.findings), list(report.files), chosen)

    @property
    def finding(self) -> Finding | None:
        """The finding the walk was started from."""
        if 0 <= self.chosen < len(self.findings):
            return self.findings[self.chosen]
        return self.findings[0] if self.findings else None

    def to_dict(self) -> dict[str, Any]:
        return {"findings": [f.to_dict() for f in self.findings], "files": list(self.files),
                "chosen": self.chosen}

    @classmethod
    def from_dict(cls, data: object) -> TriageAttachment | None:
        """None when `data` holds no finding at all (a hand-edited or foreign file)."""
        if not isinstance(data, Mapping):
            return None
        raw = data.get("findings")
        if isinstance(raw, list):
            findings = [f for f in (Finding.from_dict(d) for d in raw if isinstance(d, Mapping))
                        if f is not None]
        else:  # 0.1.0's app: the chosen finding itself
            single = Finding.from_dict(data)
            findings = [single] if single is not None else []
        if not findings:
            return None
        files = data.get("files")
        chosen = data.get("chosen")
        return cls(findings, [str(f) for f in files] if isinstance(files, list) else [],
                   chosen if isinstance(chosen, int) and 0 <= chosen < len(findings) else 0)
