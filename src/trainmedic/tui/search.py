"""Search across every node of every tree: one index shared by browse and the command palette."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from typing import TYPE_CHECKING, cast

from textual.command import Hit, Hits, Provider

from trainmedic.trees import Fix, Forest, Ref

if TYPE_CHECKING:
    from trainmedic.tui.app import TrainmedicApp


def node_label(forest: Forest, ref: Ref) -> str:
    node = forest.node(ref)
    return str(node.fix) if isinstance(node, Fix) else str(node.question)


def search_text(forest: Forest, ref: Ref) -> str:
    """Everything a search may match on: ids, tree title, question/fix text and answers."""
    node = forest.node(ref)
    tree = forest.trees[ref.tree]
    parts = [ref.tree, ref.node, str(tree.title), node_label(forest, ref)]
    if isinstance(node, Fix):
        parts.append(str(node.why))
    else:
        parts.extend(str(a.text) for a in node.answers)
    return " ".join(parts).lower()


def search_nodes(forest: Forest, query: str) -> Iterator[Ref]:
    """Nodes whose text holds every word of `query` (case-insensitive), in forest order."""
    words = query.lower().split()
    for ref, _node in forest.iter_nodes():
        text = search_text(forest, ref)
        if all(w in text for w in words):
            yield ref


class NodeSearchProvider(Provider):
    """Command palette: jump to any question or fix of any tree (opened read-only in browse)."""

    async def search(self, query: str) -> Hits:
        app = cast("TrainmedicApp", self.app)  # this provider is registered by TrainmedicApp
        forest: Forest = app.forest
        matcher = self.matcher(query)
        for ref, node in forest.iter_nodes():
            kind = "fix" if isinstance(node, Fix) else "question"
            text = f"{ref.tree}: {node_label(forest, ref)}"
            score = matcher.match(text)
            if score > 0:
                yield Hit(score, matcher.highlight(text),
                          partial(app.open_browse, ref),
                          text=text, help=f"{kind} {ref} — open in browse")
