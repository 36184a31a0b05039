"""Aggregation rules: majority vs minority, splits, tolerance of missing facts, real output."""

from __future__ import annotations

import json

from trainmedic.cluster.aggregate import aggregate, compare, node_facts
from trainmedic.cluster.fanout import FanoutRun, NodeAnswer
from trainmedic.probes.cluster_last import cluster_facts

from .fakecluster import FIXTURES, healthy_payload, patched


def run_of(payloads: dict[str, dict | None]) -> FanoutRun:
    answers = [NodeAnswer(h, "ok" if p else "no-answer", p, "" if p else "no answer within 5s")
               for h, p in payloads.items()]
    return FanoutRun("srun", list(payloads), answers, [], 1.0)


def test_all_equal_means_no_finding():
    result = aggregate(run_of({f"n{i}": healthy_payload(f"n{i}") for i in range(4)}))
    assert result.bad_nodes == [] and result.findings == [] and result.splits == []
    assert cluster_facts(result)["bad_count"] == 0


def test_half_and_half_is_a_split_not_a_bad_node():
    payloads = {f"n{i}": patched(f"n{i}", versions={"nccl": "2.18.3" if i < 2 else "2.21.5"})
                for i in range(4)}
    result = aggregate(run_of(payloads))
    assert result.bad_nodes == []
    [split] = result.splits
    assert split.fact == "versions.nccl"
    assert split.groups == {'"2.18.3"': "n[0-1]", '"2.21.5"': "n[2-3]"}
    assert cluster_facts(result)["split_facts"] == ["versions.nccl"]


def test_missing_facts_and_probes_are_not_differences():
    slim = healthy_payload("n3")
    slim["probes"] = [p for p in slim["probes"] if p["name"] != "versions"]
    slim["probes"][0]["facts"].pop("driver_version")
    payloads = {f"n{i}": healthy_payload(f"n{i}") for i in range(3)} | {"n3": slim}
    assert aggregate(run_of(payloads)).bad_nodes == []


def test_env_given_as_dict_or_assignment_list_is_compared_per_variable():
    payloads = {}
    for i in range(5):
        value = "eth0" if i != 2 else "ib0"
        payload = patched(f"n{i}", env={"nccl_vars": {"NCCL_SOCKET_IFNAME": value},
                                        "set_vars": [f"NCCL_ALGO={'Ring' if i else 'Tree'}"]})
        payloads[f"n{i}"] = payload
    facts = node_facts(payloads["n2"])
    assert facts["env.NCCL_SOCKET_IFNAME"] == "ib0"
    result = aggregate(run_of(payloads))
    assert result.bad_nodes == ["n0", "n2"]
    assert "NCCL_SOCKET_IFNAME=ib0 (others: eth0)" in result.verdicts[1]
    assert "NCCL_ALGO=Tree" in result.verdicts[0]


def test_per_node_variables_are_ignored():
    payloads = {f"n{i}": patched(f"n{i}", env={"vars": {"SLURM_NODEID": str(i),
                                                        "NODE_RANK": str(i)}})
                for i in range(3)}
    assert aggregate(run_of(payloads)).bad_nodes == []


def test_memory_outlier_without_process_count():
    payloads = {f"n{i}": patched(f"n{i}", gpu={"max_memory_used_mib": 60000.0 if i == 1
                                               else 52000.0}) for i in range(4)}
    payloads["n3"] = patched("n3", gpu={"max_memory_used_mib": 79000.0})
    result = aggregate(run_of(payloads))
    assert result.bad_nodes == ["n3"]
    assert "77 GiB GPU memory in use vs 55 GiB typical" in result.verdicts[0]


def test_probe_unavailable_on_one_node_is_named():
    payloads = {f"n{i}": healthy_payload(f"n{i}") for i in range(4)}
    gpu = payloads["n1"]["probes"][0]
    gpu.update(status="unavailable", facts={})
    result = aggregate(run_of(payloads))
    assert result.bad_nodes == ["n1"]
    assert "gpu probe unavailable" in result.verdicts[0]


def test_real_output_of_a_node_without_gpu_or_torch_stands_out():
    text = (FIXTURES / "real-vm-no-gpu.json").read_text().split("\n", 1)[1]
    real = json.loads(text)
    payloads = {f"n{i}": healthy_payload(f"n{i}") for i in range(5)} | {"vm": real}
    result = aggregate(run_of(payloads))
    assert result.bad_nodes == ["vm"]
    verdict = result.verdicts[0]
    assert verdict.startswith("vm: ")
    assert "torch unset (others 2.5.1+cu124)" in verdict
    assert "gpu probe unavailable" in verdict


def test_no_answer_nodes_are_bad_and_counted():
    payloads = {"n1": healthy_payload("n1"), "n2": None, "n3": healthy_payload("n3")}
    result = aggregate(run_of(payloads))
    assert result.bad_nodes == ["n2"] and result.answered == 2
    facts = cluster_facts(result)
    assert facts["unreachable_count"] == 1 and facts["nodes"] == 3
    assert facts["age_s"] >= 0
    assert cluster_facts(None) == {}


def test_compare_reports_majority_and_minority():
    facts = {f"n{i}": {"gpu.driver_version": "550" if i else "535"} for i in range(3)}
    [outlier], splits = compare(facts)
    assert outlier.majority == "550" and outlier.majority_count == 2
    assert outlier.minority == {"n0": "535"} and splits == []


def test_table_prints_node_values_that_look_like_markup():
    """Values come from the nodes: rich markup in one must be printed, never raise."""
    from trainmedic.commands.probe_nodes import render_text

    payloads = {f"n{i}": healthy_payload(f"n{i}") for i in range(3)}
    payloads["n3"] = patched("n3", versions={"nccl": "[/]2.[bold]18"})
    text = render_text(aggregate(run_of(payloads)), all_columns=True)
    assert "[/]2.[bold]18" in text
