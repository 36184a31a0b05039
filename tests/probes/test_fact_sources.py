"""The `memory` and `cluster` probes feed tree rules from a launch script and a cluster sweep."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainmedic.cluster.result import ClusterResult
from trainmedic.cluster.store import save_last_result
from trainmedic.probes.base import ProbeContext
from trainmedic.probes.memory_estimate import from_text
from trainmedic.probes.runner import run_probes
from trainmedic.trees import Question, load_forest
from trainmedic.trees.rules import suggest
from trainmedic.walk import facts_from


def facts_of(results):
    return facts_from(results)[0]

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SEED_EXAMPLE = """python pretrain_gpt.py \\
  --num-layers 80 --hidden-size 8192 --num-attention-heads 64 \\
  --num-query-groups 8 --group-query-attention --kv-channels 128 --ffn-hidden-size 28672 \\
  --seq-length 8192 --max-position-embeddings 8192 \\
  --micro-batch-size 1 --global-batch-size 1024 \\
  --tensor-model-parallel-size {tp} --pipeline-model-parallel-size 4 \\
  --bf16 --use-distributed-optimizer --swiglu --world-size 256 {extra}
"""


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("TRAINMEDIC_GPU_MEMORY", "80GiB")
    monkeypatch.delenv("TRAINMEDIC_LAUNCH_SCRIPT", raising=False)


def oom_when_suggestion(facts: dict[str, object]) -> str | None:
    question = load_forest().trees["oom"].nodes["when"]
    assert isinstance(question, Question)
    index, _lines = suggest(question, facts)
    return None if index is None else question.answers[index].goto


def test_memory_probe_suggests_first_iteration_when_the_config_does_not_fit() -> None:
    tight = from_text(SEED_EXAMPLE.format(tp=1, extra=""), "launch.sh")
    assert tight.status == "fail" and tight.facts["fits"] is False
    assert tight.facts["capacity_gib"] == 80.0
    assert "launch.sh: about" in tight.summary and "does not fit" in tight.summary
    assert oom_when_suggestion(facts_of([tight])) == "first-iteration"

    roomy = from_text(SEED_EXAMPLE.format(tp=8, extra="--sequence-parallel"), "launch.sh")
    assert roomy.facts["fits"] is True
    assert oom_when_suggestion(facts_of([roomy])) is None


def test_memory_probe_reads_the_script_named_in_the_environment(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert run_probes(["memory"])[0].status == "unavailable"
    script = tmp_path / "train.sh"
    script.write_text(SEED_EXAMPLE.format(tp=1, extra=""))
    monkeypatch.setenv("TRAINMEDIC_LAUNCH_SCRIPT", str(script))
    result = run_probes(["memory"])[0]
    assert result.facts["fits"] is False and str(script) in result.summary


def test_memory_probe_estimates_the_walks_launch_command_first(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The launch command a walk knows (pasted, or a script's path) wins over the variable."""
    other = tmp_path / "other.sh"
    other.write_text(SEED_EXAMPLE.format(tp=8, extra="--sequence-parallel"))
    monkeypatch.setenv("TRAINMEDIC_LAUNCH_SCRIPT", str(other))
    pasted = run_probes(["memory"], ProbeContext(SEED_EXAMPLE.format(tp=1, extra="")))[0]
    assert pasted.facts["fits"] is False and pasted.summary.startswith("launch command: ")
    script = tmp_path / "train.sh"
    script.write_text(SEED_EXAMPLE.format(tp=1, extra=""))
    by_path = run_probes(["memory"], ProbeContext(f"  {script}\n"))[0]
    assert by_path.facts["fits"] is False and by_path.summary.startswith(f"{script}: ")
    assert run_probes(["memory"])[0].facts["fits"] is True  # no context: the variable


def test_memory_probe_refuses_a_binary_script_and_a_bad_capacity(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    binary = tmp_path / "model.pt"
    binary.write_bytes(b"PK\x03\x04\x00\x00" * 8)
    monkeypatch.setenv("TRAINMEDIC_LAUNCH_SCRIPT", str(binary))
    result = run_probes(["memory"])[0]
    assert result.status == "unavailable" and "binary file" in result.summary
    monkeypatch.setenv("TRAINMEDIC_GPU_MEMORY", "lots")
    result = from_text(SEED_EXAMPLE.format(tp=1, extra=""), "launch.sh")
    assert result.status == "unavailable" and "TRAINMEDIC_GPU_MEMORY='lots'" in result.summary


def test_memory_probe_reports_garbage_as_unavailable() -> None:
    result = from_text("echo hello\n", "notes.txt")
    assert result.status == "unavailable"
    assert "no training command" in result.summary


def test_cluster_probe_reads_the_last_sweep() -> None:
    assert run_probes(["cluster"])[0].status == "unavailable"
    save_last_result(ClusterResult.from_dict({
        "time": "2026-11-29T08:00:00+00:00", "node_count": 17, "answered": 17,
        "bad_nodes": ["gpu-a7"], "verdicts": ["gpu-a7: 7 of 8 GPUs visible; Xid 79 — drain it"],
        "findings": [{"host": "gpu-a7", "kind": "hardware", "message": "Xid 79",
                      "fact": "kernel-xid.fallen_off_bus"}],
    }))
    result = run_probes(["cluster"])[0]
    assert result.status == "fail"
    assert result.facts["bad_count"] == 1 and result.facts["bad_nodes"] == ["gpu-a7"]
    assert "1 of 17 nodes" in result.summary
    question = load_forest().trees["multi-node"].nodes["symptom"]
    assert isinstance(question, Question)
    index, lines = suggest(question, facts_of([result]), {
        f"cluster.{k}": v for k, v in result.evidence.items()})
    assert index is not None and question.answers[index].goto == "bad-node"
    assert any("gpu-a7: 7 of 8 GPUs visible" in line for line in lines)


def test_cluster_probe_without_a_sweep_time_does_not_claim_an_age() -> None:
    save_last_result(ClusterResult.from_dict(
        {"node_count": 2, "answered": 2, "bad_nodes": [], "verdicts": []}))
    result = run_probes(["cluster"])[0]
    assert result.summary == "all 2 nodes agree (time of the sweep unknown)"
