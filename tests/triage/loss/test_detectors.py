"""Each detector on generated runs with planted events (peers review §2.1, logs A-E, and more).

The logs are written in real line formats by `gen.py`; what was planted is the expectation.
"""

from __future__ import annotations

import math

import pytest

from trainmedic.triage import triage_text
from trainmedic.triage.loss import LossTracker

from .gen import decline, hf_log, megatron_log


def links(report) -> list[str]:
    return [f.link for f in report.findings]


def log_a() -> str:
    """bf16, 4000 iterations: two spikes, a harmless bump, a grad explosion, three NaNs."""
    v = decline(4000, seed=1)
    for k in range(25):  # +1.8 at 1500, decaying over ~25 iterations
        v[1499 + k] += 1.8 * math.exp(-k / 6)
    v[2399] *= 1.3  # a one-iteration spike
    for i in range(2999, 3009):  # a +4 % data-shard bump: not a spike
        v[i] *= 1.04
    for i in (3299, 3300, 3301):
        v[i] = math.nan
    grads = [0.8 + 0.02 * ((i * 7919) % 11) / 11 for i in range(4000)]
    grads[2799] = 40.0
    return megatron_log(v, grads=grads, saves_every=500)


def test_log_a_spikes_bump_grad_and_exact_nans():
    r = triage_text(log_a())
    a = r.loss
    starts = [s.start for s in a.spikes]
    assert starts[:2] == [1500, 2400], starts
    assert all(s.recovered for s in a.spikes[:2])
    assert not [s for s in a.spikes if 2990 <= s.start <= 3020]  # the bump stays silent
    assert [g.step for g in a.grad_explosions] == [2800]
    assert [(n.start, n.end, n.iterations) for n in a.nan_runs] == [(3300, 3302, 3)]
    assert a.nan_iterations == 3
    assert a.framework == "megatron-lm"
    first = a.spikes[0]
    assert first.checkpoint_before == 1000 and first.first_bad == 1500
    assert {"loss-spike#spike-recovery", "loss-spike#nan-loss",
            "loss-spike#grad-norm-explosion"} <= set(links(r))


def test_log_a_through_a_file_reads_the_same_as_pasted(tmp_path, use_grep):
    """The fast block reader (a file) and the line reader (pasted text) agree."""
    from trainmedic.triage import triage_paths

    text = log_a()
    path = tmp_path / "train.log"
    path.write_text(text)
    fast = triage_paths([str(path)], use_grep=use_grep).loss
    tracker = LossTracker()
    for i, line in enumerate(text.splitlines(), 1):
        tracker.feed(line, i)
    slow = tracker.finish()
    assert fast.count == slow.count == 4000 - 3
    assert [s.to_dict() | {"file": None} for s in fast.spikes] == [
        s.to_dict() | {"file": None} for s in slow.spikes]
    assert [n.iterations for n in fast.nan_runs] == [n.iterations for n in slow.nan_runs]
    assert fast.points == slow.points
    assert fast.spikes[0].line == 1500 + 1 + 2  # the save_interval line and two save lines


def test_log_b_fp16_scaler_fault_is_not_a_data_problem():
    """Warm-up overflows stay silent; the collapse from 2000 is the cause; no data skip."""
    n = 3000
    v = decline(n, seed=2)
    for i in range(2100, n):
        v[i] += (i - 2100) * 0.002  # the loss drifts up while the scale collapses
    scales = []
    s = 2.0 ** 32
    for i in range(n):
        if i < 16:
            s = s / 2  # the start-up search
        elif 2000 <= i < 2016:
            s = max(1.0, s / 2 ** 1)
        scales.append(max(s, 1.0))
    skipped = set(range(1, 17))
    r = triage_text(megatron_log(v, scales=scales, skipped=skipped, saves_every=500))
    a = r.loss
    assert [e.kind for e in a.scale_events] == ["scale-collapse"]
    assert a.scale_events[0].start >= 2000
    assert a.recoveries[0].action == "fix-scaler"
    assert all(rec.action != "skip-data" or rec.skip[0][0] < 2000 for rec in a.recoveries)
    assert r.findings[0].link == "loss-spike#loss-scale-collapse"
    assert "not a data problem" in r.findings[0].summary
    assert "--iterations-to-skip" not in r.findings[0].summary


