from trainmedic.probes.env import examine
from trainmedic.redact import REDACTED

from .helpers import check_types


def test_clean_environment_is_ok():
    result = examine({"NCCL_SOCKET_IFNAME": "ib0", "MASTER_ADDR": "node01", "PATH": "/bin"})
    check_types(result)
    assert result.status == "ok"
    assert result.facts["socket_ifname_set"] is True and result.facts["master_addr_set"] is True
    assert result.facts["async_error_handling"] is True  # default 3 when unset
    assert "PATH" not in result.raw  # only variables that matter are listed


def test_myths_debug_switches_and_deprecated_names_are_found():
    env = {
        "NCCL_TIMEOUT": "3600",
        "CUDA_LAUNCH_BLOCKING": "1",
        "NCCL_DEBUG": "info",
        "TORCH_DISTRIBUTED_DEBUG": "DETAIL",
        "NCCL_ASYNC_ERROR_HANDLING": "1",
        "NCCL_IB_DISABLE": "1",
        "NCCL_IB_HCA": "mlx5_0",
        "CUDA_DEVICE_MAX_CONNECTIONS": "1",
        "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
        "PYTORCH_ALLOC_CONF": "max_split_size_mb:512",
        "TORCH_NCCL_TRACE_BUFFER_SIZE": "2000",
    }
    result = examine(env)
    check_types(result)
    f = result.facts
    assert result.status == "warn"
    assert f["myth_vars"] == ["NCCL_TIMEOUT"] and f["myth_count"] == 1
    assert f["launch_blocking"] is True and f["nccl_debug"] == "INFO"
    assert f["distributed_debug"] == "DETAIL"
    assert f["deprecated_vars"] == ["NCCL_ASYNC_ERROR_HANDLING"]
    assert f["ib_disabled"] is True and "NCCL_IB_HCA is also set" in result.evidence["ib_disabled"]
    assert f["max_connections_one"] is True and f["expandable_segments"] is True
    assert f["trace_buffer_set"] is True
    assert any("disagree" in line for line in f["findings"])
    assert f["finding_count"] == len(f["findings"]) == 7
    assert "init_process_group(timeout=" in result.evidence["myth_vars"]


def test_async_error_handling_off_and_deprecated_fallback():
    assert examine({"TORCH_NCCL_ASYNC_ERROR_HANDLING": "0"}).facts["async_error_handling"] is False
    assert examine({"NCCL_ASYNC_ERROR_HANDLING": "0"}).facts["async_error_handling"] is False
    both = examine({"NCCL_ASYNC_ERROR_HANDLING": "0", "TORCH_NCCL_ASYNC_ERROR_HANDLING": "3"})
    assert both.facts["async_error_handling"] is True
    assert "they differ" in both.evidence["deprecated_vars"]


