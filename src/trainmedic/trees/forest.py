"""All loaded trees together: where the built-ins live, user folders, and link resolution.

Loading does not import networkx; only lint (which needs the graph) pays for it, so the TUI and
the walk start fast.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from trainmedic.errors import UsageError
from trainmedic.trees.cache import load_cached
from trainmedic.trees.model import Fix, LogSignature, Node, Question, Tree
from trainmedic.trees.paths import TREE_SUFFIXES, builtin_tree_dir, tree_files
from trainmedic.trees.problems import Problem

__all__ = ["TREE_SUFFIXES", "Forest", "Ref", "builtin_tree_dir", "load_forest",
           "load_forest_or_fail", "load_forest_skipping", "tree_files"]



def shown_path(path: Path) -> str:
    """A path as people want to read it: relative to the working directory when inside it."""
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return str(path)
    return rel if not rel.startswith("..") else str(path)


@dataclass(frozen=True)
class Ref:
    """A resolved pointer to one node of one tree."""

    tree: str
    node: str

    def __str__(self) -> str:
        return f"{self.tree}#{self.node}"


@dataclass
class Forest:
    trees: dict[str, Tree] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    # file stems of tree files that could not be loaded: links to them are not reported again
    unloaded: set[str] = field(default_factory=set)
    # built-in trees that a user tree of the same id replaced: their log signatures carry over
    replaced: dict[str, Tree] = field(default_factory=dict)

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    def tree(self, tree_id: str) -> Tree:
        try:
            return self.trees[tree_id]
        except KeyError:
            known = ", ".join(sorted(self.trees)) or "none"
            raise UsageError(f"no tree '{tree_id}' (trees: {known})") from None

    def node(self, ref: Ref) -> Node:
        return self.trees[ref.tree].nodes[ref.node]

    def resolve(self, from_tree: str, goto: str) -> Ref | None:
        """`node` in the same tree first, then `tree-id` (its start), then `tree-id#node`."""
        if "#" in goto:
            tree_id, node_id = goto.split("#", 1)
            tree = self.trees.get(tree_id)
            return Ref(tree_id, node_id) if tree and node_id in tree.nodes else None
        own = self.trees.get(from_tree)
        if own and goto in own.nodes:
            return Ref(from_tree, goto)
        other = self.trees.get(goto)
        if other and other.start in other.nodes:
            return Ref(goto, other.start)
        return None

    def parse_ref(self, text: str) -> Ref:
        """`tree` or `tree#node` typed by a user, checked."""
        tree_id, _, node_id = text.partition("#")
        tree = self.tree(tree_id)
        node_id = node_id or tree.start
        if node_id not in tree.nodes:
            raise UsageError(f"tree '{tree_id}' has no node '{node_id}'")
        return Ref(tree_id, node_id)

    def start(self, tree_id: str) -> Ref:
        return self.parse_ref(tree_id)

    def iter_nodes(self) -> Iterator[tuple[Ref, Node]]:
        for tree in self.trees.values():
            for node_id, node in tree.nodes.items():
                yield Ref(tree.id, node_id), node

    def signatures(self) -> list[LogSignature]:
        """Every log signature triage uses, in file order.

        A user tree that replaces a built-in keeps the built-in's signatures (triage must not go
        blind on OOMs because someone reworded a fix), except those whose id a loaded tree
        declares again. That is the only override: a user signature with the id of one in a
        built-in tree it does not replace is kept beside it, and lint reports the id as
        "declared twice". Lint checks that the nodes they lead to still exist.
        """
        own = [sig for tree in self.trees.values() for sig in tree.signatures()]
        declared = {sig.id for sig in own}
        inherited = [sig for tree in self.replaced.values() for sig in tree.signatures()
                     if sig.id not in declared]
        return own + inherited

    def counts(self, tree_id: str) -> tuple[int, int]:
        tree = self.trees[tree_id]
        return (sum(isinstance(n, Question) for n in tree.nodes.values()),
                sum(isinstance(n, Fix) for n in tree.nodes.values()))


@contextmanager
def gc_paused() -> Iterator[None]:
    """Loading allocates many small acyclic objects; the cyclic collector would rescan the
    growing heap again and again, making large forests load in superlinear time."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def load_files(files: Iterable[Path]) -> Forest:
    """Load the given tree files; duplicates of a tree id are problems, the first one wins."""
    with gc_paused():
        return _load_files(files)


def _load_files(files: Iterable[Path]) -> Forest:
    forest = Forest()
    seen: set[Path] = set()
    for path in files:
        real = path.resolve()
        if real in seen:  # `lint mine/oom.yaml --trees mine/` names the file twice: one tree
            continue
        seen.add(real)
        shown = shown_path(path)
        tree, problems = load_cached(path, shown)
        forest.problems.extend(problems)
        if tree is None:
            forest.unloaded.add(path.stem)
            continue
        if tree.id in forest.trees:
            first = forest.trees[tree.id].src
            forest.problems.append(Problem(shown, tree.src.line, "error",
                                           f"duplicate tree id '{tree.id}' (also at {first})"))
            continue
        forest.trees[tree.id] = tree
    return forest


def load_forest(extra: Iterable[str | Path] = (), *, builtin: bool = True) -> Forest:
    """Built-in trees plus user folders/files; a user tree replaces a built-in of the same id."""
    user = load_files(tree_files(Path(p) for p in extra))
    if not builtin:
        return user
    return _with_builtins(user)


def _with_builtins(user: Forest) -> Forest:
    base = load_files(tree_files([builtin_tree_dir()]))
    base.unloaded |= user.unloaded
    for tree_id, tree in user.trees.items():
        if tree_id in base.trees and base.trees[tree_id].file != tree.file:
            base.replaced[tree_id] = base.trees[tree_id]
        base.trees[tree_id] = tree
    base.problems = [p for p in base.problems if not _shadowed(p, user)] + user.problems
    return base


def _shadowed(problem: Problem, user: Forest) -> bool:
    return any(problem.file == t.file for t in user.trees.values())


def load_forest_skipping(extra: Iterable[str | Path] = ()) -> tuple[Forest, list[str]]:
    """For the app and the walk, during an incident: the built-in trees plus every user file
    that loads without an error; each broken user file is left out with a one-line warning
    (`trainmedic lint` still fails on it). Errors in the built-in trees still refuse."""
    user = load_files(tree_files(Path(p) for p in extra))
    broken: dict[str, Problem] = {}
    for problem in user.errors:
        broken.setdefault(problem.file, problem)
    kept = Forest(
        trees={i: t for i, t in user.trees.items() if t.file not in broken},
        problems=[p for p in user.problems if p.file not in broken],
        unloaded=user.unloaded | {t.id for t in user.trees.values() if t.file in broken},
    )
    warnings = [f"skipped the tree file {first.file}: line {first.line}: {first.message}"
                + (f" (and {n - 1} more; run `trainmedic lint {first.file}`)"
                   if (n := sum(p.file == first.file for p in user.errors)) > 1 else "")
                for first in broken.values()]
    return _refuse_errors(_with_builtins(kept)), warnings


def _refuse_errors(forest: Forest) -> Forest:
    """`forest`, or a one-line UsageError naming its first error."""
    errors = forest.errors
    if errors:
        more = f" (and {len(errors) - 1} more; run `trainmedic lint`)" if len(errors) > 1 else ""
        raise UsageError(f"{errors[0]}{more}")
    return forest


def load_forest_or_fail(extra: Iterable[str | Path] = ()) -> Forest:
    """For commands that export: refuse a forest with errors, naming the first."""
    return _refuse_errors(load_forest(extra))
