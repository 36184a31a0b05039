"""`trainmedic probe` end to end, in a subprocess, as people and the cluster fan-out run it."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from trainmedic.errors import UsageError

from .helpers import fixture_path

SECRETS = {
    "HF_TOKEN": "hf_QwErTyUiOpAsDfGhJkLzXcVbNm123456",
    "WANDB_API_KEY": "0123456789abcdef0123456789abcdef01234567",
    "AWS_ACCESS_KEY_ID": "AKIAIOSFODNN7EXAMPLE",
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "GITHUB_TOKEN": "ghp_ZyXwVuTsRqPoNmLkJiHgFeDcBa9876543210",
    "MASTER_ADDR": "tcp://trainer:Pa55w0rdXYZ@no-such-host.invalid",
    "NCCL_IB_AUTH_SECRET": "ibsecretvalue42",
    "OPENAI_API_KEY": "sk-proj-AAAABBBBCCCCDDDDEEEEFFFF1111",
    "PGPASSWORD": "postgres-pass-987",
}
SECRET_FRAGMENTS = [
    "QwErTyUiOp", "0123456789abcdef0123", "IOSFODNN7", "wJalrXUtn", "ZyXwVuTsRq", "Pa55w0rdXYZ",
    "ibsecretvalue42", "AAAABBBBCCCC", "postgres-pass-987",
]


def trainmedic(*args: str, env: dict[str, str] | None = None, timeout: float = 60):
    full_env = {k: v for k, v in os.environ.items() if k != "TRAINMEDIC_PROBE_TIMEOUT"}
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "trainmedic", *args],
        capture_output=True, text=True, env=full_env, timeout=timeout, check=False,
    )


def fake_bin(tmp_path: Path) -> str:
    folder = tmp_path / "bin"
    folder.mkdir()
    smi = folder / "nvidia-smi"
    smi.write_text(
        "#!/bin/sh\n"
        f'case "$*" in *--query-gpu*) /bin/cat "{fixture_path("query_gpu_h100_synthetic.csv")}";;'
        f' *topo*) /bin/cat "{fixture_path("topo_h100_nv18_nics.txt")}";;'
        " *compute-apps*) echo 'pid, process_name, used_memory [MiB], gpu_uuid';;"
        f' *) /bin/cat "{fixture_path("smi_q_x_a100_mig.xml")}";; esac\n'
    )
    smi.chmod(0o755)
    return str(folder)


def test_json_follows_the_contract(tmp_path):
    proc = trainmedic("probe", "gpu", "env", "--json", env={"PATH": fake_bin(tmp_path)})
    data = json.loads(proc.stdout)
    assert set(data) == {"schema_version", "trainmedic_version", "host", "time", "probes"}
    assert data["time"].endswith("Z") and "T" in data["time"]
    assert [p["name"] for p in data["probes"]] == ["gpu", "env"]
    gpu = data["probes"][0]
    assert {"name", "status", "summary", "facts", "raw", "duration_s", "evidence"} <= set(gpu)
    assert gpu["facts"]["count"] == 8
    assert proc.returncode == 1  # the gpu probe failed (ECC errors in the fixture)
    no_raw = json.loads(trainmedic("probe", "env", "--json", "--no-raw").stdout)
    assert "raw" not in no_raw["probes"][0]


def test_no_secret_in_any_output(tmp_path):
    env = {**SECRETS, "PATH": fake_bin(tmp_path), "NCCL_DEBUG": "INFO"}
    outputs = []
    for args in (["--json"], ["--verbose"], ["env", "rendezvous", "--json"], ["env", "-v"]):
        proc = trainmedic("probe", *args, env=env)
        assert proc.returncode in (0, 1), proc.stderr
        outputs.append(proc.stdout + proc.stderr)
    text = "\n".join(outputs)
    assert "NCCL_DEBUG=INFO" in text  # the environment was really shown
    assert "tcp://<redacted>@no-such-host.invalid" in text
    for fragment in SECRET_FRAGMENTS:
        assert fragment not in text, fragment


def test_probe_never_imports_textual():
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "trainmedic", "probe", "env"],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert proc.returncode in (0, 1), proc.stderr[-500:]
    imported = [line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines()]
    assert "trainmedic.probes.runner" in imported  # the log covers the probe run
    assert not [name for name in imported if name.split(".")[0] == "textual"]


def test_unknown_probe_is_a_usage_error():
    proc = trainmedic("probe", "gpu", "warp-drive")
    assert proc.returncode == 2
    assert proc.stderr.startswith("trainmedic: error: unknown probe 'warp-drive'; valid: gpu,")
    assert "Traceback" not in proc.stderr
    bad = trainmedic("probe", "--timeout", "0")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr


def test_a_hanging_tool_does_not_hold_the_command(tmp_path):
    folder = tmp_path / "bin"
    folder.mkdir()
    for name in ("nvidia-smi", "dmesg", "ibstat"):
        tool = folder / name
        tool.write_text("#!/bin/sh\n/bin/sleep 600\n")
        tool.chmod(0o755)
    start = time.monotonic()
    proc = trainmedic("probe", "--json", "--timeout", "1", env={"PATH": str(folder)})
    elapsed = time.monotonic() - start
    data = json.loads(proc.stdout)
    statuses = {p["name"]: p["status"] for p in data["probes"]}
    # a hung nvidia-smi is a node fault (F9): FAIL and exit 1; the others cannot tell
    assert statuses["gpu"] == "fail" and proc.returncode == 1
    assert statuses["kernel-xid"] in ("unavailable", "unknown")
    assert statuses["infiniband"] in ("unavailable", "unknown")
    assert statuses["env"] in ("ok", "warn")
    assert elapsed < 8  # interpreter start + one 1 s timeout, not three


def test_list_shows_every_probe():
    proc = trainmedic("probe", "--list")
    assert proc.returncode == 0
    for name in ("gpu", "gpu-processes", "topology", "env", "versions", "kernel-xid",
                 "infiniband", "rendezvous"):
        assert name in proc.stdout


def test_nodes_and_job_hand_over_to_the_cluster_fan_out(monkeypatch):
    import argparse

    import trainmedic.commands.probe_nodes as cluster
    from trainmedic.commands import probe

    seen = []
    monkeypatch.setattr(cluster, "run_nodes", lambda args: seen.append(args) or 7)
    parser = argparse.ArgumentParser()
    probe.add_arguments(parser)
    args = parser.parse_args(["gpu", "env", "--nodes", "node[01-02]", "--json"])
    assert probe.run(args) == 7
    assert seen[0].names == ["gpu", "env"] and seen[0].json is True
    assert probe.run(parser.parse_args(["--job", "1234"])) == 7
    with pytest.raises(UsageError, match="--node-timeout"):
        probe.run(parser.parse_args(["--nodes", "node01", "--timeout", "5"]))


def test_verbose_table_prints_fact_values_literally(capsys):
    """A fact value that looks like Rich markup must not be eaten as a style tag."""
    from trainmedic.commands.probe import _print_table
    from trainmedic.probes.base import ProbeResult

    result = ProbeResult("gpu", "ok", "fine", facts={"models": "[bold]H100"},
                         evidence={"models": "GPU 0 [red]seen"})
    _print_table([result], verbose=True, include_raw=False)
    out = capsys.readouterr().out
    assert "'[bold]H100'" in out
    assert "GPU 0 [red]seen" in out


def test_list_as_json_names_every_probe_and_its_facts():
    proc = trainmedic("probe", "--list", "--json")
    listed = {p["name"]: p for p in json.loads(proc.stdout)}
    assert proc.returncode == 0
    assert listed["gpu"]["facts"]["max_memory_fraction"] == "float"
    assert "rendezvous" in listed and listed["rendezvous"]["timeout_s"] > 0
