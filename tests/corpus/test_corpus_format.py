"""The corpus format: every case names its source first, its expected node and its split; an
expected node exists in the loaded trees or is listed as proposed; pending cases are counted."""

from __future__ import annotations

import sys
import warnings
from collections import Counter
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import (
    BATCHES,
    OPENED,
    format_problems,
    load_cases,
    pending,
    proposed_nodes,
    read_case,
    second_labels,
)

CASES = load_cases()


@pytest.fixture(scope="module")
def trees() -> dict[str, set[str]]:
    from trainmedic.trees.forest import load_forest

    return {tid: set(t.nodes) for tid, t in load_forest().trees.items()}


def test_the_corpus_is_there():
    assert len(CASES) >= 200
    first = [c for c in CASES if c.batch == "1"]  # later batches are held out whole
    splits = Counter(c.split for c in first)
    assert splits["holdout"] >= len(first) // 5 and splits["tune"] >= len(first) // 2
    assert sum(c.batch == "2" for c in CASES) >= 100
    assert sum(c.healthy for c in CASES) >= 10


def test_a_bad_header_is_named(tmp_path):
    path = tmp_path / "oom" / "x.log"
    path.parent.mkdir()
    blind = next(b for b in BATCHES if b not in ("1", *OPENED))
    path.write_text("# source: https://example.org/t/1\n# expect: oom#when\n# split: tune\n"
                    f"# batch: {blind}\n# reported: froze\n# ---\nCUDA out of memory\n",
                    encoding="utf-8")
    problems = format_problems(read_case(path))
    assert "a later batch is held out: split must be holdout" in problems
    assert any(p.startswith("reported must be one of hang, crash") for p in problems), problems


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_case_format(case):
    assert format_problems(case) == []
    assert case.area == (case.tree or "healthy"), "a case lives in its expected tree's folder"


def test_expected_nodes_exist_or_are_proposed(trees):
    proposed = proposed_nodes()
    proposed_trees = {p.partition("#")[0] for p in proposed}
    unknown = []
    for case in CASES:
        if case.healthy:
            continue
        if case.tree in trees:
            if case.node is not None and case.node not in trees[case.tree] \
                    and case.expect not in proposed:
                unknown.append(f"{case.name}: {case.expect}")
        elif case.tree not in proposed_trees:
            unknown.append(f"{case.name}: tree {case.tree} is neither loaded nor proposed")
        elif case.node is not None and case.expect not in proposed:
            unknown.append(f"{case.name}: {case.expect} is not in a proposed_nodes file")
    assert unknown == []


def test_second_labels_name_incidents_and_nodes_that_exist(trees):
    incidents = {case.name for case in CASES if not case.healthy}
    second = second_labels()
    assert len(second) >= 80
    wrong = [f"{name}: {label}" for name, label in second.items()
             if name not in incidents or label.partition("#")[0] not in trees
             or label.partition("#")[2] not in (trees.get(label.partition("#")[0], set()) | {"?"})]
    assert wrong == []


def test_pending_cases_are_reported_not_dropped(trees):
    waiting = pending(CASES, trees)
    by_tree = Counter(c.tree for c in waiting)
    if waiting:
        warnings.warn("corpus cases waiting for their tree: "
                      + ", ".join(f"{t} {n}" for t, n in sorted(by_tree.items())), stacklevel=1)
    scored = [c for c in CASES if c.healthy or c.tree in trees]
    assert len(scored) + len(waiting) == len(CASES)
