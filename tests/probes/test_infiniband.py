import time

from trainmedic.probes import infiniband
from trainmedic.probes.base import Budget

from .helpers import check_types, fixture_path, fixture_text


def from_fixture(name: str):
    result = infiniband.build_result(infiniband.parse_ibstat(fixture_text(name)), "", "ibstat")
    check_types(result)
    return result


def test_h100_node_with_ethernet_ports_down():
    result = from_fixture("ibstat_h100_some_down.txt")
    f = result.facts
    assert f["ports"] == 12 and f["ports_down"] == 3 and f["ib_ports_down"] == 0
    assert f["min_rate_gbps"] == 100.0  # the active Ethernet port
    assert "mlx5_2/1 (Ethernet, Disabled)" in f["down_ports"]
    assert result.status == "warn"


def test_infiniband_port_down_fails():
    result = from_fixture("ibstat_mlx4_port_down.txt")
    assert result.facts["ib_ports_down"] == 1 and result.status == "fail"
    assert result.facts["min_rate_gbps"] == 56.0


def test_partial_output_with_error_line_still_parses():
    result = from_fixture("ibstat_partial_with_error.txt")
    assert result.facts["ports"] == 1 and result.facts["min_rate_gbps"] == 200.0
    assert result.status == "ok"


def test_ibv_devinfo_fallback(fakebin, tmp_path):
    both = fixture_text("ibv_devinfo_roce_active.txt") + fixture_text("ibv_devinfo_port_down.txt")
    (tmp_path / "devinfo.txt").write_text(both)
    fakebin("ibv_devinfo", f'/bin/cat "{tmp_path / "devinfo.txt"}"')  # no ibstat on PATH
    result = infiniband.probe(Budget(5))
    check_types(result)
    assert result.facts["ports"] == 2 and result.facts["ports_down"] == 1
    assert result.facts["ib_ports_down"] == 0  # the down port is Ethernet (RoCE)
    assert result.facts["down_ports"] == ["mlx5_12/1 (Ethernet, PORT_DOWN)"]
    assert "min_rate_gbps" not in result.facts  # plain ibv_devinfo shows no rate
    assert result.status == "warn" and "ibv_devinfo" in result.summary


def test_probe_uses_ibstat_first(fakebin):
    fakebin("ibstat", f'/bin/cat "{fixture_path("ibstat_h100_some_down.txt")}"')
    fakebin("ibv_devinfo", "exit 99")
    assert infiniband.probe(Budget(5)).facts["ports"] == 12


def test_missing_garbage_and_hang(fakebin):
    result = infiniband.probe(Budget(5))
    assert result.status == "unavailable" and "not an InfiniBand node" in result.summary
    fakebin("ibstat", "echo 'ibpanic: [1] main: stat of IB device failed' >&2; exit 1")
    assert "ibpanic" in infiniband.probe(Budget(5)).summary
    fakebin("ibstat", "/bin/sleep 600")
    start = time.monotonic()
    assert infiniband.probe(Budget(0.8)).status == "unavailable"
    assert time.monotonic() - start < 2
