"""Silent failures that show only as numbers over time: a loss at chance level, a throughput far
below what the hardware gives. Each rule on the tune case that showed the gap (tests/corpus,
tune split; source URL on each case's line 1) and on logs that must stay silent."""

from __future__ import annotations

import math
import sys
from pathlib import Path

from trainmedic.triage import triage_text
from trainmedic.triage.trends import chance

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
sys.path.insert(0, str(CORPUS))
from corpus import load_cases, read_case  # noqa: E402


def findings(relative: str) -> list[tuple[str, str]]:
    case = read_case(CORPUS / "cases" / relative)
    assert case.split == "tune"  # unit tests read tune cases only
    return [(f.link, f.signature) for f in triage_text(case.excerpt).findings]


def tune_healthy() -> list:
    return [c for c in load_cases() if c.healthy and c.split == "tune"]


# ---- the loss at ln(k) -------------------------------------------------------------------

def test_a_binary_loss_hovering_at_ln2_is_chance_level():
    """snorkel #870: per-batch BCE between 0.67 and 0.95, median 0.706, for 22 batches: ln 2,
    a 50/50 guess. Not one value repeats, so only the chance level says the model is stuck."""
    assert findings("convergence/bce_loss_hovers_ln2_bilstm_snorkel_870.log")[0] == (
        "convergence#flat-loss", "loss-chance")


def test_a_plateau_at_ln10_names_the_uniform_guess():
    """A loss that stays at 2.302 is the plateau's finding; its summary names ln 10."""
    case = read_case(CORPUS / "cases" / "convergence/loss_flat_at_ln10_example_not_learning_"
                     "sianet_3.log")
    top = triage_text(case.excerpt).findings[0]
    assert top.link == "convergence#flat-loss" and "ln 10" in top.summary


def _series(values: list[float], first: int = 1) -> list[tuple[int, float]]:
    return [(first + i, v) for i, v in enumerate(values)]


def test_a_loss_falling_through_ln10_is_not_chance_level():
    """A healthy classifier starts near ln k and falls through it: the late readings go on
    falling, so they are no floor."""
    falling = [2.6, 2.5, 2.45, 2.4, 2.37, 2.34, 2.32, 2.31, 2.30, 2.29, 2.28, 2.27]
    assert chance(_series(falling, 20)) is None
    assert chance(_series([*falling, 2.1, 1.9, 1.7, 1.5], 20)) is None


def test_the_first_steps_of_a_language_model_sit_at_ln_vocab_and_stay_silent():
    """Every freshly initialised GPT-2 starts at ln 50257 = 10.82: the first ten iterations
    there are the start of a run, not a stuck one."""
    start = [10.95, 10.93, 10.94, 10.92, 10.93, 10.91, 10.92, 10.93, 10.92, 10.91]
    assert chance(_series(start)) is None
    assert chance(_series(start, 300)) is not None  # the same numbers 300 steps in are stuck


def test_a_noisy_loss_that_dips_below_ln2_is_learning():
    """A fine-tuning loss wandering around 0.69 that goes well below it has learnt something
    (a chance-level loss has a floor at ln k)."""
    noisy = [0.82, 0.75, 0.71, 0.69, 0.72, 0.61, 0.70, 0.74, 0.58, 0.69, 0.71, 0.66]
    assert chance(_series(noisy, 100)) is None


def test_chance_levels_are_the_logs_of_class_counts():
    found = chance(_series([2.30256] * 10, 5))
    assert found is not None and found["classes"] == 10
    assert math.isclose(found["chance"], math.log(10))


def test_no_tune_healthy_log_is_called_chance_level():
    """The healthy logs of the tune split (real training with a falling loss) stay silent."""
    for case in tune_healthy():
        sigs = {f.signature for f in triage_text(case.excerpt).findings}
        assert "loss-chance" not in sigs, case.name


# ---- a run reported slow: the log's own numbers answer the tree's questions ---------------

def slow_top(relative: str) -> tuple[str, str]:
    case = read_case(CORPUS / "cases" / relative)
    assert case.split == "tune"
    top = triage_text(case.excerpt, symptom="slow").findings[0]
    return top.link, top.summary