def test_fp16_start_up_search_stays_silent():
    v = decline(600, seed=3)
    scales = [2.0 ** max(16, 32 - i) for i in range(600)]
    r = triage_text(megatron_log(v, scales=scales, skipped=set(range(1, 17))))
    assert r.loss.scale_events == [] and r.findings == []


def test_mid_run_overflow_burst_is_reported():
    v = decline(2000, seed=4)
    scales = [65536.0] * 2000
    for k, i in enumerate(range(1200, 1206)):
        for j in range(i, 2000):
            scales[j] = 65536.0 / 2 ** (k + 1)
    r = triage_text(megatron_log(v, scales=scales, skipped=set(range(1200, 1206))))
    kinds = [e.kind for e in r.loss.scale_events]
    assert kinds == ["overflow-burst"], kinds
    assert r.loss.scale_events[0].start == 1201  # scales[i] is iteration i + 1's
    assert "loss-spike#loss-scale-collapse" in links(r)


def test_log_c_hf_stdout_uses_global_steps_and_hf_recovery():
    v = decline(3000, seed=5, noise=0.01)
    for i in range(1800, 1821):
        v[i] *= 2.0
    grads = [1.2] * 3000
    text = hf_log(v[:2700], logging_steps=10, grads=grads, saves_every=500, total=3000)
    tail = [{"loss": 0.0, "grad_norm": math.nan, "learning_rate": 1e-05, "epoch": 0.9}] * 5
    text += "\n".join(f"{d}\n 90%|#| {2700 + 10 * k}/3000 [05:00<00:30,  2.00it/s]"
                      for k, d in enumerate(tail, 1)) + "\n"
    r = triage_text(text)
    a = r.loss
    assert a.framework == "hf-trainer"
    assert a.spikes[0].start in (1810, 1820)  # the logged points averaging steps 1801-1820
    assert a.grad_norm_nan_count == 5 and a.last_zero_loss_with_nan_grad
    spike = next(f for f in r.findings if f.signature == "loss-spike")
    assert "resume_from_checkpoint" in spike.summary and "out/checkpoint-1500" in spike.summary
    assert "--iterations-to-skip" not in spike.summary and "--skip-train" not in spike.summary
    nan = next(f for f in r.findings if f.signature == "loss-nan")
    assert "logging_nan_inf_filter" in nan.summary


@pytest.mark.parametrize("v5", [False, True], ids=["transformers-4", "transformers-5"])
def test_hf_dicts_with_the_bar_give_global_steps(v5):
    v = decline(400, seed=6)
    a = triage_text(hf_log(v, logging_steps=10, v5=v5)).loss
    assert a.count == 40 and a.first_step == 10 and a.last_step == 400


