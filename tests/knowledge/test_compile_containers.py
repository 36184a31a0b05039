"""The compile and containers trees: built like the others, reachable from their corpus cases,
and suggested by the host probes where the machine can answer."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainmedic.probes import compile_cache, container, fabric, memlock, procfs, shm
from trainmedic.probes.registry import declared_facts
from trainmedic.trees import Fix, Question, load_forest
from trainmedic.trees.lint import lint_forest
from trainmedic.trees.rules import suggest
from trainmedic.walk import facts_from


def facts_of(results):
    return facts_from(results)[0]

TREES = ("compile", "containers")
ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "tests" / "corpus" / "cases"
FIXTURES = ROOT / "tests" / "fixtures" / "probes"


@pytest.fixture(scope="module")
def forest():
    return load_forest()


def test_both_trees_lint_clean(forest):
    problems = [str(p) for p in lint_forest(forest, declared_facts())
                if any(f"trees/{t}.yaml" in str(p) for t in TREES)]
    assert problems == []


@pytest.mark.parametrize("tree_id", TREES)
def test_fixes_are_complete(forest, tree_id):
    """The quality bar of the hand-written trees: steps to paste, a mechanism, a check, sources."""
    fixes = 0
    for node_id, node in forest.trees[tree_id].nodes.items():
        if not isinstance(node, Fix):
            continue
        fixes += 1
        where = f"{tree_id}#{node_id}"
        assert 2 <= len(node.steps) <= 6, f"{where}: {len(node.steps)} steps"
        assert all(step.code for step in node.steps), f"{where}: a step without a command"
        assert len(str(node.why)) >= 200, f"{where}: 'why' too short to give a mechanism"
        assert str(node.verify).strip(), f"{where}: no verify"
        assert node.source, f"{where}: no source"
        assert node.refs and all(ref.url for ref in node.refs), f"{where}: refs without URL"
    assert fixes >= 9


@pytest.mark.parametrize("tree_id", TREES)
def test_questions_are_answerable(forest, tree_id):
    for node_id, node in forest.trees[tree_id].nodes.items():
        if isinstance(node, Question):
            assert 2 <= len(node.answers) <= 9, f"{tree_id}#{node_id}"
            assert str(node.help).strip(), f"{tree_id}#{node_id}: no help"
            assert node.source, f"{tree_id}#{node_id}: no source"


def expected_node(case: Path) -> str:
    """The `expect:` line of a case header (holdout cases are read no further than that)."""
    for line in case.read_text(encoding="utf-8").splitlines():
        if line.startswith("# ---"):
            break
        if line.startswith("# expect:"):
            return line.split(":", 1)[1].strip()
    raise AssertionError(f"{case}: no expect line")


@pytest.mark.parametrize("tree_id", TREES)
def test_every_corpus_case_names_a_node_of_the_tree(forest, tree_id):
    cases = sorted((CASES / tree_id).glob("*.log"))
    assert len(cases) >= 8
    for case in cases:
        tree, _, node = expected_node(case).partition("#")
        assert tree == tree_id, case.name
        if node != "?":  # the collector knew only the tree
            assert node in forest.trees[tree_id].nodes, f"{case.name}: {tree}#{node}"


def symptom_suggestion(forest, facts: dict[str, object]) -> str | None:
    question = forest.trees["containers"].nodes["symptom"]
    assert isinstance(question, Question)
    index, _lines = suggest(question, facts)
    return None if index is None else question.answers[index].goto


def fixture_body(name: str) -> str:
    return "\n".join(line for line in (FIXTURES / name).read_text().splitlines()
                     if not line.startswith("# source:"))


def test_fabric_probe_suggests_the_fabric_manager(forest):
    gpus = fabric.parse_fabric(fixture_body("smi_q_fabric_in_progress.txt"))
    facts = facts_of([fabric.build_result(gpus, "", "")])
    assert symptom_suggestion(forest, facts) == "fabric-manager"
    ready = facts | {"fabric.gpus_not_ready": 0}
    assert symptom_suggestion(forest, ready) is None


def test_memlock_probe_suggests_the_memlock_fix(forest):
    caps = procfs.parse_cap_eff(fixture_body("status_caps_containerd_default.txt"))
    facts = facts_of([memlock.build_result(65536, 65536, caps, rdma_devices=True)])
    assert symptom_suggestion(forest, facts) == "memlock-limit"


def test_container_without_sys_nice_suggests_cumem(forest, tmp_path):
    root = tmp_path / "root"
    for rel, text in {"proc/self/cgroup": fixture_body("cgroup_v1_docker.txt"),
                      "proc/self/status": fixture_body("status_caps_containerd_default.txt"),
                      ".dockerenv": ""}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    facts = facts_of([container.examine(root, {})])
    assert symptom_suggestion(forest, facts) == "cumem-sys-nice"


def test_small_dev_shm_suggests_the_shm_fix(forest, monkeypatch, tmp_path):
    class Docker64MB:
        f_blocks, f_frsize, f_bavail = 16384, 4096, 16000

    monkeypatch.setattr(shm.os, "statvfs", lambda _path: Docker64MB())
    facts = facts_of([shm.inspect(tmp_path)])
    assert symptom_suggestion(forest, facts) == "dev-shm-size"


def test_cache_on_nfs_suggests_the_cache_fix(forest, tmp_path):
    dirs = compile_cache.cache_dirs({}, str(tmp_path), str(tmp_path / "home"), "alice")
    facts = facts_of([compile_cache.examine(dirs, [("/", "ext4"), (str(tmp_path), "nfs4")])])
    question = forest.trees["compile"].nodes["symptom"]
    assert isinstance(question, Question)
    index, lines = suggest(question, facts)
    assert index is not None and question.answers[index].goto == "cache-dir"
    assert any("network file system" in line for line in lines)


def test_version_facts_stay_stated(forest):
    """The version boundaries the fixes rest on (each checked against upstream) stay in the text."""
    compile_tree = forest.trees["compile"].nodes
    why = str(compile_tree["recompile-limit"].why)
    assert "cache_size_limit" in why and "recompile_limit" in why and "2.7" in why
    assert "2.5" in str(compile_tree["compile-rank-skew"].steps[3].do)
    cont = forest.trees["containers"].nodes
    assert "2.24" in str(cont["cumem-sys-nice"].why) and "2.26.5" in str(cont["cumem-sys-nice"].why)
    assert "2.21" in str(cont["roce-gid"].why)
    assert "1.18" in str(cont["ofi-net-plugin"].why) and "1.7" in str(cont["ofi-net-plugin"].why)