def test_slow_with_forward_taking_most_of_each_step_is_compute_bound():
    """WeatherGenerator #668: Forward 77 s of a 99 s step; the 12 s of data are the first
    batch's (the loader's workers still starting), so the time goes to compute."""
    link, summary = slow_top("slow-training/manual_timers_forward_77s_per_batch_rank_prefix_"
                             "weathergen_668.log")
    assert link == "slow-training#compute-bound" and "compute" in summary


def test_slow_with_megatrons_batch_generator_taking_a_sixth_is_the_dataloader():
    """bigcode Megatron #28: batch-generator up to 818 ms of a 5177 ms forward-backward in the
    (min, max) timer block: getting the next batch takes an unusual share."""
    link, _summary = slow_top("slow-training/megatron_timers_batch_generator_broadcast_data_"
                              "ul2_bigcode_28.log")
    assert link == "slow-training#dataloader"


def test_slow_with_mfu_under_one_percent_is_compute_bound():
    """nanoGPT #466: `mfu 0.96%` on every line: the GPUs reach under 1% of peak."""
    link, summary = slow_top("slow-training/mfu_under_1pct_old_gpus_nanogpt_466.log")
    assert link == "slow-training#compute-bound" and "0.96%" in summary


def test_slow_with_one_step_six_times_the_others_is_a_pause():
    """equinox #1145: a flat 8 ms step with one 50 ms step: a pause (the garbage collector),
    the tree's answer for spikes."""
    link, _summary = slow_top("slow-training/step_duration_spike_with_gc_generation_equinox_"
                              "1145.log")
    assert link == "slow-training#manual-gc"


def test_a_growing_step_time_comes_before_a_timers_share():
    """Megatron #184: backward-params-all-reduce is half of each step, but the step time grows
    from line to line: the change through the run is what the tree asks about first."""
    link, _summary = slow_top("slow-training/megatron_t5_timers_forward_compute_growing_"
                              "184.log")
    assert link == "slow-training#step-time-creep"


def test_slow_with_only_a_throughput_figure_still_asks_for_timers():
    """DeepSpeed #255: SamplesPerSec alone says nothing about where the time goes."""
    link, _summary = slow_top("slow-training/ds_samples_per_sec_13_bart_4gpu_wall_clock_"
                              "255.log")
    assert link == "slow-training#measure-timers"


def test_low_mfu_and_compute_heavy_timers_alone_are_no_finding():
    """A small model's MFU is low and compute is most of every step in a healthy run: without
    the user saying the run is slow, these numbers make no finding (tune healthy logs)."""
    for name in ("healthy/torchtitan_rank0_step_loss_grad_norm_mfu_lines_3393.log",
                 "healthy/deepspeed_wall_clock_breakdown_timers_tqdm_accelerate_1589.log"):
        case = read_case(CORPUS / "cases" / name)
        assert case.split == "tune"
        assert triage_text(case.excerpt).findings == [], name


# ---- Chainer's PrintReport table ----------------------------------------------------------

CHAINER = "convergence/chainer_cifar_lr_0_5_loss_2_30256_every_epoch_4424.log"


def test_a_printreport_table_at_ln10_every_epoch_is_a_flat_loss(tmp_path, use_grep):
    """chainer #4424: `epoch main/loss validation/main/loss ...` then a row of numbers per
    epoch, main/loss 2.30256 from epoch 3 on. The rows hold no word a prefilter finds: they
    are read again from the header, from a file (grep or Python) as from pasted text."""
    from trainmedic.triage import triage_paths

    case = read_case(CORPUS / "cases" / CHAINER)
    assert case.split == "tune"
    log = tmp_path / "train.log"
    log.write_text(case.excerpt)
    for report in (triage_text(case.excerpt), triage_paths([str(log)], use_grep=use_grep)):
        top = report.findings[0]
        assert top.link == "convergence#flat-loss" and "ln 10" in top.summary


