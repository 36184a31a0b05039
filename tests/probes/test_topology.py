import time

from trainmedic.probes import topology
from trainmedic.probes.base import Budget

from .helpers import check_types, fixture_path, fixture_text


def parse(name: str):
    result = topology.build_result(fixture_text(name))
    check_types(result)
    return result


def test_pcie_only_rtx4090_box_goes_through_the_cpu():
    result = parse("topo_rtx4090_8gpu_sys.txt")
    f = result.facts
    assert f["gpu_count"] == 8 and f["nvlink"] is False
    assert f["pairs_via_cpu"] == 28  # every pair is SYS
    assert f["nics"] == ["NIC0", "NIC1"]
    assert f["gpus_without_near_nic"] == 8  # only PHB to a NIC: no GPUDirect RDMA anywhere
    assert result.status == "warn" and "without NVLink" in result.summary


def test_h100_hgx_is_all_nvlink_with_a_nic_per_gpu():
    result = parse("topo_h100_nv18_nics.txt")
    f = result.facts
    assert f["gpu_count"] == 8 and f["nvlink"] is True and f["min_nvlinks"] == 18
    assert f["pairs_via_cpu"] == 0 and len(f["nics"]) == 9
    assert f["gpus_without_near_nic"] == 0
    assert result.status == "ok"


def test_two_gpu_phb_with_legend():
    result = parse("topo_2gpu_phb_legend.txt")
    assert result.facts["gpu_count"] == 2 and result.facts["pairs_via_cpu"] == 1
    assert result.facts["nics"] == []
    assert "GPU0-GPU1 PHB" in result.evidence["pairs_via_cpu"]


def test_garbage_is_unknown():
    result = topology.build_result("nvidia-smi: command produced nonsense\n\x00\x01")
    assert result.status == "unknown"


def test_probe_runs_nvidia_smi_topo(fakebin):
    fakebin("nvidia-smi", f'/bin/cat "{fixture_path("topo_h100_nv18_nics.txt")}"')
    result = topology.probe(Budget(5))
    assert result.status == "ok" and result.facts["nvlink"] is True


def test_probe_failure_modes(fakebin):
    assert topology.probe(Budget(5)).status == "unavailable"  # no nvidia-smi
    fakebin("nvidia-smi", "echo 'topo: not supported' >&2; exit 3")
    assert topology.probe(Budget(5)).status == "fail"
    fakebin("nvidia-smi", "/bin/sleep 600")
    start = time.monotonic()
    result = topology.probe(Budget(0.8))
    assert result.status == "fail" and time.monotonic() - start < 2  # a hang is a node fault


def test_space_separated_matrix_with_nic_in_the_header():
    result = parse("topo_pcie_spaces_mlx4.txt")
    f = result.facts
    assert f["gpu_count"] == 5  # the excerpt holds rows GPU0-GPU4
    assert f["nics"] == ["mlx4_0"] and f["nvlink"] is False
    assert f["pairs_via_cpu"] == 8 and f["pairs_via_pcie_switch"] == 2
    assert f["gpus_without_near_nic"] == 5


def test_real_h200_output_with_an_underlined_header_is_read():
    # nvidia-smi 580.159.04 wraps the header row in ESC[4m ... ESC[0m even into a pipe; the
    # probe said "could not read the topology matrix" on the real machine before
    result = parse("topo_h200_1gpu_underlined_header.txt")
    assert result.status == "ok", result.summary
    assert result.facts["gpu_count"] == 1 and result.facts["nics"] == []
    assert "\x1b" not in result.summary
