"""Run one probe while its only external tool is missing, unusable, failing, talking garbage
or hanging; shared by the tests of probes that call a single program."""

from __future__ import annotations

import time

from trainmedic.probes.base import ProbeResult
from trainmedic.probes.runner import run_probes

from .helpers import check_types

BODIES = {
    "missing": None,
    "not-executable": "echo never runs",
    "error-exit": "echo 'tool: boom' >&2; exit 3",
    "garbage": "/usr/bin/printf '\\377\\000garbage ,,,\\n'",
    "hang": "/bin/sleep 600",
}


def run_with_broken_tool(fakebin, tool: str, probe: str, mode: str,
                         timeout: float = 1.0) -> ProbeResult:
    """The probe's result, checked to come back within its time limit with declared facts."""
    body = BODIES[mode]
    if body is not None:
        fakebin(tool, body, executable=mode != "not-executable")
    start = time.monotonic()
    result = run_probes([probe], timeout=timeout)[0]
    assert time.monotonic() - start < 2 * timeout
    check_types(result)
    return result
