"""What a drill shows at the end: the score, the expert path, what triage says, the thread.

Gathered once as data (`Debrief`), with `sections()` as titled plain lines that the app and
`--plain` both print (each styles the titles its own way). Every line is made inert and
redacted: excerpts and triage evidence are text from the internet.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trainmedic.drills.cases import DrillCase
from trainmedic.drills.expert import ExpertStep
from trainmedic.drills.run import NOTHING_WRONG, DrillResult, DrillRun, Outcome, expected_ref
from trainmedic.errors import UsageError
from trainmedic.redact import redact_text
from trainmedic.textsafe import inert_line
from trainmedic.trees import Fix, Forest, Question

TRIAGE_SHOWN = 3  # findings shown; the first decides what triage "would have said"
EVIDENCE_CHARS = 160


@dataclass(frozen=True)
class TriageSaid:
    """One triage finding on the drill's log: where it points and its first evidence line."""

    link: str
    summary: str
    evidence: str

    def to_dict(self) -> dict[str, str]:
        return {"link": self.link, "summary": self.summary, "evidence": self.evidence}


@dataclass(frozen=True)
class Debrief:
    case: DrillCase
    result: DrillResult
    target: str | None  # where the expert path leads ("tree#node"), None for a healthy log
    target_label: str
    expert: list[ExpertStep] | None
    triage: list[TriageSaid]
    triage_outcome: Outcome  # how triage's first finding would have scored on this drill

    def to_dict(self) -> dict[str, Any]:
        return {"case": self.case.to_dict(), "result": self.result.to_dict(),
                "target": self.target,
                "expert_path": None if self.expert is None else [s.to_dict() for s in
                                                                 self.expert],
                "triage": [t.to_dict() for t in self.triage],
                "triage_outcome": self.triage_outcome}

    def sections(self) -> list[tuple[str, list[str]]]:
        """(title, lines) in the order they are shown."""
        return [("Your answer", self._verdict()), ("The expert path", self._expert()),
                ("What triage says on this log", self._triage()),
                ("The thread", self._thread())]

    # -- the parts ------------------------------------------------------------------------------
    def _verdict(self) -> list[str]:
        r, case = self.result, self.case
        ended = "“nothing is wrong here”" if r.ended == NOTHING_WRONG else r.ended
        if case.healthy:
            head = ("Right: nothing is wrong in this log." if r.outcome == "node" else
                    f"This log is healthy: nothing is wrong in it. You ended at {ended}.")
        elif r.outcome == "node":
            head = f"You reached the expected node {self.target}."
        elif r.outcome == "tree" and not r.node_known:
            head = f"Right tree: you ended at {ended}, in {case.tree}, as far as the thread goes."
        elif r.outcome == "tree":
            head = f"Right tree, another node: you ended at {ended}; the cause is {self.target}."
        else:
            head = f"Elsewhere: you ended at {ended}; the cause is {self.target or case.expect}."
        moves = f"{r.moves} move{'s' if r.moves != 1 else ''}"
        if r.expert_moves is not None:
            moves += f" (the expert path takes {r.expert_moves})"
        extras = [f"jumped to {', '.join(r.jumps)}"] if r.jumps else []
        if r.used_triage:
            extras.append("used triage")
        tail = f"; {', '.join(extras)}" if extras else ""
        return [head, f"Score {r.score:.1f} of 1 · {moves}{tail}."]

    def _expert(self) -> list[str]:
        case = self.case
        if case.healthy:
            return ["Nothing to walk: the log shows normal training. In a drill, say so "
                    "(“nothing is wrong here”); in an incident, look at the other ranks."]
        if self.expert is None:
            return [f"{self.target} cannot be reached from the entry question."]
        lines = [f"{i}. {step.question}  [{step.node}]\n   → {step.answer + 1}. "
                 f"{step.answer_text}" for i, step in enumerate(self.expert, start=1)]
        lines.append(f"→ {self.target}: {self.target_label}")
        if case.node is None:
            lines.append(f"The thread pins only the tree ({case.expect}).")
        elif self.target != case.expect:
            lines.append(f"The thread's node ({case.expect}) is not in the trees yet: the path "
                         "leads to its tree.")
        return lines

    def _triage(self) -> list[str]:
        verdict = {"node": "the expected node", "tree": "the right tree",
                   "elsewhere": "elsewhere"}[self.triage_outcome]
        if not self.triage:
            return [f"Nothing: triage finds no known failure in it ({verdict}"
                    + (", which is right)." if self.case.healthy else ").")]
        lines = []
        for finding in self.triage:
            lines.append(f"{finding.link}: {finding.summary}")
            if finding.evidence:
                lines.append(f"   {finding.evidence}")
        lines.append(f"Its first finding leads to {verdict}.")
        return lines

    def _thread(self) -> list[str]:
        case = self.case
        lines = [f"“{case.title}”" if case.title else "(no title)", case.source]
        if case.framework:
            lines.append(f"Ran: {case.framework}")
        lines.append(f"Resolution: {case.resolution or 'not recorded'}")
        if case.why:
            lines.append(f"The decisive line: {case.why}")
        lines.append(f"Case: {case.name} (expected {case.expect})")
        return lines


def _clean(text: str, limit: int | None = None) -> str:
    text = inert_line(redact_text(" ".join(text.split())))
    return text[: limit - 1] + "…" if limit and len(text) > limit else text


def node_label(forest: Forest, ref_text: str | None) -> str:
    """A node's question or fix title, for "→ oom#when: When does it run out?"."""
    if ref_text is None:
        return ""
    tree_id, _, node_id = ref_text.partition("#")
    tree = forest.trees.get(tree_id)
    node = tree.nodes.get(node_id) if tree is not None else None
    if isinstance(node, Question):
        return str(node.question)
    if isinstance(node, Fix):
        return f"fix: {node.fix}"
    return ""


def debrief(run: DrillRun, result: DrillResult) -> Debrief:
    """Everything the end of a drill shows, for the run that produced `result`."""
    forest, case = run.forest, run.case
    target = expected_ref(forest, case)
    said = []
    for finding in run.triage().findings[:TRIAGE_SHOWN]:
        first = finding.evidence[0] if finding.evidence else None
        evidence = _clean(f"{first.where}: {first.text}", EVIDENCE_CHARS) if first else ""
        said.append(TriageSaid(_clean(finding.link), _clean(finding.summary), evidence))
    return Debrief(case=case, result=result, target=str(target) if target else None,
                   target_label=_clean(node_label(forest, str(target) if target else None)),
                   expert=run.expert(), triage=said,
                   triage_outcome=triage_outcome(run))


def triage_outcome(run: DrillRun) -> Outcome:
    """How triage's first finding would have scored as the trainee's answer."""
    forest, case = run.forest, run.case
    findings = run.triage().findings
    if case.healthy:
        return "elsewhere" if findings else "node"
    target = expected_ref(forest, case)
    if not findings or target is None:
        return "elsewhere"
    try:
        ref = forest.parse_ref(findings[0].link)
    except UsageError:  # a link into a tree this forest lacks
        return "elsewhere"
    known = case.node is not None and target.node == case.node
    if known and ref == target:
        return "node"
    return "tree" if ref.tree == case.tree else "elsewhere"
