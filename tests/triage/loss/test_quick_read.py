"""The block reader's quick read (exact spacing, one capture, grad norms bounded in the pattern)
gives the analysis the full read gives; its bound admits exactly the values at or below it."""

from __future__ import annotations

import math
import re

import pytest

from trainmedic.triage.loss import LossTracker, megatron

from .gen import decline, megatron_log


@pytest.mark.parametrize(("bound", "width"), [
    ("3.200", 1), ("0.810", 1), ("9.990", 1), ("0.000", 1), ("1.000", 1),
    ("27.000", 2), ("10.000", 2), ("19.990", 2), ("27.000", 1), ("3.200", 2),
])
def test_grad_bound_admits_exactly_the_values_at_or_below_it(bound, width):
    pattern = megatron._at_most(bound, width)
    if pattern is None:  # no value of that many digits can be at or below the bound
        assert width > len(bound.partition(".")[0].lstrip("0") or "0")
        return
    rx = re.compile(pattern + rb"\Z")
    for v in range(0, 100_000, 7):
        text = f"{v // 1000}.{v % 1000:03d}"
        if len(text.partition(".")[0]) != width:
            continue
        assert (rx.match(text.encode()) is not None) == (float(text) <= float(bound)), text


def test_the_bound_is_never_above_the_threshold():
    line = (" [2024-05-01 12:00:00.123456] iteration        1/  100000 | lm loss: 9.1E+00 |"
            " loss scale: 1.0 | grad norm: 0.812 | number of skipped iterations:   0 |"
            " number of nan iterations:   0 |")
    lay = megatron.sniff_layout(line)
    assert lay is not None and lay.exact is not None
    for thr in (0.0015, 0.0099, 0.81, 0.8099999999999999, 3.2719, 9.999, 27.5, 1234.5):
        pattern = lay.exact.bounded(thr, 1)
        assert pattern is not None
        for v in range(0, 10_000, 3):
            text = f"{v // 1000}.{v % 1000:03d}"
            row = line.replace("0.812", text).partition("|")[2].partition("|")[2] + "\n"
            if pattern.search(row.encode()):
                assert float(text) <= thr, (thr, text)


def _log(nan_at: int) -> str:
    """bf16; grad norms that grow from 0.5 to past 10 (one digit, then two), a spike,
    explosions, a NaN: blocks the quick read takes and blocks it must leave to the full read."""
    n = 40_000
    v = decline(n, seed=11)
    for k in range(20):
        v[12_000 + k] *= 2.0
    v[nan_at] = math.nan  # the full read captures the scale from this block on
    grads = [0.5 + 12.0 * (i / n) ** 3 + 0.01 * ((i * 7919) % 13) for i in range(n)]
    for k in range(20):  # explosions: their level comes from the grad norms read before
        grads[1_000 + 1_777 * k] = 90.0
    return megatron_log(v, grads=grads, saves_every=1000)


@pytest.mark.parametrize("nan_at", [5_000, 39_500])
def test_quick_read_gives_the_full_reads_analysis(tmp_path, monkeypatch, nan_at):
    path = tmp_path / "train.log"
    path.write_text(_log(nan_at))
    monkeypatch.setattr(megatron, "BLOCK", 64 << 10)
    used = []
    quick = megatron._quick

    def counted(*args):
        cols = quick(*args)
        used.append(cols is not None)
        return cols

    def analyse():
        t = LossTracker()
        with open(path, "rb") as f:
            t.read_megatron(f, str(path), path=str(path))
        return t.finish().to_dict()

    monkeypatch.setattr(megatron, "_quick", counted)
    fast = analyse()
    assert sum(used) > len(used) * 3 // 4 and not all(used)  # both reads were exercised
    monkeypatch.setattr(megatron, "_quick", lambda *args: None)
    full = analyse()
    assert fast == full
    assert fast["count"] == 40_000 - 1
    assert [s["start"] for s in fast["spikes"]][:1] == [12_001]
    assert [g["step"] for g in fast["grad_explosions"]] == [1_001 + 1_777 * k for k in range(20)]
    assert fast["nan_iterations"] == 1
