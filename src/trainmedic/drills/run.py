"""One drill in progress: the trainee's walk (answers, jumps, triage) and how it is scored.

The trainee walks the real trees with a `WalkSession`, from the entry question, as in an
incident. A jump (`tree#node` typed, or where triage points) starts a new leg; "back" undoes the
last answer, then the last jump. Probes never run: the machine at hand is not the one in the log.

Scoring looks at the route that ends where the trainee stopped: `node` when the expected node is
on it (reached; going further down from it is fine), `tree` when it ends in the expected tree,
`elsewhere` otherwise. A healthy log is scored `node` only for "nothing is wrong here". Moves
are every answer and jump made, undone ones included: the expert path is the yardstick.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from trainmedic.drills.cases import DrillCase
from trainmedic.drills.expert import ENTRY, ExpertStep, expert_path
from trainmedic.errors import UsageError
from trainmedic.walk import WalkSession, now_iso

if TYPE_CHECKING:
    from trainmedic.trees import Forest, Ref
    from trainmedic.triage import TriageReport

Outcome = Literal["node", "tree", "elsewhere"]
OUTCOMES: tuple[Outcome, ...] = ("node", "tree", "elsewhere")
NOTHING_WRONG = "nothing-wrong"  # what `ended` says when the trainee called the log healthy


def expected_ref(forest: Forest, case: DrillCase) -> Ref | None:
    """Where the expert path leads: the expected node, or the tree's first question when the
    thread pins only the tree or names a node the trees do not have (yet); None for a healthy
    log or a tree that is not loaded."""
    from trainmedic.trees import Ref

    if case.tree is None or case.tree not in forest.trees:
        return None
    tree = forest.trees[case.tree]
    if case.node is not None and case.node in tree.nodes:
        return Ref(case.tree, case.node)
    return forest.start(case.tree)


def playable(forest: Forest, cases: list[DrillCase]) -> list[DrillCase]:
    """Healthy logs and the cases whose tree is loaded (a drill must be able to end right)."""
    return [c for c in cases if c.healthy or expected_ref(forest, c) is not None]


def node_known(forest: Forest, case: DrillCase) -> bool:
    """Whether the drill is scored to the node (else the right tree is the best ending)."""
    if case.healthy:
        return True
    ref = expected_ref(forest, case)
    return ref is not None and case.node is not None and ref.node == case.node


@dataclass
class DrillResult:
    """A finished drill, as kept in the progress file."""

    case: str
    area: str
    expect: str
    ended: str  # "tree#node", or NOTHING_WRONG
    outcome: Outcome
    node_known: bool = True
    moves: int = 0
    expert_moves: int | None = None  # None: no route from the entry (a healthy log: 0)
    path: list[str] = field(default_factory=list)
    jumps: list[str] = field(default_factory=list)
    used_triage: bool = False
    started: str = ""
    finished: str = ""

    @property
    def score(self) -> float:
        """1 for the best ending this drill allows, 0.5 for the right tree only, else 0."""
        if self.outcome == "node" or (self.outcome == "tree" and not self.node_known):
            return 1.0
        return 0.5 if self.outcome == "tree" else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"case": self.case, "area": self.area, "expect": self.expect,
                "ended": self.ended, "outcome": self.outcome, "node_known": self.node_known,
                "moves": self.moves, "expert_moves": self.expert_moves, "path": list(self.path),
                "jumps": list(self.jumps), "used_triage": self.used_triage,
                "started": self.started, "finished": self.finished}

    @classmethod
    def from_dict(cls, data: object) -> DrillResult | None:
        """A saved result, or None when it lacks its case or outcome (a hand-edited file)."""
        if not isinstance(data, Mapping):
            return None
        case, outcome = data.get("case"), data.get("outcome")
        if not isinstance(case, str) or outcome not in OUTCOMES:
            return None

        def text(key: str) -> str:
            value = data.get(key)
            return value if isinstance(value, str) else ""

        def number(key: str) -> int | None:
            value = data.get(key)
            return value if isinstance(value, int) and not isinstance(value, bool) else None

        def strings(key: str) -> list[str]:
            value = data.get(key)
            return [str(v) for v in value] if isinstance(value, list) else []

        return cls(case=case, area=text("area") or case.partition("/")[0],
                   expect=text("expect"), ended=text("ended"), outcome=outcome,
                   node_known=data.get("node_known") is not False, moves=number("moves") or 0,
                   expert_moves=number("expert_moves"), path=strings("path"),
                   jumps=strings("jumps"), used_triage=data.get("used_triage") is True,
                   started=text("started"), finished=text("finished"))


class DrillRun:
    """The trainee's walk through one drill; `finish()` scores it."""

    def __init__(self, forest: Forest, case: DrillCase, *, entry: str = ENTRY) -> None:
        self.forest = forest
        self.case = case
        self.entry = entry
        self._legs = [WalkSession(forest, entry, walk_id="drill")]
        self.moves = 0
        self.jumps: list[str] = []
        self.used_triage = False
        self.started = now_iso()
        self._triage: TriageReport | None = None

    @property
    def session(self) -> WalkSession:
        """The leg being walked (the last jump's, or the walk from the entry)."""
        return self._legs[-1]

    def path(self) -> list[Ref]:
        """The route that ends where the trainee stands (the current leg)."""
        return self.session.path()

    def answer(self, index: int) -> Ref:
        """Answer the current question (0-based); UsageError at a fix or out of range."""
        ref = self.session.answer(index)
        self.moves += 1
        return ref

    def back(self) -> bool:
        """Undo the last answer, else the last jump; False at the entry question."""
        if self.session.back():
            return True
        if len(self._legs) > 1:
            self._legs.pop()
            return True
        return False

    def jump(self, target: str) -> Ref:
        """Start a new leg at `tree` or `tree#node` (UsageError, naming it, when unknown)."""
        ref = self.forest.parse_ref(target.strip())
        self._legs.append(WalkSession(self.forest, ref, walk_id="drill"))
        self.moves += 1
        self.jumps.append(str(ref))
        return ref

    def triage(self) -> TriageReport:
        """What `trainmedic triage` says on this drill's log (the real engine, run once)."""
        if self._triage is None:
            from trainmedic.triage import triage_text

            # a neutral name: the case's file name says what it is
            self._triage = triage_text(self.case.excerpt, name="drill.log")
        return self._triage

    def jump_with_triage(self) -> Ref | None:
        """Jump where triage's first finding points, as in an incident; None when it names
        nothing (the trainee walks on from where they are)."""
        self.used_triage = True
        for finding in self.triage().findings:
            try:
                return self.jump(finding.link)
            except UsageError:  # a link into a tree this forest lacks: try the next finding
                continue
        return None

    def finish(self, *, nothing_wrong: bool = False) -> DrillResult:
        """Score the ending: where the trainee stands, or "nothing is wrong in this log"."""
        case = self.case
        path = self.path()
        known = node_known(self.forest, case)
        target = expected_ref(self.forest, case)
        outcome: Outcome
        if case.healthy:
            outcome = "node" if nothing_wrong else "elsewhere"
        elif nothing_wrong or target is None:
            outcome = "elsewhere"
        elif known and target in path:
            outcome = "node"
        elif path[-1].tree == case.tree:
            outcome = "tree"
        else:
            outcome = "elsewhere"
        expert = self.expert()
        return DrillResult(
            case=case.name, area=case.area, expect=case.expect,
            ended=NOTHING_WRONG if nothing_wrong else str(path[-1]), outcome=outcome,
            node_known=known, moves=self.moves,
            expert_moves=0 if case.healthy else (len(expert) if expert is not None else None),
            path=[str(r) for r in path], jumps=list(self.jumps),
            used_triage=self.used_triage, started=self.started, finished=now_iso())

    def expert(self) -> list[ExpertStep] | None:
        """The expert path to the expected node (see `expert.expert_path`); None when healthy
        or unreachable from the entry."""
        target = expected_ref(self.forest, self.case)
        return None if target is None else expert_path(self.forest, target, entry=self.entry)
