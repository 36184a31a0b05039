"""`trainmedic probe --nodes ...` through the real command line (subprocess, fake srun/ssh)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from .fakecluster import HEALTHY, FakeCluster, patched


def trainmedic(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "trainmedic", *argv], capture_output=True,
                          text=True, timeout=60, env=dict(os.environ))


@pytest.fixture
def cluster(tmp_path, monkeypatch):
    fake = FakeCluster(tmp_path, monkeypatch)
    for host in HEALTHY[:5]:
        fake.node(host, indent=2)
    fake.node("node06", patched("node06", kernel_xid={"count": 2, "codes": [79, 45],
                                                      "fatal": True, "fallen_off_bus": True}))
    return fake


def test_json_through_srun(cluster, monkeypatch):
    monkeypatch.setenv("SLURM_JOB_NODELIST", "node[01-06]")
    done = trainmedic("probe", "--nodes", "slurm", "--json", "gpu", "kernel-xid")
    assert done.returncode == 1, done.stderr
    result = json.loads(done.stdout)
    assert result["bad_nodes"] == ["node06"]
    assert result["verdicts"] == [
        "node06: Xid 79 in dmesg (GPU fell off the bus) — drain it"]


def test_table_through_ssh(cluster):
    done = trainmedic("probe", "--nodes", "node[01-05]")
    assert done.returncode == 0, done.stderr
    assert "All nodes agree" in done.stdout and "node[01-05] (5)" in done.stdout


@pytest.mark.parametrize("spec", ["node[3-1]", "node[01-", "node[a-c]", "node[1-99999999]"])
def test_bad_spec_is_a_one_line_usage_error(cluster, spec):
    done = trainmedic("probe", "--nodes", spec)
    assert done.returncode == 2
    assert done.stderr.startswith("trainmedic: error: ") and done.stderr.count("\n") == 1
    assert "Traceback" not in done.stderr


def test_unknown_probe_name_is_refused_before_fan_out(cluster):
    done = trainmedic("probe", "--nodes", "node[01-02]", "nosuchprobe")
    assert done.returncode == 2 and "unknown probe 'nosuchprobe'" in done.stderr
    assert cluster.calls() == []


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.parametrize("spec", ["slurm", "node[01-06]"])
def test_ctrl_c_stops_the_fan_out_and_its_children(cluster, monkeypatch, spec):
    cluster.node("node06", mode="hang")
    monkeypatch.setenv("SLURM_JOB_NODELIST", "node[01-06]")
    proc = subprocess.Popen([sys.executable, "-m", "trainmedic", "probe", "--nodes", spec],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 20
        while len(cluster.pids()) < (1 if spec == "slurm" else 6) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=15)
        assert proc.returncode == 130 and "interrupted" in err and "Traceback" not in err
        time.sleep(0.2)
        assert not [pid for pid in cluster.pids() if _alive(pid)]
    finally:  # never leave a fake node sleeping behind a failed test
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pid in cluster.pids():
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_fan_out_modules_import_neither_textual_nor_rich():
    code = ("import sys, trainmedic.cluster, trainmedic.cluster.sweep, trainmedic.cluster.store, "
            "trainmedic.cluster.fanout, trainmedic.cluster.aggregate, trainmedic.cluster.pdsh, "
            "trainmedic.cluster.render; "
            "print(sorted(m for m in ('textual', 'rich') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=30)
    assert done.stdout.strip() == "[]", done.stderr


@pytest.mark.parametrize(("tool", "argv", "env"), [
    ("srun", ["--nodes", "slurm"], {"SLURM_JOB_NODELIST": "node[01-02]"}),
    ("pdsh", ["--nodes", "node[01-02]"], {"TRAINMEDIC_FANOUT": "pdsh"}),
])
def test_unrunnable_launcher_is_a_one_line_error(tmp_path, tool, argv, env):
    """A launcher on PATH that cannot start (bad interpreter) must not end in a traceback."""
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / tool).write_text("#!/nonexistent/interpreter\n")
    (folder / tool).chmod(0o755)
    full_env = {**os.environ, **env, "PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run([sys.executable, "-m", "trainmedic", "probe", *argv],
                          capture_output=True, text=True, timeout=60, env=full_env)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert f"could not run {tool}" in done.stderr


def healthy_node_tools(folder) -> None:
    """This machine as a healthy GPU node: nvidia-smi and dmesg fakes (real captured GPU output
    where the fixtures have it, plus the few synthetic lines noted below)."""
    from pathlib import Path

    probes = Path(__file__).resolve().parents[1] / "fixtures" / "probes"

    def fixture_path(name: str) -> Path:
        return probes / name

    smi = folder / "nvidia-smi"
    smi.write_text(
        "#!/bin/sh\n"
        'case "$*" in\n'
        f'  *--query-gpu=index,name*) /bin/cat "{fixture_path("query_gpu_tesla_p100.csv")}" ;;\n'
        f'  *"-q -x"*) /bin/cat "{fixture_path("smi_q_x_tesla_p100.xml")}" ;;\n'
        # synthetic: the header nvidia-smi prints when no compute process holds memory
        "  *--query-compute-apps*) echo 'pid, process_name, used_memory [MiB], gpu_uuid' ;;\n"
        # synthetic: a one-GPU matrix and a -q report without a Fabric section
        "  *topo*) printf '\\tGPU0\\tCPU Affinity\\nGPU0\\t X \\t0-63\\n' ;;\n"
        "  *-q*) printf '==============NVSMI LOG==============\\n' ;;\n"
        "  *) echo \"unsupported: $*\" >&2; exit 6 ;;\n"
        "esac\n")
    smi.chmod(0o755)
    dmesg = folder / "dmesg"  # synthetic: a kernel log with no Xid line
    dmesg.write_text("#!/bin/sh\necho '[    0.000000] Linux version 6.8.0 (buildd@lcy02)'\n")
    dmesg.chmod(0o755)


def test_a_stale_sweep_never_fails_a_healthy_node(cluster, monkeypatch):
    """A Slurm prolog runs `trainmedic probe` on each node: a sweep that found a bad node an
    hour ago must not fail the healthy node it now runs on (issue 21)."""
    sweep = trainmedic("probe", "--nodes", "node[01-06]")
    assert sweep.returncode == 1 and "node06" in sweep.stdout  # saved, with its bad node
    healthy_node_tools(cluster.bin)
    for name in ("MASTER_ADDR", "TRAINMEDIC_LAUNCH_SCRIPT", "CUDA_VISIBLE_DEVICES"):
        monkeypatch.delenv(name, raising=False)
    prolog = trainmedic("probe")
    assert prolog.returncode == 0, prolog.stdout
    assert "cluster" not in prolog.stdout and "node06" not in prolog.stdout
    asked = trainmedic("probe", "--last-sweep")
    assert asked.returncode == 0, asked.stdout
    assert "last cluster sweep" in asked.stdout and "min ago" in asked.stdout
    data = json.loads(trainmedic("probe", "--json", "--last-sweep").stdout)
    assert data["last_sweep"]["status"] == "fail"
    assert data["last_sweep"]["facts"]["bad_nodes"] == ["node06"]
    assert all(p["name"] != "cluster" for p in data["probes"])
    named = trainmedic("probe", "cluster", "gpu")  # asked for by name: shown, still not counted
    assert named.returncode == 0 and "1 of 6 nodes differ or fail" in named.stdout
