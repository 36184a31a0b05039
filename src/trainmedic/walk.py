"""A walk through the trees: where we are, how we got here, and what the machine showed on the way.

The engine knows nothing of Textual or of the terminal. The TUI, the `--plain` prompts and the
non-interactive `--answers` walk all drive one `WalkSession`, so they cannot disagree about where
an answer leads, what "back" undoes, which probes run when (and with which launch command), or
what a saved walk contains (`saved_walks.WalkRecord`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from trainmedic.errors import UsageError
from trainmedic.saved_walks import VERSION, StepRecord, TriedFix, WalkRecord
from trainmedic.trees.model import Fix, Node, Question

if TYPE_CHECKING:
    from trainmedic.probes.base import ProbeContext, ProbeResult
    from trainmedic.probes.runner import ProbeRunner
    from trainmedic.trees.forest import Forest, Ref
    from trainmedic.triage.attachment import TriageAttachment
    from trainmedic.triage.known import KnownFromLog

__all__ = ["VERSION", "Saver", "StepRecord", "TriedFix", "WalkRecord", "WalkSession",
           "default_probe_runner", "facts_from", "new_walk_id", "now_iso", "resume", "route_to"]


def now_iso() -> str:
    return datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def new_walk_id(tree_id: str) -> str:
    """`20261129T081600-oom-3f2a`: sortable by time, readable, unique enough per user."""
    import secrets  # hashlib and OpenSSL: not for the home screen, which only lists walks

    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    return f"{stamp}-{tree_id}-{secrets.token_hex(2)}"


def default_probe_runner() -> ProbeRunner:
    """This machine's probes (a `LocalRunner`, which can also stream), imported only when a
    walk is going to suggest answers."""
    from trainmedic.probes.runner import LocalRunner

    return LocalRunner()


def facts_from(results: Iterable[ProbeResult]) -> tuple[dict[str, object], dict[str, str]]:
    """Facts keyed `probe.fact` and their human evidence lines, from probe results. A probe that
    could not tell (`unknown`: not the job's environment, unreadable output) lends no fact, so
    no answer is suggested on a guess."""
    facts: dict[str, object] = {}
    evidence: dict[str, str] = {}
    for r in results:
        if r.status == "unknown":
            continue
        facts.update({f"{r.name}.{k}": v for k, v in r.facts.items()})
        evidence.update({f"{r.name}.{k}": v for k, v in r.evidence.items()})
    return facts, evidence


def route_to(forest: Forest, target: Ref) -> list[tuple[Ref, int]]:
    """The tree's own way to `target`: the (question, answer index) pairs from its tree's start,
    fewest first, without leaving the tree; [] when `target` is the start or out of reach."""
    from collections import deque

    from trainmedic.trees.forest import Ref

    tree = forest.trees[target.tree]
    start = Ref(target.tree, tree.start)
    came: dict[Ref, tuple[Ref, int] | None] = {start: None}
    queue = deque([start])
    while queue and target not in came:
        ref = queue.popleft()
        node = forest.node(ref)
        if not isinstance(node, Question):
            continue
        for index, answer in enumerate(node.answers):
            nxt = forest.resolve(ref.tree, answer.goto)
            if nxt is not None and nxt.tree == ref.tree and nxt not in came:
                came[nxt] = (ref, index)
                queue.append(nxt)
    if target not in came:
        return []
    route: list[tuple[Ref, int]] = []
    step = came[target]
    while step is not None:
        route.append(step)
        step = came[step[0]]
    return route[::-1]


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
        self.probes: list[ProbeResult] = []
        self.triage: TriageAttachment | None = None
        self.launch_command = ""
        self.notes = ""
        self.tried: list[TriedFix] = []
        self.asked: set[str] = set()  # probes run (or running) in this walk, never saved
        # what `restart` forgot, so that `back` can undo it (until the next answer)
        self._before_restart: tuple[list[StepRecord], list[str], Ref] | None = None

    @classmethod
    def from_finding(cls, forest: Forest, target: Ref | str,
                     triage: TriageAttachment) -> WalkSession:
        """A walk opened where a log triage finding leads, standing on the tree's own route to
        it: the questions on the way are answered (marked as implied by the log), so "back",
        "did not help" and "restart" go up the tree as in any walk."""
        ref = forest.parse_ref(target) if isinstance(target, str) else target
        route = route_to(forest, ref)
        session = cls(forest, route[0][0] if route else ref)
        session.triage = triage
        finding = triage.finding
        why = [f"the log triage: {finding.summary}"] if finding is not None else []
        for _question, index in route:
            session.answer(index, suggested=None, evidence=why, implied=True)
        return session

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

    def known_values(self) -> KnownFromLog:
        """The numbers of this incident that the walk's log triage found (for fix commands)."""
        from trainmedic.triage.known import known_from

        return known_from(self.triage)

    def tried_answers(self) -> dict[int, str]:
        """Answers of the current question that led to a fix which did not help: index -> fix."""
        here = str(self.current)
        return {t.answer: t.title for t in self.tried
                if t.question == here and t.answer is not None}

    def suggestion(self) -> tuple[int | None, list[str]]:
        """The answer the attached probe facts suggest for the current question, and why."""
        question = self.question
        if question is None or not self.probes:
            return None, []
        from trainmedic.trees.rules import suggest

        facts, evidence = self.facts()
        return suggest(question, facts, evidence)

    # -- probes: which, when, with what ---------------------------------------------------------
    def probe_context(self) -> ProbeContext:
        """What the probes may know from this walk (the launch command, for the memory probe)."""
        return self.record().probe_context()

    def take_due_probes(self, *, again: bool = False) -> list[str]:
        """The probes the current question's rules read that have not run in this walk (all of
        them with `again`), marked as run: each runs once per walk unless asked again."""
        question = self.question
        if question is None:
            return []
        due = [p for p in question.probes if again or p not in self.asked]
        self.asked.update(due)
        return due

    @property
    def wants_launch_command(self) -> bool:
        """The current question reads a probe that estimates the launch command."""
        from trainmedic.probes.registry import launch_command_readers

        question = self.question
        return question is not None and bool(launch_command_readers(question.probes))

    def set_launch_command(self, text: str) -> None:
        """A new launch command: the probes that read it are due again."""
        from trainmedic.probes.registry import launch_command_readers

        self.launch_command = text.strip()
        self.asked.difference_update(launch_command_readers(self.asked))
        self._touch()

    def run_due_probes(self, runner: ProbeRunner | None, *, again: bool = False) -> list[str]:
        """Run the due probes now and attach their results (the blocking front ends' way; the
        app runs `take_due_probes()` in a worker). A broken probe never ends a walk."""
        due = self.take_due_probes(again=again) if runner is not None else []
        if due and runner is not None:
            # a failing runner means "no suggestion", never a dead walk
            with contextlib.suppress(Exception):
                self.attach_probes(runner(due, self.probe_context()))
        return due

    def attach_probes(self, results: Iterable[ProbeResult]) -> None:
        """Keep the latest result of each probe (by name)."""
        latest = {p.name: p for p in self.probes}
        for r in results:
            latest[r.name] = r
        self.probes = list(latest.values())
        self._touch()

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

    def answer_typed(self, number: int, step: int) -> Ref:
        """Choose the 1-based answer a person typed at `step` of a scripted walk (`--answers`,
        the API); UsageError when the walk is already at a fix or the number is out of range."""
        question = self.question
        if question is None:
            raise UsageError(f"step {step}: answer {number} given, but the walk already reached "
                             f"the fix {self.current}")
        if not 1 <= number <= len(question.answers):
            raise UsageError(f"step {step} ({self.current}): answer {number} is out of range "
                             f"(1-{len(question.answers)})")
        return self.answer(number - 1)

    def answer(self, index: int, *, suggested: int | None = None,
               evidence: list[str] | None = None, implied: bool = False) -> Ref:
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
            suggested=suggested, evidence=list(evidence or []), time=now_iso(),
            implied=implied))
        self.current = ref
        self._before_restart = None
        self._touch()
        return ref

    @property
    def can_undo_restart(self) -> bool:
        return self._before_restart is not None and not self.steps

    def back(self) -> bool:
        """Undo the last answer (crossing back over a tree link), or the restart just made;
        False at the first node."""
        if self.can_undo_restart:
            assert self._before_restart is not None
            self.steps, self.stack, self.current = self._before_restart
            self._before_restart = None
            self._touch()
            return True
        if not self.steps:
            return False
        step = self.steps.pop()
        came_from = self.forest.parse_ref(step.node)
        if came_from.tree != self.current.tree and self.stack and self.stack[-1] == step.node:
            self.stack.pop()
        self.current = came_from
        self._touch()
        return True

    def did_not_help(self) -> bool:
        """"This did not help": the fix is recorded as tried (for the report and the answer
        list), then the walk goes back to the question that led to it. False if not at a fix
        or with no question to go back to."""
        fix = self.fix
        if fix is None or not self.steps:
            return False
        last = self.steps[-1]
        self.tried.append(TriedFix(str(self.current), str(fix.fix), last.node, last.answer,
                                   now_iso()))
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
        """Back to where this walk began, forgetting every answer (probes/triage are kept);
        `back` undoes it until the next answer."""
        if self.steps:
            self._before_restart = (list(self.steps), list(self.stack), self.current)
        self.steps = []
        self.stack = []
        self.current = self.origin
        self._touch()

    def _touch(self) -> None:
        self.updated = now_iso()

    # -- saving -------------------------------------------------------------------------------
    def record(self) -> WalkRecord:
        """The walk as it is saved (and reported)."""
        return WalkRecord(
            id=self.id, tree=self.tree, current=str(self.current), started=self.started,
            updated=self.updated, finished=self.finished, steps=list(self.steps),
            stack=list(self.stack), probes=list(self.probes), triage=self.triage,
            launch_command=self.launch_command, notes=self.notes, tried=list(self.tried))

    def to_dict(self) -> dict[str, Any]:
        return self.record().to_dict()

    @classmethod
    def from_record(cls, forest: Forest, record: WalkRecord) -> WalkSession:
        """Resume a saved walk; UsageError (naming the walk) when it no longer fits the trees."""

        def bad(why: str) -> UsageError:
            return UsageError(f"saved walk {record.id}: {why}")

        if record.problems:
            raise bad(record.problems[0])

        def ref(text: str) -> Ref:
            try:
                return forest.parse_ref(text)
            except UsageError as exc:
                raise bad(f"{exc} (the trees changed since it was saved)") from None

        current = ref(record.current)
        steps = record.steps
        session = cls(forest, ref(steps[0].node) if steps else current, walk_id=record.id)
        session.tree = record.tree or session.origin.tree
        for i, step in enumerate(steps):
            node = forest.node(ref(step.node))
            if not isinstance(node, Question) or not 0 <= step.answer < len(node.answers):
                raise bad(f"step {i + 1} ({step.node}) no longer fits the trees")
            ref(step.goto)
        session.steps = list(steps)
        session.current = current
        session.stack = [str(ref(s)) for s in record.stack]
        session.started = record.started or session.started
        session.updated = record.updated or session.updated
        session.probes = list(record.probes)
        session.triage = record.triage
        session.launch_command = record.launch_command
        session.notes = record.notes
        session.tried = list(record.tried)
        return session

    @classmethod
    def from_dict(cls, forest: Forest, data: Mapping[str, Any]) -> WalkSession:
        return cls.from_record(forest, WalkRecord.from_dict(data))


Saver = Callable[[WalkRecord], object]


def resume(forest: Forest, record: WalkRecord) -> tuple[WalkSession, str]:
    """Continue a saved walk. When another trainmedic process is saving it (two `--resume` of
    one walk), this one continues as a copy under a new id, so neither overwrites the other's
    steps; the second value then says so (else it is empty)."""
    from trainmedic.saved_walks import claim_walk

    session = WalkSession.from_record(forest, record)
    if claim_walk(record.id):
        return session, ""
    session.id = new_walk_id(session.tree)
    return session, (f"walk {record.id} is open in another trainmedic; continuing as a copy, "
                     f"{session.id} (the other keeps {record.id})")
