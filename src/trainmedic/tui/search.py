"""Search across every node of every tree: one index shared by home, browse and the palette.

Engineers search by the string they hold: an environment variable (`expandable_segments`), a
flag (`recompute-granularity`), a tool (`py-spy`), an error message. So a node's text is all of
it: question, how-to-check, answers and why they are suggested; a fix's why, steps, commands,
verify, myth and references.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from typing import TYPE_CHECKING, cast

from textual.command import Hit, Hits, Provider

from trainmedic.trees import Fix, Forest, Ref

if TYPE_CHECKING:
    from trainmedic.tui.app import TrainmedicApp

# The index of the forest searched last (an app has one forest; a new one replaces it).
_INDEX: list[tuple[Forest, list[tuple[Ref, str, str]]]] = []


def node_label(forest: Forest, ref: Ref) -> str:
    node = forest.node(ref)
    return str(node.fix) if isinstance(node, Fix) else str(node.question)


def tree_order(forest: Forest) -> list[str]:
    """Tree ids as home lists them: the entry tree first, then the forest's order."""
    return sorted(forest.trees, key=lambda tree_id: tree_id != "triage")


def search_text(forest: Forest, ref: Ref) -> str:
    """Everything a search may match on, lower-cased."""
    node = forest.node(ref)
    tree = forest.trees[ref.tree]
    parts = [ref.tree, ref.node, str(tree.title), node_label(forest, ref)]
    if isinstance(node, Fix):
        parts += [str(node.why), str(node.verify or ""), str(node.myth or "")]
        for step in node.steps:
            parts += [str(step.do), step.code or ""]
        parts += [f"{r.title} {r.url or ''}" for r in node.refs]
    else:
        parts.append(str(node.help or ""))
        for answer in node.answers:
            parts += [str(answer.text), str(answer.because or "")]
    return " ".join(parts).lower()


def _index(forest: Forest) -> list[tuple[Ref, str, str]]:
    """(ref, label, text) of every node, built once per forest."""
    if not _INDEX or _INDEX[0][0] is not forest:
        rows = [(ref, node_label(forest, ref), search_text(forest, ref))
                for ref, _node in forest.iter_nodes()]
        _INDEX[:] = [(forest, rows)]
    return _INDEX[0][1]


def search_nodes(forest: Forest, query: str) -> Iterator[Ref]:
    """Nodes whose text holds every word of `query` (case-insensitive), trees in home order."""
    words = query.lower().split()
    order = {tree_id: i for i, tree_id in enumerate(tree_order(forest))}
    rows = sorted(_index(forest), key=lambda row: order.get(row[0].tree, 0))
    for ref, _label, text in rows:
        if all(w in text for w in words):
            yield ref


def snippet(text: str, word: str, width: int = 60) -> str:
    """The part of `text` around `word`, for a hit found in a command rather than a title."""
    at = text.find(word)
    if at < 0:
        return ""
    start = max(0, at - width // 3)
    part = " ".join(text[start:start + width].split())
    return ("…" if start else "") + part + "…"


class NodeSearchProvider(Provider):
    """Command palette: jump to any question or fix of any tree; it opens as a walk there."""

    async def search(self, query: str) -> Hits:
        app = cast("TrainmedicApp", self.app)  # this provider is registered by TrainmedicApp
        forest: Forest = app.forest
        matcher = self.matcher(query)
        words = query.lower().split()
        for ref, label, text in _index(forest):
            kind = "fix" if isinstance(forest.node(ref), Fix) else "question"
            shown = f"{ref.tree}: {label}"
            score = matcher.match(shown)
            where = ""
            if score <= 0 and words and all(w in text for w in words):
                score, where = 0.1, snippet(text, words[0])  # in a command, a flag, a step
            if score > 0:
                yield Hit(score, matcher.highlight(shown), partial(app.open_walk, ref),
                          text=shown, help=f"{kind} {ref}: open a walk there"
                          + (f"  {where}" if where else ""))
