"""Triage on outputs recorded on a real GPU machine (an H200, driver 580.159.04, PyTorch 2.11,
NCCL 2.28.9) by scripts/device_fixtures.sh; the source is on each fixture's first line."""

from __future__ import annotations

from pathlib import Path

from trainmedic.cli import main
from trainmedic.triage import triage_paths

DEVICE = Path(__file__).resolve().parents[1] / "fixtures" / "device"


def test_a_real_pytorch_2_11_oom_goes_to_oom_and_reads_its_numbers():
    report = triage_paths([str(DEVICE / "cuda_oom_h200.log")])
    top = report.findings[0]
    assert top.link == "oom#when"  # 0 bytes cached: not fragmentation, a real shortfall
    d = top.details
    assert d["tried_mib"] == 80 * 1024 and d["allocated_mib"] == 100 * 1024
    assert d["unallocated_mib"] == 0.0 and round(d["total_mib"] / 1024, 2) == 139.80
    assert "does not fit" in top.summary


def test_a_healthy_single_gpu_nccl_init_with_no_infiniband_stays_quiet(capsys):
    # NET/IB : No device found, then sockets: normal on a machine without InfiniBand
    assert main(["triage", str(DEVICE / "nccl_debug_info_h200_1gpu.txt")]) == 0
    assert "No known failure signature" in capsys.readouterr().out


def test_a_real_torchrun_failure_names_the_cause_and_the_first_rank():
    # torchrun (PyTorch 2.11) with two ranks on one GPU: NCCL 2.28.9 refuses, ChildFailedError
    report = triage_paths([str(DEVICE / "torchrun_two_ranks_one_gpu_h200.log")])
    assert report.findings[0].link == "startup#nccl-invalid-usage"  # Duplicate GPU detected
    assert report.findings[0].ranks == [0, 1]
    root = report.root_cause
    assert root is not None and root["rank"] == 0 and root["host"] == "localhost"
    assert root["exitcode"] == 1