def test_secrets_never_reach_raw_or_evidence():
    env = {
        "NCCL_DEBUG": "WARN",
        "MASTER_ADDR": "tcp://admin:Sup3rS3cret@10.0.0.1",
        "NCCL_IB_AUTH_TOKEN": "tok-123456789",
        "HF_TOKEN": "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    }
    result = examine(env)
    text = result.raw + repr(result.evidence) + result.summary + repr(result.facts)
    assert "Sup3rS3cret" not in text and "tok-123456789" not in text and "hf_AbCd" not in text
    assert f"tcp://{REDACTED}@10.0.0.1" in result.raw
    assert "secret-named variable(s) present" in result.raw


def test_nccl_device_lists_are_checked_against_this_node():
    from trainmedic.probes.env import select_devices

    nics = ["lo", "eth0", "ib0", "ib1", "docker0"]
    assert select_devices("ib", nics) == ["ib0", "ib1"]
    assert select_devices("=eth0", nics) == ["eth0"]
    assert select_devices("=eth", nics) == []
    assert select_devices("^docker,lo", nics) == ["eth0", "ib0", "ib1"]
    assert select_devices("mlx5_1:1", ["mlx5_0", "mlx5_1", "mlx5_10"]) == ["mlx5_1", "mlx5_10"]

    bad = examine({"NCCL_SOCKET_IFNAME": "eth1", "NCCL_IB_HCA": "=mlx5_9"},
                  interfaces=["lo", "eth0"], hcas=["mlx5_0", "mlx5_1"])
    check_types(bad)
    assert bad.facts["socket_ifname_matches"] is False and bad.facts["ib_hca_matches"] is False
    assert "it has: lo, eth0" in bad.evidence["socket_ifname_matches"]
    assert bad.status == "warn"
    good = examine({"NCCL_SOCKET_IFNAME": "eth"}, interfaces=["lo", "eth0"], hcas=[])
    assert good.facts["socket_ifname_matches"] is True and good.facts["ib_hca_matches"] is True
    unknown = examine({"NCCL_IB_HCA": "mlx5_0"}, interfaces=None, hcas=None)
    assert unknown.facts["ib_hca_matches"] is True  # devices unknown: not judged


# -- whose environment: this shell, the launch script's exports, or a running rank (F21) -----

def _clear(monkeypatch):
    for name in ("TRAINMEDIC_JOB_PID", "TRAINMEDIC_LAUNCH_SCRIPT", "TORCH_NCCL_TRACE_BUFFER_SIZE",
                 "TORCH_FR_BUFFER_SIZE", "NCCL_ALGO"):
        monkeypatch.delenv(name, raising=False)


def test_this_shell_is_labelled_as_not_the_job(monkeypatch):
    from trainmedic.probes import env as env_probe
    from trainmedic.probes.base import Budget, ProbeContext

    _clear(monkeypatch)
    result = env_probe.probe(Budget(2), ProbeContext())
    check_types(result)
    assert result.summary.startswith("in this shell, not the job: ")
    assert result.source == "this shell, not the job" and result.facts["from_job"] is False
    assert result.evidence["trace_buffer_set"].endswith("[this shell, not the job]")


def _wait_for_exec(pid: int, marker: str) -> None:
    import time
    from pathlib import Path

    deadline = time.monotonic() + 10
    while marker.encode() not in Path(f"/proc/{pid}/cmdline").read_bytes():
        assert time.monotonic() < deadline, "the child never ran its program"
        time.sleep(0.01)


def test_a_running_rank_is_read_from_proc(monkeypatch):
    import subprocess
    import sys

    from trainmedic.probes import env as env_probe
    from trainmedic.probes.base import Budget, ProbeContext
    from trainmedic.walk import WalkSession

    _clear(monkeypatch)
    marker = "trainmedic-test-rank-f21"
    rank = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)", marker],
        env={"PATH": "/usr/bin:/bin", "TORCH_NCCL_TRACE_BUFFER_SIZE": "2000",
             "NCCL_ALGO": "Ring", "RANK": "3"})
    try:
        _wait_for_exec(rank.pid, marker)  # before exec, /proc shows the forking parent's env
        by_pid = env_probe.probe(Budget(2), ProbeContext(job_pid=str(rank.pid)))
        monkeypatch.setenv("TRAINMEDIC_JOB_PID", marker)  # found by a name in its command line
        by_name = env_probe.probe(Budget(2), ProbeContext())
    finally:
        rank.kill()
        rank.wait()
    for result in (by_pid, by_name):
        check_types(result)
        assert result.facts["from_job"] is True and result.facts["trace_buffer_set"] is True
        assert result.facts["nccl_algo"] == "Ring" and result.status == "warn"
        assert result.source.startswith(f"pid {rank.pid} (/proc/{rank.pid}/environ")
        assert not result.summary.startswith("in this shell")
    # the walk's "I can't tell" suggestion reads the job's flight recorder, not this shell's
    from trainmedic.trees import load_forest

    session = WalkSession(load_forest(), "nccl-hang#watchdog-timeout")
    session.attach_probes([by_pid])
    index, _lines = session.suggestion()
    texts = [a.text for a in session.question.answers]
    assert index is None or "can't tell" not in texts[index]


def test_an_unreadable_or_absent_rank_is_unknown(monkeypatch, tmp_path):
    from trainmedic.probes.job_env import read_process_env

    missing = read_process_env("no-such-training-process-xyz")
    assert missing.env is None and "no running process matches" in missing.source
    proc = tmp_path / "proc"
    (proc / "4242").mkdir(parents=True)
    (proc / "4242" / "environ").write_bytes(b"RANK=0\0NCCL_DEBUG=INFO\0")
    found = read_process_env("4242", proc)
    assert found.from_job and found.env == {"RANK": "0", "NCCL_DEBUG": "INFO"}
    gone = read_process_env("4243", proc)
    assert gone.env is None and "4243/environ" in gone.source

    from trainmedic.probes import env as env_probe
    from trainmedic.probes.base import Budget, ProbeContext

    result = env_probe.probe(Budget(2), ProbeContext(job_pid="no-such-training-process-xyz"))
    assert result.status == "unknown" and result.facts == {}


def test_the_launch_scripts_exports_are_applied_and_said(monkeypatch, tmp_path):
    from trainmedic.probes import env as env_probe
    from trainmedic.probes.base import Budget, ProbeContext

    _clear(monkeypatch)
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/bash\nexport NCCL_ALGO=Tree\nexport TORCH_NCCL_TRACE_BUFFER_SIZE="
                      "2000\ntorchrun --nproc_per_node 8 train.py\n")
    result = env_probe.probe(Budget(2), ProbeContext(launch_command=str(script)))
    assert result.facts["nccl_algo"] == "Tree" and result.facts["trace_buffer_set"] is True
    assert result.source == "this shell with the exports of run.sh, not the running job"