def healthy(n: int, seed: int) -> list[float]:
    """Warm-up decline, a cosine LR schedule's slow tail, and two data-shard bumps of 3 %."""
    v = decline(n, seed=seed, noise=0.015)
    for i in range(n):
        v[i] *= 1 - 0.05 * (1 - math.cos(math.pi * i / n)) / 2
    for lo in (n // 3, 2 * n // 3):
        for i in range(lo, lo + 40):
            v[i] *= 1.03
    return v


@pytest.mark.parametrize("interval", [1, 10])
def test_log_d_healthy_noisy_run_stays_silent(interval):
    v = healthy(6000, seed=7)
    times = [4247.9 * (1 + 0.02 * ((i * 31) % 7) / 7) for i in range(6000)]
    r = triage_text(megatron_log(v, interval=interval, times=times, saves_every=1000))
    assert r.findings == [], [f.summary for f in r.findings]
    assert r.loss.log_interval == interval


def test_log_e_slow_divergence_then_exact_nans():
    n = 3400
    v = decline(n, seed=8)
    for i in range(1500, 3100):
        v[i] += 2.0 * (i - 1500) / 1600
    for i in range(3100, n):
        v[i] = math.nan
    r = triage_text(megatron_log(v, saves_every=500))
    a = r.loss
    assert a.divergence is not None and 1400 <= a.divergence.start <= 1800
    assert a.spikes == []
    assert a.nan_iterations == n - 3100 and len(a.nan_runs) == 1
    assert "loss-spike#spike-when" in links(r)


def test_log_interval_10_counts_nans_once_and_sees_a_22_percent_spike():
    v = decline(3000, seed=9, noise=0.01)
    for i in (2003, 2004, 2005, 2006):  # four NaN iterations inside the line of 2010
        v[i] = math.nan
    for i in range(2500, 2510):  # +22 % over one whole interval
        v[i] *= 1.22
    r = triage_text(megatron_log(v, interval=10, saves_every=500))
    a = r.loss
    assert a.log_interval == 10
    assert [(n.start, n.iterations) for n in a.nan_runs] == [(2010, 4)]
    assert a.nan_iterations == 4
    nan = next(f for f in r.findings if f.signature == "loss-nan")
    assert nan.summary.startswith("4 NaN/inf iterations at 1 logged points")
    assert [s.start for s in a.spikes] == [2510]
    assert a.spikes[0].first_bad == 2501
    assert a.recoveries[-1].skip == [(2001, 2010), (2501, 2510)]


def test_step_time_regression():
    v = decline(5000, seed=10)
    times = [4000.0 if i < 2000 else 4000.0 * (1 + (i - 2000) / 3000) for i in range(5000)]
    r = triage_text(megatron_log(v, times=times))
    t = r.loss.step_time
    assert t is not None and t.ratio > 1.5 and 1800 <= t.start <= 2800
    assert "slow-training#step-time-creep" in links(r)  # the node for a growing step time


def test_unrecovered_spike_without_saves_says_so():
    v = decline(800, seed=11)
    v[600:] = [x * 5 for x in v[600:]]
    a = triage_text(megatron_log(v)).loss
    sp = a.spikes[0]
    assert sp.start == 601 and sp.end is None
    assert "no checkpoint saved before step 601" in a.recovery(sp)


def test_series_stays_bounded_and_keeps_the_spike():
    from trainmedic.triage.loss.detect import MAX_POINTS, SeriesAnalyzer

    s = SeriesAnalyzer()
    for i, x in enumerate(decline(50_000, seed=12)):
        s.point(i + 1, x * (6 if i == 40_000 else 1))
    s.finish()
    a = s.a
    assert len(a.points) < MAX_POINTS and a.stride > 1
    assert max(x for _s, x in a.points[len(a.points) // 2:]) > 10


def test_worker_processes_read_the_same_as_one(tmp_path, monkeypatch):
    """The parallel block reader (used from 4 CPUs on files of 64 MiB and more) is forced
    here on a small file with tiny segments: the analysis is the same as one process's."""
    from trainmedic.triage.loss import megatron

    v = decline(30_000, seed=41)
    for i in range(20_000, 20_040):
        v[i] *= 3
    v[25_000] = math.nan
    path = tmp_path / "train.log"
    path.write_text(megatron_log(v, saves_every=1000))

    def analyse():
        t = LossTracker()
        with open(path, "rb") as f:
            t.read_megatron(f, str(path), path=str(path))
        return t.finish().to_dict()

    monkeypatch.setattr(megatron, "BLOCK", 64 << 10)
    one = analyse()
    monkeypatch.setattr(megatron, "_workers", lambda size: 2)
    monkeypatch.setattr(megatron, "SEGMENT", 200 << 10)
    many = analyse()
    assert many == one
    assert one["count"] == 30_000 - 1 and one["spikes"][0]["line"] == 20_001 + 1 + 20


# -- short excerpts: too few points for a robust level ---------------------------------------
def _short(losses, grads=None):
    from trainmedic.triage.loss.detect import SeriesAnalyzer

    s = SeriesAnalyzer()
    for i, x in enumerate(losses):
        s.point((i + 1) * 10, x, grad=grads[i] if grads else None)
    s.finish()
    return s.a


def test_short_excerpt_grad_norm_jump_is_an_explosion():
    a = _short([2.31, 2.28, 2.30], grads=[1.2, 1.1, 900.0])
    assert [g.step for g in a.grad_explosions] == [30]


def test_short_excerpt_grad_norm_wobble_is_not():
    a = _short([2.31, 2.28, 2.30, 2.27], grads=[1.2, 6.0, 9.5, 1.0])
    assert a.grad_explosions == []


def test_short_excerpt_loss_jump_after_three_points_is_a_spike():
    a = _short([2.1, 2.0, 1.9, 1.95, 7.5, 2.0])
    assert [sp.start for sp in a.spikes] == [50]


def test_first_steps_swinging_are_not_a_spike():
    """A run's first steps swing widely: no short-excerpt spike before three points."""
    a = _short([0.68, 2.46, 5.34, 1.02, 0.69, 0.69])
    assert a.spikes == []
