import time

from trainmedic.probes import kernel_xid
from trainmedic.probes.base import Budget

from .helpers import check_types, fixture_path, fixture_text


def parse(name: str):
    result = kernel_xid.parse_log(fixture_text(name))
    check_types(result)
    return result


def test_xid_79_is_fatal_and_fallen_off_the_bus():
    result = parse("dmesg_xid79.txt")
    assert result.facts["codes"] == [79] and result.facts["count"] == 1
    assert result.facts["fatal"] is True and result.facts["fallen_off_bus"] is True
    assert result.status == "fail" and "drain the node" in result.summary


def test_multiline_fallen_off_the_bus_without_xid():
    result = parse("dmesg_fallen_off_bus_no_xid.txt")
    assert result.facts["count"] == 0 and result.facts["fallen_off_bus"] is True
    assert result.status == "fail" and "fallen off the bus" in result.evidence["fallen_off_bus"]
    assert parse("dmesg_fallen_legacy.txt").facts["fallen_off_bus"] is True


def test_xid_63_row_remap_is_an_ecc_event():
    result = parse("dmesg_xid63_row_remap.txt")
    assert result.facts["codes"] == [63] and result.facts["ecc"] is True
    assert "reset" in result.evidence["codes"]


def test_application_xids_warn_without_draining():
    result = parse("dmesg_xid_31_32.txt")
    assert result.facts["codes"] == [31, 32] and result.facts["count"] == 3
    assert result.facts["fatal"] is False and result.status == "warn"
    assert "Xid 32 ×2 on PCI:0000:01:00" in result.evidence["codes"]


def test_clean_log_is_ok():
    log = "[    0.000000] Linux version 6.8.0\n[    1.0] usb 1-1: new device\n"
    result = kernel_xid.parse_log(log)
    assert result.status == "ok" and result.facts["count"] == 0 and result.facts["codes"] == []


def test_dmesg_denied_falls_back_to_journalctl(fakebin):
    fakebin("dmesg", "echo 'dmesg: read kernel buffer failed: Operation not permitted' >&2; exit 1")
    fakebin("journalctl", f'/bin/cat "{fixture_path("dmesg_xid79.txt")}"')
    result = kernel_xid.probe(Budget(5))
    assert result.facts["fallen_off_bus"] is True and "(from journalctl)" in result.summary


def test_both_denied_is_unavailable_with_a_root_hint(fakebin):
    fakebin("dmesg", "echo 'dmesg: read kernel buffer failed: Operation not permitted' >&2; exit 1")
    fakebin("journalctl", "echo 'No journal files were opened due to insufficient permissions.' >&2"
            "; exit 1")
    result = kernel_xid.probe(Budget(5))
    assert result.status == "unavailable"
    assert "Operation not permitted" in result.summary and "sudo dmesg" in result.summary


def test_missing_tools_non_executable_and_hang(fakebin):
    assert kernel_xid.probe(Budget(5)).status == "unavailable"
    fakebin("dmesg", "echo hi", executable=False)
    assert kernel_xid.probe(Budget(5)).status == "unavailable"
    fakebin("dmesg", "/bin/sleep 600")
    start = time.monotonic()
    result = kernel_xid.probe(Budget(0.8))
    assert result.status == "unavailable" and "timed out" in result.summary
    assert time.monotonic() - start < 2
