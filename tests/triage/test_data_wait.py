"""Iterations that mostly wait for data: the data_time share of mmengine/detectron2 lines and
Megatron's batch-generator timer. The lines follow the templates of the code that prints them
(mmengine's LogProcessor: `time: T  data_time: D`; Megatron's timers.log one-line form) and the
numbers are planted, so each test says what it expects."""

from __future__ import annotations

from trainmedic.triage import triage_text


def _mm(times: list[tuple[float, float]]) -> str:
    return "\n".join(
        f"2024/05/10 15:{40 + i:02d}:31 - mmengine - INFO - "
        f"Epoch(train)  [1][{50 * (i + 1):4d}/788]"
        f"  lr: 2.0000e-03  eta: 4:14:00  time: {t:.4f}  data_time: {d:.4f}  memory: 15943"
        f"  grad_norm: 3.4572  loss: {1.6 - i * 0.01:.4f}"
        for i, (t, d) in enumerate(times))


def test_data_time_most_of_the_step_is_the_dataloader():
    report = triage_text(_mm([(2.10, 1.70), (2.00, 1.55), (2.30, 1.90), (1.90, 1.40)]))
    assert report.findings[0].link == "slow-training#dataloader"
    assert "waiting for the next batch" in report.findings[0].summary


def test_a_small_data_time_says_nothing():
    report = triage_text(_mm([(0.82, 0.017), (0.82, 0.016), (0.83, 0.015), (0.81, 0.017)]))
    assert report.findings == []


def test_one_slow_first_batch_is_not_a_finding():
    report = triage_text(_mm([(5.0, 4.6), (0.82, 0.016), (0.83, 0.015), (0.81, 0.017)]))
    assert report.findings == []


def test_megatron_batch_generator_timer_share():
    lines = [f"    time (ms) | forward-backward: {fb:.2f} | forward-compute: {fb / 3:.2f} | "
             f"backward-compute: {fb / 2:.2f} | batch-generator: {bg:.2f} | optimizer: 12.40"
             for fb, bg in ((900.0, 610.0), (880.0, 590.0), (910.0, 640.0))]
    report = triage_text("\n".join(lines))
    assert "slow-training#dataloader" in [f.link for f in report.findings]
