"""End to end through fake srun / ssh / squeue: the report names exactly the faulty nodes."""

from __future__ import annotations

import argparse
import json

import pytest

from trainmedic import __version__
from trainmedic.cluster import load_last_result
from trainmedic.commands.probe_nodes import add_cluster_arguments, run_nodes
from trainmedic.errors import UsageError
from trainmedic.probes.cluster_last import cluster_facts

from .fakecluster import (
    FAULTS,
    HEALTHY,
    SPECIAL,
    FakeCluster,
    build_cluster,
    healthy_payload,
)

BAD = [*FAULTS, *SPECIAL]


def parse(argv: list[str]) -> argparse.Namespace:
    """The shape commands/probe.py hands to run_nodes."""
    parser = argparse.ArgumentParser()
    parser.add_argument("names", nargs="*")
    parser.add_argument("--json", action="store_true")
    add_cluster_arguments(parser)
    args = parser.parse_args(argv)
    args.trees = []
    return args


@pytest.fixture
def cluster(tmp_path, monkeypatch):
    return FakeCluster(tmp_path, monkeypatch)


def check_result(result: dict, nodes: list[str]) -> None:
    assert result["bad_nodes"] == BAD
    assert result["node_count"] == len(nodes)
    assert result["answered"] == len(HEALTHY) + len(FAULTS)
    verdicts = {line.split(":", 1)[0]: line for line in result["verdicts"]}
    for host, (_changes, words) in FAULTS.items():
        for word in words:
            assert word in verdicts[host], (host, word, verdicts[host])
    assert "no answer within 3s" in verdicts["gpu-a8"]
    assert "not probe JSON" in verdicts["gpu-a9"]
    states = {n["host"]: n["state"] for n in result["nodes"]}
    assert states["gpu-a8"] == "no-answer"
    assert states["gpu-a9"] == "garbage"
    assert states["gpu-a10"] == "unreachable"
    assert all(states[h] == "ok" for h in HEALTHY)


def test_slurm_allocation_through_srun(cluster, monkeypatch, capsys):
    nodes = build_cluster(cluster, indent=1)
    monkeypatch.setenv("SLURM_JOB_NODELIST", "node[01-16],gpu-a[1-10]")
    code = run_nodes(parse(["--nodes", "slurm", "--json", "--node-timeout", "3", "gpu"]))
    assert code == 1
    result = json.loads(capsys.readouterr().out)
    check_result(result, nodes)
    assert "Communication connection failure" in result["nodes"][-1]["detail"]
    assert result["nodes"][-3]["detail"] == "no answer within 3s"
    [call] = cluster.calls()
    assert call[1:10] == [
        "--nodes=26", "--ntasks=26", "--ntasks-per-node=1", "--overlap",
        "--nodelist=node[01-16],gpu-a[1-10]", "--kill-on-bad-exit=0", "--wait=0", "--label",
        "--job-name=trainmedic-probe"]
    assert call[-5:] == ["trainmedic", "probe", "--json", "--no-raw", "gpu"]
    # the saved result is the same, and its facts are what trees read
    saved = load_last_result()
    assert saved is not None and saved.bad_nodes == BAD
    assert {**saved.to_dict(), "schema_version": 1, "trainmedic_version": __version__} == result
    facts = cluster_facts(saved)
    assert facts["nodes"] == 26 and facts["bad_count"] == 10
    assert facts["xid_nodes"] == ["gpu-a7"]
    assert facts["gpu_missing_nodes"] == ["gpu-a1", "gpu-a7"]
    assert facts["ib_down_nodes"] == ["gpu-a4"]
    assert facts["stray_process_nodes"] == ["gpu-a6"]
    assert facts["software_mismatch"] and facts["env_mismatch"]
    assert facts["unreachable_count"] == 2


def test_host_list_through_ssh(cluster, monkeypatch, capsys):
    nodes = build_cluster(cluster)
    monkeypatch.setenv("TRAINMEDIC_REMOTE", "python3 -m trainmedic")
    code = run_nodes(parse(["--nodes", "node[01-16],gpu-a[1-10]", "--json",
                            "--node-timeout", "3"]))
    assert code == 1
    result = json.loads(capsys.readouterr().out)
    check_result(result, nodes)
    assert "Connection refused" in result["nodes"][-1]["detail"]
    calls = cluster.calls()
    assert len(calls) == 26
    first = calls[0]
    assert first[1:5] == ["-o", "BatchMode=yes", "-o", "ConnectTimeout=3"]
    assert first[-1] == "python3 -m trainmedic probe --json --no-raw"


