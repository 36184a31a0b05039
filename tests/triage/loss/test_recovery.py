"""The way back runs in the framework that wrote the log, and only names saved checkpoints."""

from __future__ import annotations

import argparse
import re
import shlex

import pytest

from trainmedic.triage import triage_text
from trainmedic.triage.loss.model import LossAnalysis, Spike
from trainmedic.triage.loss.recovery import for_spike, megatron_lm_skip_values, merge_ranges

from .flagsets import flag_set, parse
from .gen import decline, hf_log, megatron_log


def expand(command: str) -> list[str]:
    """The shell's work: $(seq A B) becomes the numbers, then words."""
    command = re.sub(r"\$\(seq (\d+) (\d+)\)",
                     lambda m: " ".join(map(str, range(int(m[1]), int(m[2]) + 1))), command)
    return shlex.split(command)


def spiky(fmt: str, interval: int = 1) -> LossAnalysis:
    v = decline(3000, seed=21, noise=0.01)
    for i in range(2100, 2130):
        v[i] *= 3.0
    for i in range(2600, 2610):
        v[i] *= 2.5
    return triage_text(megatron_log(v, interval=interval, saves_every=500, fmt=fmt)).loss


def test_megatron_lm_command_parses_and_skips_the_bad_range():
    a = spiky("lm")
    rec = a.recoveries[-1]
    assert a.framework == "megatron-lm" and rec.action == "skip-data"
    ns = parse("megatron-lm", expand(rec.command))
    assert ns.load == "/lustre/ckpt/gpt" and ns.ckpt_step == 2000 == rec.checkpoint
    skipped = set(ns.iterations_to_skip)
    # one earlier than the range: skipped under both indexings the releases use
    assert set(range(2101, 2131)) <= skipped and set(range(2601, 2611)) <= skipped
    assert 2100 in skipped and max(skipped) == 2610 and 2000 not in skipped
    assert "--skip-train-iteration-range" not in rec.command


def test_megatron_deepspeed_command_parses_with_merged_ranges():
    a = spiky("mds", interval=10)
    assert a.framework == "megatron"  # BigScience lines without DeepSpeed markers: fork unknown
    text = "\n".join(["[2021-06-01 12:00:00,000] [INFO] [logging.py:60:log_dist] DeepSpeed info"])
    b = triage_text(text + "\n" + megatron_log(
        [x * (3 if 2100 <= i < 2130 else 1) for i, x in enumerate(decline(3000, seed=21,
                                                                            noise=0.01))],
        interval=10, saves_every=500, fmt="mds")).loss
    assert b.framework == "megatron-deepspeed"
    rec = b.recoveries[-1]
    ns = parse("megatron-deepspeed", expand(rec.command))
    ranges = [list(map(int, r.split("-"))) for r in ns.skip_train_iteration_range]  # upstream
    assert ranges == [[2101, 2130]]
    assert ns.load == "/lustre/ckpt/gpt" and rec.checkpoint == 2000
    assert "--iterations-to-skip" not in rec.command and "--ckpt-step" not in rec.command


def test_unknown_megatron_fork_names_both_commands_each_labelled():
    a = spiky("mds")
    text = a.recoveries[-1].text
    assert "NVIDIA Megatron-LM (core 0.12+) takes `--iterations-to-skip" in text
    assert "the Megatron-DeepSpeed forks take `--skip-train-iteration-range 2101-2130" in text
    assert a.recoveries[-1].command is None


def test_several_ranges_merge_into_one_flag():
    assert merge_ranges([(30, 40), (10, 20), (21, 25), (38, 50)]) == [(10, 25), (30, 50)]
    assert megatron_lm_skip_values([(5, 6), (100, 200)]) == "4 5 6 $(seq 99 200)"


def test_hf_recovery_resumes_a_saved_checkpoint_and_says_it_cannot_skip():
    v = decline(3000, seed=22, noise=0.01)
    for i in range(2200, 2240):
        v[i] *= 3.0
    a = triage_text(hf_log(v, logging_steps=10, saves_every=500)).loss
    rec = a.recoveries[-1]
    assert rec.framework == "hf-trainer" and rec.checkpoint == 2000
    assert rec.command == 'trainer.train(resume_from_checkpoint="out/checkpoint-2000")'
    assert any("no option to skip" in n for n in rec.notes)


@pytest.mark.parametrize(("framework", "needle", "not_there"), [
    ("deepspeed", 'engine.load_checkpoint("/ck", tag="global_step1000")', "--"),
    ("lightning", 'trainer.fit(model, ckpt_path="/ck")', "--"),
    ("torchtitan", "--checkpoint.load_step 1000", "--iterations"),
])
def test_other_frameworks_resume_their_own_way(framework, needle, not_there):
    a = LossAnalysis(framework=framework, saves=[1000], save_paths={1000: "/ck"})
    rec = for_spike(a, Spike(start=1200, peak=1200, peak_value=9.0, baseline=2.0, end=1210,
                             first_bad=1200, last_bad=1209))
    assert needle == rec.command and not_there not in rec.command
    assert rec.notes and rec.skip == [(1200, 1209)]


def test_the_checkpoint_named_is_one_the_log_saved():
    v = decline(3000, seed=23)
    for i in range(2400, 2420):
        v[i] *= 3.0
    text = "    save_interval ............ 500\n" + megatron_log(v)  # no save lines at all
    a = triage_text(text).loss
    assert a.save_interval == 500 and a.recoveries[-1].checkpoint is None
    assert "no checkpoint saved before step 2401 appears in this log" in a.recoveries[-1].text
    assert "--ckpt-step" not in (a.recoveries[-1].command or "")


def test_every_flag_printed_is_in_the_framework_flag_set():
    rec = spiky("lm").recoveries[-1]
    flags = [w for w in expand(rec.command) if w.startswith("--")]
    assert flags and set(flags) <= flag_set("megatron-lm")
    assert "--skip-train-iteration-range" not in flag_set("megatron-lm")
    assert "--iterations-to-skip" not in flag_set("megatron-deepspeed")


def test_each_framework_rejects_the_others_skip_flag():
    with pytest.raises(argparse.ArgumentError):
        parse("megatron-lm", ["--skip-train-iteration-range", "1-2"])
    with pytest.raises(argparse.ArgumentError):
        parse("megatron-deepspeed", ["--iterations-to-skip", "1", "2"])


def test_iterations_to_skip_is_there_from_core_0_12():
    from trainmedic.trees import apilists

    presence = apilists.megatron().presence("--iterations-to-skip")
    assert presence[(0, 11)] is False and presence[(0, 12)] and presence[(0, 15)]


def test_scaler_fault_recovery_parses_and_skips_no_data():
    n = 3000
    v = decline(n, seed=24)
    for i in range(2100, n):
        v[i] += (i - 2100) * 0.002
    scales = [65536.0 if i < 2000 else max(1.0, 65536.0 / 2 ** (i - 1999)) for i in range(n)]
    a = triage_text(megatron_log(v, scales=scales, saves_every=500)).loss
    rec = a.recoveries[0]
    assert rec.action == "fix-scaler" and rec.skip == [] and rec.checkpoint == 2000
    ns = parse("megatron-lm", expand(rec.command))
    assert ns.bf16 and ns.ckpt_step == 2000  # saved before the scale fell at 2001
    calmer = rec.notes[0].split(": ", 1)[1]
    assert parse("megatron-lm", expand(calmer)).hysteresis == 2
