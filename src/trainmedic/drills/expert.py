"""The expert path: the trees' own shortest route from the entry question to the expected node.

Read from the forest graph (every answer is an edge to the node it leads to, across trees), so it
follows the trees as they are today: a tree that gains a shortcut shortens the path without
anyone editing a drill. Breadth first over a few hundred nodes: no graph library needed.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any

from trainmedic.trees import Forest, Question, Ref

ENTRY = "triage"


@dataclass(frozen=True)
class ExpertStep:
    """One answer on the expert path: at `node`, answer `answer` (0-based) leads to `goto`."""

    node: str
    question: str
    answer: int
    answer_text: str
    goto: str

    def to_dict(self) -> dict[str, Any]:
        return {"node": self.node, "question": self.question, "answer": self.answer,
                "answer_text": self.answer_text, "goto": self.goto}


def _edges(forest: Forest, ref: Ref) -> list[tuple[int, Ref]]:
    node = forest.node(ref)
    if not isinstance(node, Question):
        return []
    out = []
    for i, answer in enumerate(node.answers):
        target = forest.resolve(ref.tree, answer.goto)
        if target is not None:
            out.append((i, target))
    return out


def expert_path(forest: Forest, target: Ref, *, entry: str = ENTRY) -> list[ExpertStep] | None:
    """The fewest answers from `entry`'s first question to `target`; [] when `target` is the
    entry itself, None when it cannot be reached from there.

    Among routes of equal length, the one that enters the target's tree first wins ("the loss
    became NaN" over "a process died, with a NaN check"), then the lower answer numbers.
    """
    start = forest.start(entry)
    depth: dict[Ref, int] = {start: 0}
    before: dict[Ref, list[tuple[Ref, int]]] = {start: []}  # every way in at the least depth
    queue = deque([start])
    while queue:
        ref = queue.popleft()
        if ref == target:
            continue  # nothing beyond it is needed
        for index, nxt in _edges(forest, ref):
            if nxt not in depth:
                depth[nxt] = depth[ref] + 1
                before[nxt] = [(ref, index)]
                queue.append(nxt)
            elif depth[nxt] == depth[ref] + 1:
                before[nxt].append((ref, index))
    if target not in depth:
        return None
    steps: list[ExpertStep] = []
    ref = target
    while before[ref]:
        parent, index = min(before[ref], key=lambda way: (way[0].tree != target.tree,
                                                          depth[way[0]], str(way[0]), way[1]))
        question = forest.node(parent)
        assert isinstance(question, Question)
        steps.append(ExpertStep(str(parent), str(question.question), index,
                                str(question.answers[index].text), str(ref)))
        ref = parent
    steps.reverse()
    return steps
