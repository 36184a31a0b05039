"""The sharding and moe trees, and the issue-14 item-8 nodes added to five existing trees.

Each corpus case under tests/corpus/cases/{sharding,moe} names the node it expects in its
`expect:` header; those nodes must exist and be fixes (`TREE#?`, "the node is not certain",
aside). The knowledge checks below pin the facts that were verified upstream and are easy to
lose in an edit (a flag that does not exist, a version boundary, an exit code).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from trainmedic.trees import Fix, Question, load_forest

CASES = Path(__file__).resolve().parents[1] / "corpus" / "cases"
NEW_TREES = ("sharding", "moe")

# nodes item 8 of issue 14 added to existing trees (tree, node, kind)
ITEM8_NODES = [
    ("loss-spike", "rerun-exit", Fix),
    ("loss-spike", "instability-source", Question),
    ("loss-spike", "qk-norm", Fix),
    ("loss-spike", "z-loss", Fix),
    ("loss-spike", "adam-beta2-eps", Fix),
    ("loss-spike", "embedding-stability", Fix),
    ("convergence", "same-run-differs", Question),
    ("convergence", "grad-accum-loss", Fix),
    ("convergence", "determinism", Fix),
    ("nccl-hang", "parallel-exchange", Question),
    ("nccl-hang", "pipeline-schedule", Fix),
    ("hardware", "slow-gpu", Question),
    ("hardware", "suspect-node", Question),
    ("hardware", "pcie-link", Fix),
    ("slow-training", "host-binding", Fix),
    ("slow-training", "cuda-graphs", Fix),
]

# at least (questions, fixes)
MINIMUMS = {"sharding": (3, 10), "moe": (2, 9)}


@pytest.fixture(scope="module")
def forest():
    return load_forest()


def _expect(path: Path) -> str:
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("# expect:"):
            return line.split(":", 1)[1].strip()
        if line.startswith("# ---"):
            break
    raise AssertionError(f"{path.name}: no expect line")


def _cases(area: str) -> list[Path]:
    return sorted((CASES / area).glob("*.log"))


def _fixes(forest, tree_id):
    return [n for n in forest.trees[tree_id].nodes.values() if isinstance(n, Fix)]


def _code(fix: Fix) -> str:
    return "\n".join(step.code or "" for step in fix.steps)


def _text(fix: Fix) -> str:
    return " ".join([str(fix.why), str(fix.verify or ""), str(fix.myth or ""),
                     *(str(step.do) for step in fix.steps), _code(fix)])


@pytest.mark.parametrize("area", NEW_TREES)
def test_every_corpus_case_names_a_fix_of_its_tree(forest, area):
    cases = _cases(area)
    named = 0
    for path in cases:
        tree_id, _, node_id = _expect(path).partition("#")
        assert tree_id == area, path.name
        if node_id == "?":  # the corpus format's "the tree is certain, the node is not"
            continue
        node = forest.trees[tree_id].nodes.get(node_id)
        assert isinstance(node, Fix), f"{path.name}: {tree_id}#{node_id} is not a fix"
        named += 1
    assert named >= 8, f"{area}: only {named} real cases name a fix"


@pytest.mark.parametrize("tree_id", NEW_TREES)
def test_new_tree_has_substance(forest, tree_id):
    questions, fixes = forest.counts(tree_id)
    want_q, want_f = MINIMUMS[tree_id]
    assert questions >= want_q and fixes >= want_f, (questions, fixes)


def _checked_fixes(forest):
    for tree_id in NEW_TREES:
        for fix in _fixes(forest, tree_id):
            yield f"{tree_id}#{fix.id}", fix
    for tree_id, node_id, kind in ITEM8_NODES:
        node = forest.trees[tree_id].nodes[node_id]
        if kind is Fix:
            yield f"{tree_id}#{node_id}", node


def test_fixes_are_complete(forest):
    """The issue-3 bar: 2-6 steps with something to paste, a mechanism, a check, provenance."""
    for where, fix in _checked_fixes(forest):
        assert 2 <= len(fix.steps) <= 6, f"{where}: {len(fix.steps)} steps"
        assert any(step.code for step in fix.steps), f"{where}: no code"
        assert len(str(fix.why)) >= 200, f"{where}: 'why' too short to give a mechanism"
        assert str(fix.verify or "").strip(), f"{where}: no verify"
        assert fix.source, f"{where}: no source"
        assert fix.refs, f"{where}: no reference"


@pytest.mark.parametrize("tree_id", NEW_TREES)
def test_questions_are_answerable(forest, tree_id):
    for node in forest.trees[tree_id].nodes.values():
        if isinstance(node, Question):
            assert 2 <= len(node.answers) <= 9, f"{tree_id}#{node.id}"
            assert len(str(node.help or "")) >= 40, f"{tree_id}#{node.id}: no help"


@pytest.mark.parametrize(("tree_id", "node_id", "kind"), ITEM8_NODES,
                         ids=[f"{t}#{n}" for t, n, _ in ITEM8_NODES])
def test_item8_node_exists_and_is_linked(forest, tree_id, node_id, kind):
    assert isinstance(forest.trees[tree_id].nodes.get(node_id), kind)
    linked = [
        n.id for n in forest.trees[tree_id].nodes.values() if isinstance(n, Question)
        for a in n.answers if a.goto in (node_id, f"{tree_id}#{node_id}")
    ]
    assert linked, f"{tree_id}#{node_id}: no question of its own tree leads to it"


def test_sharding_and_moe_are_reachable_from_the_hang_tree(forest):
    exchange = forest.trees["nccl-hang"].nodes["parallel-exchange"]
    targets = {a.goto for a in exchange.answers}
    assert {"sharding#hang", "moe#ep-dispatch-timeout", "pipeline-schedule"} <= targets


# -- facts checked upstream (Megatron-LM core 0.15 arguments.py, PyTorch, DeepSpeed, HF) --------

def test_no_variable_seq_lengths_flag_is_pasted(forest):
    """Megatron-LM core 0.15 has no --variable-seq-lengths flag: it is a config field."""
    fix = forest.trees["nccl-hang"].nodes["pipeline-schedule"]
    assert "variable_seq_lengths = True" in _code(fix)
    for tree in forest.trees.values():
        for node in tree.nodes.values():
            if isinstance(node, Fix):
                assert "--variable-seq-lengths" not in _code(node), f"{tree.id}#{node.id}"


def test_output_logit_z_loss_is_honest_about_megatron(forest):
    fix = forest.trees["loss-spike"].nodes["z-loss"]
    assert "no flag" in str(fix.why)
    assert "--moe-z-loss-coeff" not in _code(fix)  # the router's z-loss is not the output's
    assert "logsumexp" in _code(fix)


def test_embedding_shrink_is_code_and_the_megatron_flag_is_the_init(forest):
    fix = forest.trees["loss-spike"].nodes["embedding-stability"]
    assert "detach()" in _code(fix)
    assert "--embedding-init-method-std" in _code(fix)
    assert "no flag" in str(fix.why)


def test_rerun_exit_codes(forest):
    fix = forest.trees["loss-spike"].nodes["rerun-exit"]
    why = str(fix.why)
    assert "16" in why and "17" in why and "validate_results" in why
    assert "--check-for-nan-in-loss-and-grad" not in _code(fix)
    assert "--check-for-nan-in-loss-and-grad" in str(fix.myth)


def test_megatron_deterministic_mode_prerequisites(forest):
    code = _code(forest.trees["convergence"].nodes["determinism"])
    for needle in ("--deterministic-mode", "NCCL_ALGO=", "CUBLAS_WORKSPACE_CONFIG=:4096:8",
                   "use_deterministic_algorithms(True)"):
        assert needle in code, needle


def test_grad_accum_names_the_hf_fix_and_megatron_flag(forest):
    fix = forest.trees["convergence"].nodes["grad-accum-loss"]
    assert "4.46" in str(fix.why)
    assert "num_items_in_batch" in _code(fix)
    assert "--calculate-per-token-loss" in _code(fix)


def test_reentrant_checkpoint_fix_and_myth(forest):
    fix = forest.trees["sharding"].nodes["ddp-reentrant-checkpoint"]
    assert "use_reentrant=False" in _code(fix)
    assert "find_unused_parameters" in str(fix.myth)


def test_force_load_balancing_is_never_a_remedy(forest):
    """Megatron's help text: random routing for benchmarking only."""
    for fix in _fixes(forest, "moe"):
        if "--moe-router-force-load-balancing" in _code(fix):
            assert fix.id == "ep-straggler" and "benchmark" in _text(fix)
    assert "--moe-router-force-load-balancing" in str(
        forest.trees["moe"].nodes["expert-imbalance-oom"].myth)


