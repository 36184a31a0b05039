"""Progress lines read into the loss series and the learning-rate readings: torchvision's
MetricLogger, one summary line per epoch, HF Trainer dicts with the learning rate at 0. The lines
follow the templates of the code that prints them and the numbers are planted, so each test says
what it expects."""

from __future__ import annotations

from trainmedic.triage import triage_text


def _hf(rows: list[tuple[float, float, float]]) -> str:
    return "\n".join(f"{{'loss': {loss}, 'grad_norm': {g}, 'learning_rate': {lr}, 'epoch': "
                     f"{0.1 * (i + 1):.2f}}}" for i, (loss, g, lr) in enumerate(rows))


def test_learning_rate_zero_line_after_line_is_lr_too_small():
    rows = [(2.31, 1.2, 0.0), (2.30, 1.1, 0.0), (2.32, 1.3, 0.0), (2.31, 1.2, 0.0)]
    report = triage_text(_hf(rows))
    assert report.findings[0].link == "convergence#lr-too-small"


def test_learning_rate_and_grad_norm_zero_leave_the_question_open():
    rows = [(12.1, 0.0, 0.0), (12.0, 0.0, 0.0), (12.0, 0.0, 0.0), (12.1, 0.0, 0.0)]
    assert triage_text(_hf(rows)).findings[0].link == "convergence#flat-loss"


def test_warm_up_from_zero_is_not_a_finding():
    rows = [(2.31, 1.2, 0.0), (2.20, 1.1, 1e-5), (2.05, 1.3, 2e-5), (1.90, 1.2, 3e-5)]
    assert triage_text(_hf(rows)).findings == []


def test_two_zero_readings_at_the_end_of_a_schedule_are_not_a_finding():
    rows = [(1.31, 0.9, 2e-6), (1.30, 0.9, 1e-6), (1.30, 0.8, 0.0), (1.29, 0.9, 0.0)]
    assert triage_text(_hf(rows)).findings == []


def _metric_logger(lrs: list[str]) -> str:
    return "\n".join(
        f"Epoch: [15]  [{10 * i:3d}/209]  eta: 0:02:13  lr: {lr}  loss: {0.57 + 0.01 * (i % 2):.4f}"
        f" (0.5800)  loss_classifier: 0.0609 (0.0621)  time: 0.6731  data: 0.0303  max mem: 6450"
        for i, lr in enumerate(lrs))


def test_torchvision_metric_logger_lr_printed_as_zero():
    report = triage_text(_metric_logger(["0.000000"] * 4))
    assert report.findings[0].link == "convergence#lr-too-small"


def test_torchvision_metric_logger_with_a_learning_rate_is_quiet():
    assert triage_text(_metric_logger(["0.010000"] * 4)).findings == []


def test_one_line_per_epoch_with_an_identical_loss_is_no_update():
    lines = "\n".join(f"Epoch {e}/300: 100%|██████████| 8144/8144 [1:24:14<00:00,  1.61 batches/s, "
                      f"Loss 6.2739, Raw Acc (0.39, 2.49), Val Loss {44.7 + e % 3 * 0.1:.4f}]"
                      for e in range(85, 91))
    assert triage_text(lines).findings[0].link == "convergence#no-update"


def test_one_line_per_epoch_with_a_falling_loss_is_quiet():
    lines = "\n".join(f"Epoch: {e}, Loss: {2.3 / e:.4f}, Accuracy: {0.1 * e:.2f}"
                      for e in range(1, 8))
    assert triage_text(lines).findings == []


def test_a_trainer_dict_grad_norm_jump_in_a_short_excerpt():
    rows = [(0.094, g, 5e-4) for g in (3.6, 3.8, 3.1, 2.5, 2.4, 2.5, 5.7)] + [(0.10, 237.6, 5e-4)]
    report = triage_text(_hf(rows))
    assert report.findings[0].link == "loss-spike#grad-norm-explosion"


def test_a_fivefold_grad_norm_wobble_in_a_short_excerpt_is_quiet():
    grads = (2.4, 2.0, 1.8, 2.1, 2.2, 2.0, 2.3, 10.7, 7.2, 14.9)
    rows = [(0.09 + 0.003 * (i % 4), g, 9e-5) for i, g in enumerate(grads)]
    assert triage_text(_hf(rows)).findings == []
