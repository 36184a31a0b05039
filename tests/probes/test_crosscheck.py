"""Where two probes disagree, the disagreement is reported (F21)."""

from trainmedic.probes.crosscheck import HIDDEN_MIB, cross_check
from trainmedic.probes.runner import run_probes

from .helpers import cat_script, check_types, fixture_text


def most_used_mib(csv_name: str) -> tuple[int, float]:
    """(GPU index, MiB) of the fullest GPU in an nvidia-smi CSV fixture, read independently."""
    rows = [line.split(", ") for line in fixture_text(csv_name).splitlines()
            if line and not line.startswith(("#", "index"))]
    top = max(rows, key=lambda cells: float(cells[4]))
    return int(top[0]), float(top[4])


def smi_views(fakebin, topo: str) -> None:
    """nvidia-smi with 8 H100s at 71 GiB used each, no compute process listed, and `topo`."""
    fakebin("nvidia-smi", cat_script(
        ("*--query-gpu=index,name*", "query_gpu_h100_synthetic.csv"),
        ("*--query-compute-apps*", "compute_apps_header_only.csv"),
        ("topo\\ -m", topo),
    ))


def test_memory_used_but_no_process_visible_is_another_namespace(fakebin, monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    smi_views(fakebin, "topo_h100_nv18_nics.txt")
    results = {r.name: r for r in run_probes(["gpu", "gpu-processes", "topology"], timeout=5)}
    processes = results["gpu-processes"]
    check_types(processes)
    assert processes.status == "warn"
    assert "another container or PID namespace" in processes.summary
    index, used = most_used_mib("query_gpu_h100_synthetic.csv")
    assert f"GPU {index}: {used / 1024:.1f} of" in processes.evidence["hidden_memory_mib"]
    assert processes.facts["hidden_memory_mib"] == used
    # 8 GPUs in both views: nothing to say
    assert "count_matches_gpu" not in results["topology"].facts


def test_gpu_count_differs_from_the_topology_matrix(fakebin, monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    smi_views(fakebin, "topo_2gpu_phb_legend.txt")
    topology = {r.name: r for r in run_probes(["gpu", "topology"], timeout=5)}["topology"]
    check_types(topology)
    assert topology.facts["count_matches_gpu"] is False and topology.status == "warn"
    assert "shows 2 GPU(s), the gpu probe lists 8" in topology.summary


def test_nothing_to_say_when_the_views_agree_or_one_cannot_tell():
    from trainmedic.probes.base import ProbeResult

    gpu = ProbeResult("gpu", "ok", "", {"count": 2, "max_memory_used_mib": HIDDEN_MIB - 1})
    idle = ProbeResult("gpu-processes", "ok", "", {"count": 0})
    assert cross_check([gpu, idle]) == []  # an idle GPU's few hundred MiB say nothing
    busy = ProbeResult("gpu", "ok", "", {"count": 2, "max_memory_used_mib": 60000.0})
    listed = ProbeResult("gpu-processes", "warn", "", {"count": 3})
    assert cross_check([busy, listed]) == []  # the process is visible
    hung = ProbeResult("gpu", "fail", "nvidia-smi hung")
    assert cross_check([hung, idle]) == []
    unknown = ProbeResult("gpu-processes", "unknown", "", {"count": 0})
    assert cross_check([busy, unknown]) == []
    amended = cross_check([busy, idle])
    assert len(amended) == 1 and amended[0] is not idle and idle.status == "ok"  # a copy