def test_rows_that_do_not_fit_the_header_are_not_read():
    """Only rows with as many numbers as the header has columns are the table's."""
    from trainmedic.triage.loss import LossTracker

    tracker = LossTracker()
    tracker.begin("t.log")
    tracker.feed("epoch       main/loss   validation/main/loss  elapsed_time", 1)
    assert tracker.lines.table_waiting()
    assert not tracker.lines.table_row("1           2.46634     2.30259", 2)  # one short
    assert not tracker.lines.table_row("total [####.....] 12.5%", 3)
    assert tracker.lines.table_row("1           2.46634     2.30259               61.067", 4)
    assert tracker.finish().points == [(1, 2.46634)]


# ---- DeepSpeed's throughput timer ---------------------------------------------------------

def test_deepspeeds_current_throughput_is_read_as_time_per_sample():
    """DeepSpeed's timer.py line (as printed in a public example's README, 2022): the current
    figure is read, not the running average that lags it; older releases print only
    `SamplesPerSec=` (DeepSpeed #255, a tune case)."""
    from trainmedic.triage.trends import StepTimes

    line = ("[2022-08-29 06:58:56,176] [INFO] [timer.py:198:stop] 0/20, RunningAvgSamplesPerSec="
            "232.7340551694273, CurrSamplesPerSec=227.48090316379353, MemAllocated=0.36GB, "
            "MaxMemAllocated=15.06GB")
    st = StepTimes()
    assert st.feed(line, "ds.log", 1)
    assert st.source == "throughput" and math.isclose(st.values[0], 1 / 227.48090316379353)
    case = read_case(CORPUS / "cases" / "slow-training/ds_samples_per_sec_13_bart_4gpu_wall_"
                     "clock_255.log")
    st = StepTimes()
    for n, text in enumerate(case.excerpt.splitlines(), 1):
        st.feed(text, "x.log", n)
    assert st.source == "throughput" and len(st.values) == 2 and st.creep() is None


def test_a_healthy_deepspeed_throughput_line_stays_silent():
    case = read_case(CORPUS / "cases" / "healthy/deepspeed_step_skipped_warmup_samplespersec_"
                     "849.log")
    assert case.split == "tune" and triage_text(case.excerpt).findings == []


def test_a_falling_throughput_is_a_creeping_step_time():
    """Samples per second falling by a third through the run: the step-time creep, said in
    samples per second."""
    from trainmedic.triage.trends import StepTimes

    st = StepTimes()
    for i, rate in enumerate([30.1, 30.0, 29.5, 28.0, 26.2, 24.9, 23.0, 21.7, 20.4]):
        st.feed(f"0/{(i + 1) * 10}, SamplesPerSec={rate}", "ds.log", i + 1)
    creep = st.creep()
    assert creep is not None and creep["form"] == "throughput" and creep["ratio"] > 1.3


# ---- a run reported as not learning -----------------------------------------------------

def test_not_learning_with_the_learning_rate_printed_as_0_is_lr_too_small():
    """FastChat #2558: `{'loss': 0.0, 'learning_rate': 0.0, 'epoch': 0.0}` twice. Two lines are
    too few for a finding from the log alone (a schedule's edge prints one or two), but with
    the user saying it does not learn they answer the flat-loss question."""
    case = read_case(CORPUS / "cases" / "convergence/hf_trainer_loss_0_lr_0_lora_t5_fp16_"
                     "fastchat_2558.log")
    assert case.split == "tune"
    assert triage_text(case.excerpt).findings == []
    top = triage_text(case.excerpt, symptom="not-learning").findings[0]
    assert top.link == "convergence#lr-too-small" and top.evidence


def test_not_learning_with_a_nonzero_learning_rate_is_not_lr_too_small():
    """LaBraM #64 prints train_lr 2.5e-05 and up: the learning rate is not the answer."""
    case = read_case(CORPUS / "cases" / "convergence/eeg_pretrain_loss_barely_falls_mlm_acc_0_"
                     "004_labram_64.log")
    links = [f.link for f in triage_text(case.excerpt, symptom="not-learning").findings]
    assert "convergence#lr-too-small" not in links
