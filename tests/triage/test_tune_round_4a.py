"""Node rules of the tune-4 round (issue 15) outside the oom tree's "when" (test_oom_when.py):
each on real tune cases of the corpus and a case that must keep its node.
"""

from __future__ import annotations

import math

import pytest

from trainmedic.triage import triage_text
from trainmedic.triage.trends import frozen_at_chance

from .test_node_precision import top, tune  # a tune case's excerpt (refuses holdout cases)


def test_a_loss_frozen_at_ln_vocab_keeps_the_flat_loss_question():
    # lit-gpt: 10.8259 on every step is ln(50257): a uniform guess scores it on any batch,
    # which does not show that the weights stopped changing
    assert top(tune("convergence/loss_constant_10_8259_pythia70m_litgpt_689.log")) == \
        "convergence#flat-loss"


@pytest.mark.parametrize("case", [
    "convergence/keras_loss_acc_identical_every_epoch_adagrad_lr1_2392.log",
    "convergence/train_loss_acc_identical_every_epoch_wsdan_25.log",
])
def test_a_loss_frozen_elsewhere_is_still_no_update(case):
    assert top(tune(case)) == "convergence#no-update"


@pytest.mark.parametrize(("value", "classes"), [
    (10.8259, 50257), (round(math.log(10), 5), 10), (5.7257, None), (11.0666, None),
])
def test_frozen_at_chance(value, classes):
    assert frozen_at_chance(value) == classes


@pytest.mark.parametrize("case", [
    "loss-spike/baichuan2_13b_pp2_nan_local_grad_norm_assert_pai_megatron_60.log",
    "loss-spike/qwen3_pretrain_nan_grad_norm_bucket_nemo_15108.log",
])
def test_megatrons_nan_check_alone_stays_at_the_nan_loss_question(case):
    assert top(tune(case)) == "loss-spike#nan-loss"


def test_a_logged_sudden_nan_still_goes_to_nan_source():
    # grad norm 0.75 and loss 0.73 just before the NaN step: the series answers the question
    assert top(tune("loss-spike/megatron_llm_falcon40b_loss_vanishes_nan_3385_33.log")) == \
        "loss-spike#nan-source"


LIGHTNING_FEW_WORKERS = (
    "slow-training/gpu_util_zero_val_dataloader_few_workers_nemo_speech_1204.log")


def test_lightnings_few_workers_hint_answers_a_run_reported_slow():
    findings = triage_text(tune(LIGHTNING_FEW_WORKERS), symptom="slow").findings
    assert findings[0].link == "slow-training#dataloader"


def test_lightnings_few_workers_hint_alone_is_no_finding():
    # healthy runs print it too: without the user's word it names nothing
    findings = triage_text(tune(LIGHTNING_FEW_WORKERS)).findings
    assert all(f.link != "slow-training#dataloader" for f in findings)
