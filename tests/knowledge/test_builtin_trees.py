"""The built-in forest: ten trees that load, lint clean, hold the contract anchors, aren't stubs."""

from __future__ import annotations

import pytest

from trainmedic.probes.registry import declared_facts
from trainmedic.trees import Fix, Question, load_forest
from trainmedic.trees.lint import lint_forest

TREE_IDS = (
    "triage",
    "oom",
    "nccl-hang",
    "multi-node",
    "loss-spike",
    "convergence",
    "startup",
    "slow-training",
    "hardware",
    "preflight",
    "checkpoint",
    "scheduler",
    "compile",
    "sharding",
    "moe",
    "containers",
    "data-pipeline",
)

# contracts §4: node ids other pieces (log triage, other trees) link to, with the kind they must
# have ("fix", "question" or "any" where the contract allows either).
ANCHORS = {
    "oom": {
        "fragmentation": "fix",
        "other-process": "fix",
        "first-iteration": "any",
        "memory-leak": "fix",
    },
    "nccl-hang": {
        "watchdog-timeout": "question",
        "rank-behind": "fix",
        "collective-mismatch": "fix",
        "nccl-error": "question",
    },
    "multi-node": {
        "rendezvous": "question",
        "address-in-use": "fix",
        "network-interface": "fix",
        "infiniband": "any",
    },
    "loss-spike": {
        "nan-loss": "question",
        "loss-scale-collapse": "fix",
        "spike-recovery": "fix",
        "grad-norm-explosion": "fix",
    },
    "startup": {
        "divisibility": "fix",
        "fused-kernels": "fix",
        "flash-attn": "fix",
        "transformer-engine": "fix",
        "import-error": "question",
        "device-assert": "fix",
        "batch-size": "fix",
    },
    "hardware": {"xid": "question", "ecc": "fix", "fallen-off-bus": "fix", "throttling": "fix"},
}

# (questions, fixes) at least: a real tree, not a stub. The bigger seed scopes need more fixes.
MINIMUMS = {
    "triage": (2, 2),
    "oom": (5, 20),
    "nccl-hang": (2, 8),
    "multi-node": (2, 8),
    "loss-spike": (1, 6),
    "convergence": (1, 5),
    "startup": (2, 12),
    "slow-training": (3, 10),
    "hardware": (1, 6),
    "preflight": (2, 8),
    "checkpoint": (3, 10),
    "scheduler": (2, 8),
    "compile": (2, 8),
    "sharding": (2, 8),
    "moe": (2, 8),
    "containers": (2, 8),
    "data-pipeline": (2, 8),
}

MINE = ("triage", "oom", "startup", "slow-training", "preflight")


@pytest.fixture(scope="module")
def forest():
    return load_forest()


def test_every_tree_is_built_in(forest):
    missing = [tid for tid in TREE_IDS if tid not in forest.trees]
    assert missing == []


def test_forest_lints_without_errors(forest):
    errors = [str(p) for p in lint_forest(forest, declared_facts()) if p.severity == "error"]
    assert errors == []


@pytest.mark.parametrize("tree_id", sorted(ANCHORS))
def test_contract_anchor_nodes_exist(forest, tree_id):
    tree = forest.trees[tree_id]
    for node_id, kind in ANCHORS[tree_id].items():
        assert node_id in tree.nodes, f"{tree_id}#{node_id} missing"
        node = tree.nodes[node_id]
        if kind == "fix":
            assert isinstance(node, Fix), f"{tree_id}#{node_id} must be a fix"
        elif kind == "question":
            assert isinstance(node, Question), f"{tree_id}#{node_id} must be a question"


@pytest.mark.parametrize("tree_id", TREE_IDS)
def test_tree_has_substance(forest, tree_id):
    questions, fixes = forest.counts(tree_id)
    want_q, want_f = MINIMUMS[tree_id]
    assert questions >= want_q, f"{tree_id}: {questions} questions"
    assert fixes >= want_f, f"{tree_id}: {fixes} fixes"


def test_triage_reaches_every_other_tree(forest):
    import networkx as nx

    from trainmedic.trees.lint import build_graph

    graph = build_graph(forest)
    reached = {name.split("#", 1)[0] for name in nx.descendants(graph, "triage#what")}
    assert set(TREE_IDS) - {"triage"} <= reached


@pytest.mark.parametrize("tree_id", MINE)
def test_fixes_are_complete(forest, tree_id):
    """Quality bar of issue 3: 2-6 steps with something to paste, a mechanism and a check."""
    for node_id, node in forest.trees[tree_id].nodes.items():
        if not isinstance(node, Fix):
            continue
        where = f"{tree_id}#{node_id}"
        assert 2 <= len(node.steps) <= 6, f"{where}: {len(node.steps)} steps"
        assert any(step.code for step in node.steps), f"{where}: no code"
        assert len(str(node.why)) >= 80, f"{where}: 'why' too short to give a mechanism"
        assert str(node.verify).strip(), f"{where}: no verify"


@pytest.mark.parametrize("tree_id", MINE)
def test_questions_are_answerable(forest, tree_id):
    for node_id, node in forest.trees[tree_id].nodes.items():
        if isinstance(node, Question):
            assert 2 <= len(node.answers) <= 9, f"{tree_id}#{node_id}"
            assert str(node.help).strip(), f"{tree_id}#{node_id}: no help on how to find the answer"
