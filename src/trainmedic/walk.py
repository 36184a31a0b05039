"""A walk through the trees: where we are, how we got here, and what the machine showed on the way.

The engine knows nothing of Textual or of the terminal. The TUI, the `--plain` prompts and the
non-interactive `--answers` walk all drive one `WalkSession`, so they cannot disagree about where
an answer leads, what "back" undoes, or what a saved walk contains (contracts §5).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from trainmedic.errors import UsageError
from trainmedic.redact import redact_text
from trainmedic.trees.forest import Forest, Ref
from trainmedic.trees.model import Fix, Node, Question

VERSION = 1


def now_iso() -> str:
    return datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def new_walk_id(tree_id: str) -> str:
    """`20261129T081600-oom-3f2a`: sortable by time, readable, unique enough per user."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    return f"{stamp}-{tree_id}-{secrets.token_hex(2)}"


@dataclass
class StepRecord:
    """One answered question: what was asked, what was chosen, what the probes suggested."""

    node: str  # "tree#node" of the question
    question: str
    answer: int  # 0-based
    answer_text: str
    goto: str  # "tree#node" it led to
    suggested: int | None = None
    evidence: list[str] = field(default_factory=list)
    time: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "node": self.node, "question": self.question, "answer": self.answer,
            "answer_text": self.answer_text, "goto": self.goto, "suggested": self.suggested,
            "evidence": list(self.evidence), "time": self.time,
        }


def facts_from(results: Iterable[Any]) -> tuple[dict[str, object], dict[str, str]]:
    """Facts keyed `probe.fact` and their human evidence lines, from probe results or dicts."""
    facts: dict[str, object] = {}
    evidence: dict[str, str] = {}
    for r in results:
        name = r["name"] if isinstance(r, Mapping) else r.name
        r_facts = (r.get("facts") if isinstance(r, Mapping) else r.facts) or {}
        r_evidence = (r.get("evidence") if isinstance(r, Mapping)
                      else getattr(r, "evidence", None)) or {}
        facts.update({f"{name}.{k}": v for k, v in r_facts.items()})
        evidence.update({f"{name}.{k}": str(v) for k, v in r_evidence.items()})
    return facts, evidence