def test_host_list_through_pdsh(cluster, monkeypatch, capsys):
    nodes = build_cluster(cluster, indent=2)
    monkeypatch.setenv("TRAINMEDIC_FANOUT", "pdsh")
    code = run_nodes(parse(["--nodes", "node[01-16],gpu-a[1-10]", "--json",
                            "--node-timeout", "3"]))
    assert code == 1
    result = json.loads(capsys.readouterr().out)
    check_result(result, nodes)
    assert "Connection refused" in result["nodes"][-1]["detail"]
    [call] = cluster.calls()
    assert call[1:9] == ["-R", "ssh", "-f", "32", "-t", "3", "-u", "3"]
    assert call[9:] == ["-w", "node[01-16],gpu-a[1-10]", "trainmedic probe --json --no-raw"]
    monkeypatch.setenv("TRAINMEDIC_FANOUT", "rsh")
    with pytest.raises(UsageError, match="TRAINMEDIC_FANOUT"):
        run_nodes(parse(["--nodes", "node01"]))


def test_other_job_through_squeue(cluster, monkeypatch, capsys):
    for host in HEALTHY[:4]:
        cluster.node(host)
    monkeypatch.setenv("FAKE_JOB", "4242")
    monkeypatch.setenv("FAKE_JOB_NODELIST", "node[01-04]")
    monkeypatch.delenv("SLURM_JOB_NODELIST", raising=False)
    code = run_nodes(parse(["--nodes", "slurm", "--job", "4242"]))
    out = capsys.readouterr().out
    assert code == 0
    assert "All nodes agree" in out
    srun_call = next(c for c in cluster.calls() if c[0].endswith("srun"))
    assert "--jobid=4242" in srun_call and "--nodelist=node[01-04]" in srun_call
    with pytest.raises(UsageError, match="job 999 has no nodes"):
        run_nodes(parse(["--nodes", "slurm", "--job", "999"]))


def test_table_names_the_bad_nodes_and_fits_80_columns(cluster, monkeypatch, capsys):
    build_cluster(cluster)
    monkeypatch.setenv("SLURM_JOB_NODELIST", "node[01-16],gpu-a[1-10]")
    monkeypatch.setenv("COLUMNS", "80")
    assert run_nodes(parse(["--nodes", "slurm", "--node-timeout", "3"])) == 1
    out = capsys.readouterr().out
    table = out.split("Bad nodes:")[0]
    assert max(len(line) for line in table.splitlines()) <= 80, out
    assert "node[01-16] (16)" in out
    for host in BAD:
        assert f"  {host}: " in out
    # only what differs: every node runs the same torch and CUDA, so no such column
    header = next(line for line in out.splitlines() if line.lstrip().startswith("node"))
    assert "torch" not in header and "CUDA" not in header
    assert "NCCL" in header and "driver" in header and "Xid" in header


def test_healthy_cluster_exits_0_and_fqdn_hosts_are_matched(cluster, monkeypatch, capsys):
    for host in HEALTHY[:3]:
        payload = healthy_payload(host)
        payload["host"] = f"{host}.cluster.example"
        cluster.node(host, payload)
    monkeypatch.setenv("SLURM_JOB_NODELIST", "node[01-03]")
    assert run_nodes(parse(["--nodes", "slurm", "--json"])) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["bad_nodes"] == [] and result["answered"] == 3


def test_usage_errors(cluster, monkeypatch):
    monkeypatch.delenv("SLURM_JOB_NODELIST", raising=False)
    monkeypatch.delenv("SLURM_NODELIST", raising=False)
    with pytest.raises(UsageError, match="SLURM_JOB_NODELIST"):
        run_nodes(parse(["--nodes", "slurm"]))
    with pytest.raises(UsageError, match="--nodes needs"):
        run_nodes(parse(["--nodes", " "]))
    with pytest.raises(UsageError, match="backwards"):
        run_nodes(parse(["--nodes", "node[3-1]"]))
    with pytest.raises(UsageError, match="node-timeout"):
        run_nodes(parse(["--nodes", "node1", "--node-timeout", "0"]))
    with pytest.raises(UsageError, match="not a Slurm job id"):
        run_nodes(parse(["--nodes", "slurm", "--job", "12;rm"]))
    monkeypatch.setenv("TRAINMEDIC_REMOTE", "python3 'unclosed")
    with pytest.raises(UsageError, match="TRAINMEDIC_REMOTE"):
        run_nodes(parse(["--nodes", "node1"]))
