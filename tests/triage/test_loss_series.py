"""Loss-series parsing and spike/NaN/collapse detection.

The series here are synthetic (generated in the test, in the real Megatron-LM / HF Trainer line
formats quoted in tests/fixtures/triage/megatron_*.log and hf_trainer_nan.log).
"""

from __future__ import annotations

import math
import random

import pytest

from trainmedic.triage import triage_text
from trainmedic.triage.loss_series import MAX_POINTS, LossTracker
from trainmedic.triage.sparkline import sparkline


def megatron_line(it: int, loss: float, *, grad: float = 0.8, scale: float = 1.0,
                  skipped: int = 0, nans: int = 0) -> str:
    return (f" [2024-05-01 12:00:00] iteration {it:8d}/  100000 | consumed samples: "
            f"{it * 512:12d} |"
            f" elapsed time per iteration (ms): 4247.9 | learning rate: 2.999E-04 | global batch "
            f"size:   512 | lm loss: {loss:.6E} | loss scale: {scale:.1f} | grad norm: {grad:.3f} |"
            f" number of skipped iterations: {skipped:3d} | number of nan iterations: {nans:3d} |")


def decline(n: int, seed: int = 0) -> list[float]:
    """A normal run: fast early decline, then a slow one, with ~2 % multiplicative noise."""
    rnd = random.Random(seed)
    return [(2.0 + 8.0 * math.exp(-i / 60)) * (1 + rnd.gauss(0, 0.02)) for i in range(n)]


def test_normal_decline_with_noise_has_no_spike():
    lines = [megatron_line(i + 1, v) for i, v in enumerate(decline(2000))]
    report = triage_text("\n".join(lines))
    assert report.loss.count == 2000
    assert report.loss.spikes == []
    assert report.findings == []


def test_spike_is_found_with_recovery_range_and_checkpoint():
    values = decline(3000, seed=1)
    for i in range(2400, 2430):  # a spike at iterations 2401..2430, back to normal after
        values[i] *= 3.0
    lines = ["    save_interval ................................... 500"]
    for i, v in enumerate(values):
        lines.append(megatron_line(i + 1, v))
        if (i + 1) % 500 == 0:
            lines.append(f"  successfully saved checkpoint from iteration {i + 1:7d} to /ckpt")
    report = triage_text("\n".join(lines))
    spikes = report.loss.spikes
    assert len(spikes) == 1
    sp = spikes[0]
    assert sp.start == 2401 and 2401 <= sp.peak <= 2430 and sp.end == 2431
    assert sp.checkpoint_before == 2000
    top = report.findings[0]
    assert top.link == "loss-spike#spike-recovery"
    assert "--skip-train-iteration-range 2401:2431" in top.summary
    assert "iteration 2000" in top.summary
    assert top.evidence[0].text.lstrip().startswith("[2024-05-01 12:00:00] iteration     2401/")


def test_checkpoint_guess_from_save_interval_only():
    values = decline(1200, seed=2)
    values[1000] *= 4
    lines = ["  save_interval ......... 250"]
    lines += [megatron_line(i + 1, v) for i, v in enumerate(values)]
    loss = triage_text("\n".join(lines)).loss
    assert loss.spikes[0].start == 1001
    assert "iteration 1000 (by --save-interval 250)" in loss.recovery(loss.spikes[0])


def test_unrecovered_spike_without_checkpoint_info_says_what_to_look_for():
    values = decline(600, seed=3)
    values[500:] = [v * 5 for v in values[500:]]
    loss = triage_text("\n".join(megatron_line(i + 1, v) for i, v in enumerate(values))).loss
    sp = loss.spikes[0]
    assert sp.start == 501 and sp.end is None
    assert "look for" in loss.recovery(sp)


def test_grad_norm_explosion_and_nan_iterations():
    lines = [megatron_line(i + 1, v, grad=0.8 + 0.01 * (i % 7)) for i, v in enumerate(decline(300))]
    lines.append(megatron_line(301, 2.1, grad=350.0))
    lines.append(megatron_line(302, 2.1, grad=0.8, nans=1))
    report = triage_text("\n".join(lines))
    sigs = {f.signature for f in report.findings}
    assert {"grad-norm-explosion", "loss-nan"} <= sigs
    assert report.loss.grad_explosions[0][0] == 301
    assert report.loss.nan_iterations == 1


def test_fp16_warmup_is_not_a_collapse_but_a_drive_to_one_is():
    warm = [megatron_line(i + 1, v, scale=2.0 ** max(16, 32 - i))
            for i, v in enumerate(decline(100))]
    assert not triage_text("\n".join(warm)).loss.loss_scale_collapsed
    crash = warm + [megatron_line(101 + i, 2.0, scale=2.0 ** (15 - i)) for i in range(16)]
    report = triage_text("\n".join(crash))
    assert report.loss.loss_scale_collapsed
    assert report.findings[0].link == "loss-spike#loss-scale-collapse"


def test_hf_trainer_and_plain_formats():
    t = LossTracker()
    assert t.feed("{'loss': 2.31, 'grad_norm': 1.5, 'learning_rate': 1e-05, 'epoch': 0.1}")
    assert t.feed("{'loss': nan, 'grad_norm': nan, 'learning_rate': 1e-05, 'epoch': 0.2}")
    assert not t.feed("{'eval_loss': 2.0, 'eval_runtime': 3.1, 'epoch': 0.2}")
    assert t.feed("Step   1560 | Loss: 0.5275 | LR: 3.00e-04 | GradNorm: 2.29")
    assert t.feed("Iter 25: Train loss 1.593, Learning Rate 7.000e-05, It/sec 0.999")
    a = t.analysis
    assert a.count == 4 and a.nan_count == 1 and a.grad_norm_nan_count == 1
    assert a.last_step == 25 and a.last_loss == pytest.approx(1.593)


def test_series_is_downsampled_to_a_bound_and_keeps_the_spike():
    t = LossTracker()
    for i, v in enumerate(decline(50_000, seed=4)):
        t.point(i + 1, v * (6 if i == 40_000 else 1))
    a = t.analysis
    assert len(a.points) < MAX_POINTS and a.stride > 1
    assert max(v for _s, v in a.points[len(a.points) // 2 :]) > 10  # spike still drawn
    line = sparkline([v for _s, v in a.points], width=40)
    assert len(line) <= 40 and "█" in line


def test_sparkline_marks_nan():
    assert sparkline([1.0, float("nan"), 2.0], width=3) == "▁!█"


def test_fp16_skipped_interval_without_loss_is_not_nan():
    lines = [megatron_line(i + 1, v) for i, v in enumerate(decline(50))]
    skipped = megatron_line(51, 2.0, skipped=1).replace("| lm loss: 2.000000E+00 ", "")
    assert "lm loss" not in skipped
    report = triage_text("\n".join([*lines, skipped]))
    assert report.loss.missing_loss_steps == 0 and report.findings == []
    vanished = megatron_line(52, 2.0).replace("| lm loss: 2.000000E+00 ", "")
    report = triage_text("\n".join([*lines, skipped, vanished]))
    assert report.loss.missing_loss_steps == 1
    # 50 finite steps, no grad-norm trouble, then the loss vanishes: a sudden NaN (the tree's
    # nan-loss question sends that to nan-source)
    assert report.findings[0].link == "loss-spike#nan-source"
