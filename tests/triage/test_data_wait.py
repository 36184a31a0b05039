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


def _separate(pairs: list[tuple[float, float]]) -> str:
    # the wait and the compute as separate fields (a custom loop's print of both timers)
    return "\n".join(f"load_data_time: {w:.4f}, train_step_time: {c:.3f}" for w, c in pairs)


def test_a_long_stall_that_takes_most_of_the_time_is_the_dataloader():
    pairs = [(0.0001, 0.66), (0.0001, 0.65), (0.0001, 0.64), (19.6, 0.69), (0.0002, 0.66)]
    report = triage_text(_separate(pairs))
    assert report.findings[0].link == "slow-training#dataloader"
    assert "stall" in report.findings[0].summary


def test_a_stall_on_the_first_reading_is_start_up():
    pairs = [(19.6, 0.69), (0.0001, 0.66), (0.0001, 0.65), (0.0001, 0.64), (0.0002, 0.66)]
    assert triage_text(_separate(pairs)).findings == []


def test_a_short_stall_among_long_steps_says_nothing():
    pairs = [(0.001, 3.0), (0.001, 3.1), (2.5, 3.0), (0.001, 3.2), (0.001, 3.0)]
    assert triage_text(_separate(pairs)).findings == []


def test_whole_iteration_and_wait_fields():
    lines = "\n".join(
        f"INFO - Training Epoch: [1]  [{i:4d}/1412]  lr: 0.000200  iter_time: {t:.3f}({t:.3f})"
        f"  data_wait_time: {w:.3f}({w:.3f})  loss: 1.46 (1.46)"
        for i, (t, w) in enumerate([(2.0, 1.5), (2.1, 1.6), (1.9, 1.4), (2.0, 1.5)]))
    assert triage_text(lines).findings[0].link == "slow-training#dataloader"


def test_a_stall_on_the_first_line_of_a_mid_run_excerpt_counts():
    """LeRobot's `step:9 ... updt_s:0.302 data_s:13.330`: the excerpt starts at step 9, so its
    first reading is no worker start-up (tune corpus)."""
    from .test_node_precision import tune

    text = tune("slow-training/data_s_13s_vs_update_0_3s_lerobot_1488.log")
    f = triage_text(text).findings[0]
    assert (f.link, f.signature) == ("slow-training#dataloader", "data-wait")
    assert f.details["longest"] == 13.33


def test_average_meter_time_and_data_columns():
    """PyTorch's ImageNet example prints `Time 37.476 (37.476)  Data 37.276 (37.276)`: the
    first batch of every epoch waits for the workers (tune corpus)."""
    from .test_node_precision import tune

    case = "slow-training/imagenet_example_first_batch_of_epoch_waits_38s_pytorch_8371.log"
    f = triage_text(tune(case)).findings[0]
    assert (f.link, f.signature) == ("slow-training#dataloader", "data-wait")
    assert f.details["longest"] == 38.848


def test_time_and_data_time_fields_with_dashes_between():
    """`... - time: 12.9244 - data_time: 12.4863 - lr: ...` (a detectron2-style printer)."""
    from .test_node_precision import tune

    f = triage_text(tune("slow-training/effdet_data_time_12s_stall_high_res_images_322.log")
                    ).findings[0]
    assert f.link == "slow-training#dataloader" and f.details["longest"] == 12.4863
