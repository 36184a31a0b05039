"""What the home screen lists for each tree, cached so the first frame never waits on YAML.

Parsing every tree costs more than Textual's own start-up, and the home screen needs only each
tree's id, title, summary, tags and counts. Those are kept in a small JSON file keyed by the
path, mtime and size of every tree file; while the files are unchanged the app paints from it
and loads the full forest on first use. Any change to a tree file means a normal, validated load.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any, NamedTuple

from trainmedic import __version__
from trainmedic.state import home_cards_path
from trainmedic.trees.paths import TREE_SUFFIXES, builtin_tree_dir

if TYPE_CHECKING:
    from trainmedic.trees import Forest


class TreeCard(NamedTuple):
    id: str
    title: str
    summary: str
    tags: list[str]
    questions: int
    fixes: int


def cards_from_forest(forest: Forest) -> list[TreeCard]:
    cards = []
    for tree_id, tree in forest.trees.items():
        questions, fixes = forest.counts(tree_id)
        cards.append(TreeCard(tree_id, str(tree.title), " ".join(str(tree.summary).split()),
                              [str(t) for t in tree.tags], questions, fixes))
    return cards


def _stats(path: str, out: list[Any]) -> None:
    """(path, mtime, size) of every tree file under `path`, recursively, in a stable order."""
    try:
        entries = sorted(os.scandir(path), key=lambda e: e.name)
    except NotADirectoryError:
        st = os.stat(path)
        out.append([os.path.abspath(path), st.st_mtime_ns, st.st_size])
        return
    for entry in entries:
        if entry.is_dir():
            _stats(entry.path, out)
        elif entry.name.endswith(TREE_SUFFIXES) and entry.is_file():
            st = entry.stat()
            out.append([os.path.abspath(entry.path), st.st_mtime_ns, st.st_size])


def files_key(extra: list[str]) -> list[Any] | None:
    """Version plus (path, mtime, size) of every tree file; None if a named path is missing."""
    key: list[Any] = [__version__]
    try:
        builtin = builtin_tree_dir()
        if builtin.is_dir():
            _stats(str(builtin), key)
        for folder in extra:
            _stats(str(folder), key)
    except OSError:
        return None
    return key


def cached_cards(extra: list[str]) -> list[TreeCard] | None:
    """The cards saved for exactly these tree files, or None (then load and validate)."""
    try:
        key = files_key(extra)
        data = json.loads(home_cards_path().read_text(encoding="utf-8"))
        if key is None or data.get("key") != key:
            return None
        return [TreeCard(**card) for card in data["cards"]]
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None


def remember_cards(key: list[Any] | None, forest: Forest) -> list[TreeCard]:
    """Save the cards of a forest that loaded without errors, under the key taken *before*
    loading (a file edited meanwhile then misses next time); a failing disk is ignored."""
    cards = cards_from_forest(forest)
    if key is not None:
        try:
            from trainmedic.state import write_json_atomic

            write_json_atomic(home_cards_path(),
                              {"key": key, "cards": [c._asdict() for c in cards]})
        except OSError:
            pass
    return cards
