"""Peak memory stays bounded whatever the log size (50 MB vs 200 MB generated streams)."""

from __future__ import annotations

import tracemalloc

import pytest

from trainmedic.triage.scanner import Scanner
from trainmedic.triage.sources import grep_available

from .conftest import FIXTURES

NOISE_LINES = (FIXTURES / "nccl_info_noise.log").read_bytes().splitlines()[1:]
OOM = (FIXTURES / "oom_fragmentation.log").read_bytes().splitlines()[1]


class GeneratedLog:
    """A file-like object that produces `size` bytes of a log without ever holding them."""

    def __init__(self, size: int) -> None:
        lines = []
        for i in range(4000):
            lines.append(NOISE_LINES[i % len(NOISE_LINES)])
            if i % 50 == 0:  # a training-progress line every 50 lines
                lines.append(b" iteration %8d/ 100000 | lm loss: 2.5E+00 | loss scale: 1.0 |" % i)
            if i % 1000 == 0:  # and some failure lines, so hits and evidence accumulate
                lines.append(OOM)
        self.block = b"\n".join(lines) + b"\n"
        self.left = size

    def read(self, n: int = -1) -> bytes:
        if self.left <= 0:
            return b""
        out = self.block[: min(len(self.block), self.left, n if n > 0 else len(self.block))]
        self.left -= len(out)
        return out


def peak_for(size: int, *, use_grep: bool = True) -> tuple[int, Scanner]:
    scanner = Scanner(use_grep=use_grep)
    tracemalloc.start()
    try:
        scanner.scan_stream(GeneratedLog(size), "generated.log")
        _cur, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak, scanner


@pytest.mark.parametrize(("use_grep", "mib"), [(True, 50), (False, 6)], ids=["grep", "python"])
def test_peak_memory_does_not_grow_with_log_size(use_grep, mib):
    """grep path: 50 MB vs 200 MB; the slower pure-Python path: 6 MB vs 24 MB."""
    if use_grep and grep_available() is None:
        pytest.skip("grep not installed")
    small, s1 = peak_for(mib << 20, use_grep=use_grep)
    large, s4 = peak_for(4 * mib << 20, use_grep=use_grep)
    def seen(s):  # the generated blocks repeat their steps: replays count as read
        return s.loss.analysis.count + s.loss.analysis.replayed_points

    assert seen(s4) > 3 * seen(s1)  # the big one was really read
    hit = s4.hits[("cuda-oom", "oom", "when")]
    assert hit.count > 3 * s1.hits[("cuda-oom", "oom", "when")].count
    assert len(hit.evidence) <= 5
    assert large < 16 << 20, large  # a few MiB: read blocks + bounded state
    assert large < small * 1.5 + (1 << 20), (small, large)
