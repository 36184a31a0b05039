"""The records of a cluster sweep: what each node said, what differs, and the verdicts.

`ClusterResult` is what `sweep()` returns, what `trainmedic probe --nodes --json` prints
(`to_dict()`), what is saved for trees and the app, and what the table, the cluster screen and
the `cluster` probe read. `from_dict` reads every result saved so far, tolerating missing keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from trainmedic.redact import redact_text
from trainmedic.textsafe import inert, inert_deep, inert_line

RESULT_VERSION = 1

AnswerState = Literal["ok", "no-answer", "garbage", "unreachable", "error"]
_ANSWER_STATES: tuple[AnswerState, ...] = ("ok", "no-answer", "garbage", "unreachable", "error")


def _text(value: object) -> str:
    return "" if value is None else str(value)


def _number(value: object) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) \
        else 0.0


def _items(value: object) -> list[Any]:
    return list(value) if isinstance(value, list) else []


def _mappings(value: object) -> list[Mapping[str, Any]]:
    return [v for v in _items(value) if isinstance(v, Mapping)]


@dataclass
class NodeAnswer:
    """What one node said (or why it said nothing)."""

    host: str
    state: AnswerState
    payload: dict[str, Any] | None = None  # the node's `trainmedic probe --json` object
    detail: str = ""  # one line: why the state is not ok
    duration_s: float = 0.0

    def __post_init__(self) -> None:
        # What a node printed is untrusted: its own redaction may be older or broken, and a
        # garbage answer may carry escape sequences. Scrubbed here, where every answer is made
        # (by the fan-out or read back from a saved sweep).
        self.host = inert_line(self.host)
        self.detail = inert_line(redact_text(self.detail))
        if self.payload is not None:
            self.payload = _scrub_payload(self.payload)

    def to_dict(self) -> dict[str, Any]:
        return {
            "host": self.host,
            "state": self.state,
            "detail": self.detail,
            "duration_s": round(self.duration_s, 3),
            "result": self.payload,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> NodeAnswer:
        state: AnswerState = next((s for s in _ANSWER_STATES if s == data.get("state")),
                                  "error")
        payload = data.get("result")
        return cls(_text(data.get("host")), state,
                   dict(payload) if isinstance(payload, Mapping) else None,
                   _text(data.get("detail")), _number(data.get("duration_s")))


def _scrub_payload(value: Any, depth: int = 0) -> Any:
    """A node's JSON with every string (keys too) redacted and made inert."""
    if depth > 32:
        return None
    if isinstance(value, str):
        return inert(redact_text(value))
    if isinstance(value, dict):
        return {inert_line(str(k)): _scrub_payload(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub_payload(v, depth + 1) for v in value]
    return value


@dataclass
class NodeFinding:
    """One thing wrong with one node; `kind` picks the action of its verdict line."""

    host: str
    kind: str
    message: str
    fact: str = ""

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> NodeFinding:
        return cls(_text(data.get("host")), _text(data.get("kind")), _text(data.get("message")),
                   _text(data.get("fact")))


@dataclass
class Outlier:
    """A consensus fact where a minority of nodes differs from the majority value."""

    fact: str
    majority: object
    majority_count: int
    minority: dict[str, object]  # host -> its value

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Outlier:
        minority = data.get("minority")
        count = data.get("majority_count")
        return cls(_text(data.get("fact")), data.get("majority"),
                   count if isinstance(count, int) else 0,
                   dict(minority) if isinstance(minority, Mapping) else {})


@dataclass
class Split:
    """A consensus fact with no majority value: the cluster disagrees, nobody is to blame."""

    fact: str
    groups: dict[str, str]  # JSON of the value -> compressed host list

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Split:
        groups = data.get("groups")
        return cls(_text(data.get("fact")),
                   {str(k): str(v) for k, v in groups.items()}
                   if isinstance(groups, Mapping) else {})


@dataclass
class ClusterResult:
    """The whole sweep: per-node answers, outliers, findings and one verdict per bad node."""

    time: str
    spec: str
    method: str
    node_count: int
    answered: int
    wall_s: float
    bad_nodes: list[str] = field(default_factory=list)
    verdicts: list[str] = field(default_factory=list)
    findings: list[NodeFinding] = field(default_factory=list)
    outliers: list[Outlier] = field(default_factory=list)
    splits: list[Split] = field(default_factory=list)
    nodes: list[NodeAnswer] = field(default_factory=list)
    version: int = RESULT_VERSION

    @property
    def failed(self) -> bool:
        """A node is faulty, or the nodes disagree with no majority."""
        return bool(self.bad_nodes or self.splits)

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "time": self.time,
            "spec": self.spec,
            "method": self.method,
            "node_count": self.node_count,
            "answered": self.answered,
            "wall_s": round(self.wall_s, 3),
            "bad_nodes": list(self.bad_nodes),
            "verdicts": list(self.verdicts),
            "findings": [asdict(f) for f in self.findings],
            "outliers": [asdict(o) for o in self.outliers],
            "splits": [asdict(s) for s in self.splits],
            "nodes": [a.to_dict() for a in self.nodes],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ClusterResult:
        """A saved or printed result; any key may be missing or malformed, and any string may
        hold escape sequences (someone else's file): all are made inert here."""
        clean = inert_deep(dict(data))
        assert isinstance(clean, dict)
        data = clean
        version = data.get("version")
        return cls(
            time=_text(data.get("time")),
            spec=_text(data.get("spec")),
            method=_text(data.get("method")) or "?",
            node_count=int(_number(data.get("node_count"))),
            answered=int(_number(data.get("answered"))),
            wall_s=_number(data.get("wall_s")),
            bad_nodes=[_text(h) for h in _items(data.get("bad_nodes"))],
            verdicts=[_text(v) for v in _items(data.get("verdicts"))],
            findings=[NodeFinding.from_dict(f) for f in _mappings(data.get("findings"))],
            outliers=[Outlier.from_dict(o) for o in _mappings(data.get("outliers"))],
            splits=[Split.from_dict(s) for s in _mappings(data.get("splits"))],
            nodes=[NodeAnswer.from_dict(n) for n in _mappings(data.get("nodes"))],
            version=version if isinstance(version, int) else RESULT_VERSION,
        )
