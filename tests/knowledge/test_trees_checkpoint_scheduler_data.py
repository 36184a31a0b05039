"""The checkpoint, scheduler and data-pipeline trees (issue 14): substance, quality, corpus ids.

The real incident corpus names the node each case should reach (`# expect: TREE#NODE`); the
ids of these three trees must exist so triage can route there. Only the `expect:` header line
of a case is read here, never its excerpt (holdout cases stay unseen).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from trainmedic.trees import Fix, Question, load_forest

TREES = {"checkpoint": (4, 12), "scheduler": (2, 10), "data-pipeline": (2, 10)}
CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "cases"
# Flags that belong to one framework and must not be pasted into another's launch command.
FOREIGN = {"--universal-checkpoint": "Megatron-DeepSpeed", "--exit-signal-handler": "Megatron-LM"}


@pytest.fixture(scope="module")
def forest():
    return load_forest()


@pytest.mark.parametrize("tree_id", sorted(TREES))
def test_tree_has_substance(forest, tree_id):
    questions, fixes = forest.counts(tree_id)
    want_q, want_f = TREES[tree_id]
    assert questions >= want_q and fixes >= want_f, (tree_id, questions, fixes)


@pytest.mark.parametrize("tree_id", sorted(TREES))
def test_fixes_are_complete(forest, tree_id):
    for node_id, node in forest.trees[tree_id].nodes.items():
        if not isinstance(node, Fix):
            continue
        where = f"{tree_id}#{node_id}"
        assert 2 <= len(node.steps) <= 6, f"{where}: {len(node.steps)} steps"
        assert sum(1 for step in node.steps if step.code) >= 2, f"{where}: fewer than 2 commands"
        assert len(str(node.why)) >= 200, f"{where}: 'why' too short to give a mechanism"
        assert str(node.verify).strip(), f"{where}: no verify"


@pytest.mark.parametrize("tree_id", sorted(TREES))
def test_questions_are_answerable(forest, tree_id):
    for node_id, node in forest.trees[tree_id].nodes.items():
        if isinstance(node, Question):
            assert 2 <= len(node.answers) <= 9, f"{tree_id}#{node_id}"
            assert str(node.help).strip(), f"{tree_id}#{node_id}: no help"


def expected_nodes(area: str) -> list[tuple[str, str]]:
    found = []
    for case in sorted((CORPUS / area).glob("*.log")):
        for line in case.read_text(errors="replace").splitlines():
            if line.startswith("# expect:"):
                found.append((case.name, line.split(":", 1)[1].strip()))
                break
            if line.startswith("# ---"):
                break
    return found


@pytest.mark.parametrize("area", sorted(TREES))
def test_corpus_expectations_name_existing_nodes(forest, area):
    cases = expected_nodes(area)
    assert len(cases) >= 8, f"{area}: only {len(cases)} corpus cases"
    for name, expect in cases:
        tree_id, _, node_id = expect.partition("#")
        assert tree_id == area, f"{name}: {expect}"
        if node_id != "?":
            assert node_id in forest.trees[tree_id].nodes, f"{name}: {expect} has no node"


def test_every_corpus_node_of_these_trees_is_reachable_from_its_start(forest):
    import networkx as nx

    from trainmedic.trees.lint import build_graph

    graph = build_graph(forest)
    for area in TREES:
        start = f"{area}#{forest.trees[area].start}"
        reached = nx.descendants(graph, start) | {start}  # a label may be the start question
        for name, expect in expected_nodes(area):
            if not expect.endswith("#?"):
                assert expect in reached, f"{name}: {expect} not reachable from the start"


def test_framework_specific_flags_say_which_framework(forest):
    for tree_id in TREES:
        for node_id, node in forest.trees[tree_id].nodes.items():
            if not isinstance(node, Fix):
                continue
            for step in node.steps:
                for flag, framework in FOREIGN.items():
                    if step.code and re.search(rf"{re.escape(flag)}\b", str(step.code)):
                        assert framework in str(step.do), f"{tree_id}#{node_id}: {flag}"



def test_a_small_dev_shm_suggests_the_dataloader_shared_memory_fix(forest):
    from trainmedic.trees.rules import suggest

    question = forest.trees["data-pipeline"].nodes["symptom"]
    assert isinstance(question, Question)
    index, _lines = suggest(question, {"shm.small": True})
    assert index is not None and question.answers[index].goto == "shm-exhausted"
    assert suggest(question, {"shm.small": False})[0] is None