class WalkSession:
    """Current node, the answers so far, the cross-tree return stack and attached evidence."""

    def __init__(self, forest: Forest, start: Ref | str, *, walk_id: str | None = None) -> None:
        self.forest = forest
        ref = forest.parse_ref(start) if isinstance(start, str) else start
        self.origin = ref
        self.tree = ref.tree
        self.id = walk_id or new_walk_id(ref.tree)
        self.started = now_iso()
        self.updated = self.started
        self.current = ref
        self.steps: list[StepRecord] = []
        self.stack: list[str] = []
        self.probes: list[dict[str, Any]] = []
        self.triage: dict[str, Any] | None = None
        self.launch_command = ""
        self.notes = ""

    # -- where we are -------------------------------------------------------------------------
    @property
    def node(self) -> Node:
        return self.forest.node(self.current)

    @property
    def question(self) -> Question | None:
        node = self.node
        return node if isinstance(node, Question) else None

    @property
    def fix(self) -> Fix | None:
        node = self.node
        return node if isinstance(node, Fix) else None

    @property
    def finished(self) -> bool:
        return isinstance(self.node, Fix)

    def path(self) -> list[Ref]:
        """Every node visited on the way to the current one, current last (for breadcrumbs)."""
        refs = [self.forest.parse_ref(s.node) for s in self.steps]
        return [*refs, self.current]

    def facts(self) -> tuple[dict[str, object], dict[str, str]]:
        return facts_from(self.probes)

    def suggestion(self) -> tuple[int | None, list[str]]:
        """The answer the attached probe facts suggest for the current question, and why."""
        question = self.question
        if question is None or not self.probes:
            return None, []
        from trainmedic.trees.rules import suggest

        facts, evidence = self.facts()
        return suggest(question, facts, evidence)

    # -- moving -------------------------------------------------------------------------------
    def target_of(self, index: int) -> Ref:
        """Where answer `index` (0-based) of the current question leads, without moving."""
        question = self.question
        if question is None:
            raise UsageError(f"{self.current} is a fix; there is nothing to answer")
        if not 0 <= index < len(question.answers):
            raise UsageError(
                f"answer {index + 1} is out of range at {self.current} "
                f"(1-{len(question.answers)})")
        ref = self.forest.resolve(self.current.tree, question.answers[index].goto)
        if ref is None:
            raise UsageError(f"{self.current}: answer {index + 1} leads to unknown "
                             f"'{question.answers[index].goto}'")
        return ref

    def answer(self, index: int, *, suggested: int | None = None,
               evidence: list[str] | None = None) -> Ref:
        """Choose answer `index` (0-based) and move; entering another tree pushes a return point.

        Without explicit `suggested`/`evidence`, the attached probe facts are evaluated, so
        every front end records the same suggestion.
        """
        question = self.question
        ref = self.target_of(index)
        assert question is not None
        if suggested is None and evidence is None:
            suggested, evidence = self.suggestion()
        if ref.tree != self.current.tree:
            self.stack.append(str(self.current))
        self.steps.append(StepRecord(
            node=str(self.current), question=str(question.question), answer=index,
            answer_text=str(question.answers[index].text), goto=str(ref),
            suggested=suggested, evidence=list(evidence or []), time=now_iso()))
        self.current = ref
        self._touch()
        return ref

    def back(self) -> bool:
        """Undo the last answer (crossing back over a tree link); False at the first node."""
        if not self.steps:
            return False
        step = self.steps.pop()
        came_from = self.forest.parse_ref(step.node)
        if came_from.tree != self.current.tree and self.stack and self.stack[-1] == step.node:
            self.stack.pop()
        self.current = came_from
        self._touch()
        return True

    def back_to_question(self) -> bool:
        """"This did not help": return to the last question answered (same as back)."""
        return self.back()

    def return_from_link(self) -> bool:
        """Leave the linked tree: go back to the question that jumped into it."""
        if not self.stack:
            return False
        target = self.stack[-1]
        while self.steps and self.stack and self.stack[-1] == target:
            self.back()
        return True

    def restart(self) -> None:
        """Back to where this walk began, forgetting every answer (probes/triage are kept)."""
        self.steps.clear()
        self.stack.clear()
        self.current = self.origin
        self._touch()

    def attach_probes(self, results: Iterable[Any]) -> None:
        """Keep the latest result of each probe (by name), as dicts ready to save."""
        latest = {p["name"]: p for p in self.probes}
        for r in results:
            data = r if isinstance(r, Mapping) else r.to_dict()
            latest[data["name"]] = dict(data)
        self.probes = list(latest.values())
        self._touch()

    def _touch(self) -> None:
        self.updated = now_iso()

    # -- saving -------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "version": VERSION, "id": self.id, "tree": self.tree, "started": self.started,
            "updated": self.updated, "current": str(self.current), "finished": self.finished,
            "steps": [s.to_dict() for s in self.steps], "stack": list(self.stack),
            "probes": [dict(p) for p in self.probes], "triage": self.triage,
            # Saved walks live in the home folder, often shared: no token leaves in them.
            "launch_command": redact_text(self.launch_command), "notes": self.notes,
        }

    @classmethod
    def from_dict(cls, forest: Forest, data: Mapping[str, Any]) -> WalkSession:
        """Restore a saved walk; UsageError (naming the walk) when it no longer fits the trees."""
        walk_id = str(data.get("id", "?"))

        def bad(why: str) -> UsageError:
            return UsageError(f"saved walk {walk_id}: {why}")

        if data.get("version") != VERSION:
            raise bad(f"unsupported version {data.get('version')!r}")
        try:
            current = _ref(forest, data["current"])
            steps = [StepRecord(
                node=str(s["node"]), question=str(s.get("question", "")), answer=int(s["answer"]),
                answer_text=str(s.get("answer_text", "")), goto=str(s["goto"]),
                suggested=s.get("suggested"), evidence=[str(e) for e in s.get("evidence") or []],
                time=str(s.get("time", ""))) for s in data["steps"]]
        except (KeyError, TypeError, ValueError) as exc:
            raise bad(f"malformed ({exc.__class__.__name__}: {exc})") from None
        except UsageError as exc:
            raise bad(f"{exc} (the trees changed since it was saved)") from None
        session = cls(forest, _ref_or_bad(forest, steps[0].node, bad) if steps else current,
                      walk_id=walk_id)
        session.tree = str(data.get("tree") or session.origin.tree)
        for i, step in enumerate(steps):
            node = forest.node(_ref_or_bad(forest, step.node, bad))
            if not isinstance(node, Question) or not 0 <= step.answer < len(node.answers):
                raise bad(f"step {i + 1} ({step.node}) no longer fits the trees")
            _ref_or_bad(forest, step.goto, bad)
        stack = data.get("stack") or []
        if not isinstance(stack, list):
            raise bad(f"malformed (stack is {type(stack).__name__}, not a list)")
        session.steps = steps
        session.current = current
        session.stack = [str(_ref_or_bad(forest, str(s), bad)) for s in stack]
        session.started = str(data.get("started") or session.started)
        session.updated = str(data.get("updated") or session.updated)
        probes = data.get("probes") or []
        # facts_from reads these at once: one hand-edited entry must not crash the screen
        session.probes = [dict(p) for p in probes if _is_probe(p)] \
            if isinstance(probes, list) else []
        triage = data.get("triage")
        session.triage = dict(triage) if isinstance(triage, Mapping) else None
        session.launch_command = str(data.get("launch_command") or "")
        session.notes = str(data.get("notes") or "")
        return session


def _is_probe(p: object) -> bool:
    """A saved probe result that `facts_from` can read: a name, and mappings where it wants them."""
    return isinstance(p, Mapping) and isinstance(p.get("name"), str) \
        and all(isinstance(p.get(k) or {}, Mapping) for k in ("facts", "evidence"))


def _ref(forest: Forest, text: object) -> Ref:
    if not isinstance(text, str):
        raise TypeError(f"node reference {text!r} is not text")
    return forest.parse_ref(text)


def _ref_or_bad(forest: Forest, text: str, bad) -> Ref:
    try:
        return forest.parse_ref(text)
    except UsageError as exc:
        raise bad(f"{exc} (the trees changed since it was saved)") from None
