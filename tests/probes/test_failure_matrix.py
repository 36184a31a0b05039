"""Every probe that runs a program, against every way the program can go wrong.

Whatever the tool does (missing, not executable, garbage, error exit, hang), the probe comes
back with `unavailable` or `fail` and a reason, never an exception, and within its time limit.
"""

import time

import pytest

from trainmedic.probes.runner import run_probes

from .helpers import check_types

TOOLS = {
    "gpu": ["nvidia-smi"],
    "gpu-processes": ["nvidia-smi"],
    "topology": ["nvidia-smi"],
    "kernel-xid": ["dmesg", "journalctl"],
    "infiniband": ["ibstat", "ibv_devinfo"],
    "fabric": ["nvidia-smi", "systemctl"],
    "pcie": ["nvidia-smi"],
}
TIMEOUT = 1.0

MODES = {
    "missing": (None, "not found"),
    "not-executable": ("echo never runs", "permission denied"),
    "error-exit": ("echo 'boom: device busy' >&2; exit 3", "boom"),
    "hang": ("/bin/sleep 600", "timed out"),
}


@pytest.mark.parametrize("mode", list(MODES))
def test_every_probe_survives(fakebin, mode):
    body, reason = MODES[mode]
    if body is not None:
        for tools in TOOLS.values():
            for tool in tools:
                fakebin(tool, body, executable=mode != "not-executable")
    start = time.monotonic()
    results = run_probes(list(TOOLS), timeout=TIMEOUT)
    # all probes together take about one timeout, not one each (loose bound: 2 shared cores)
    assert time.monotonic() - start < 2 * TIMEOUT
    for result in results:
        check_types(result)
        assert result.status in ("unavailable", "fail", "unknown"), (result.name, result.summary)
        if mode == "hang" and "nvidia-smi" in TOOLS[result.name]:
            # a hung nvidia-smi is a node fault (a GPU off the bus), never "n/a"
            assert result.status == "fail" and "hung" in result.summary, result.summary
        expected = reason
        if mode == "missing" and result.name == "infiniband":
            expected = "not an InfiniBand node"
        assert expected in result.summary, (result.name, result.summary)


def test_garbage_output(fakebin):
    junk = "/usr/bin/printf '\\377\\000garbage ,,, \\n=== x ===\\n'"
    for tools in TOOLS.values():
        for tool in tools:
            fakebin(tool, junk)
    results = {r.name: r for r in run_probes(list(TOOLS), timeout=TIMEOUT)}
    for name in ("gpu", "gpu-processes", "topology", "fabric", "pcie"):
        # the GPUs are there but their state cannot be told: unknown, and quoted inert
        assert results[name].status == "unknown", results[name].summary
        assert "\x00" not in results[name].summary and "\ufffd" not in results[name].summary
    assert results["infiniband"].status == "unavailable", results["infiniband"].summary
    # a kernel log of junk simply holds no Xid
    assert results["kernel-xid"].status == "ok" and results["kernel-xid"].facts["count"] == 0