def test_deepep_is_named_with_its_dispatcher(forest):
    """--moe-enable-deepep works only with --moe-token-dispatcher-type flex (core 0.15 help)."""
    for fix in _fixes(forest, "moe"):
        code = _code(fix)
        if "--moe-enable-deepep" in code:
            assert re.search(r"--moe-token-dispatcher-type flex\b", code), fix.id


def test_zero3_leaf_module_version(forest):
    fix = forest.trees["moe"].nodes["zero3-expert-divergence"]
    assert "set_z3_leaf_modules" in _code(fix)
    assert "0.13.0" in _text(fix)


def test_pcie_question_can_take_a_probe_rule_later(forest):
    """A `pcie` probe (branch trees-a) can attach `when: pcie.width_degraded > 0` here."""
    slow = forest.trees["hardware"].nodes["slow-gpu"]
    answer = next(a for a in slow.answers if a.goto == "pcie-link")
    assert "width" in str(answer.text) and "generation" in str(answer.text)
    code = _code(forest.trees["hardware"].nodes["pcie-link"])
    for field in ("pcie.link.gen.current", "pcie.link.gen.max", "pcie.link.width.current",
                  "pcie.link.width.max"):
        assert field in code, field


def test_cuda_graphs_respect_megatron_checks(forest):
    fix = forest.trees["slow-training"].nodes["cuda-graphs"]
    assert "--cuda-graph-impl" in _code(fix)
    assert "--enable-cuda-graph" not in _code(fix)  # deprecated in core 0.15: prose only
    assert "expandable_segments" in str(fix.why)
