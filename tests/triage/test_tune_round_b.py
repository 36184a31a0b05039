"""Rules of the tuning round on loss, convergence, speed, memory and checkpoint logs, each on the
tune case that showed the gap (tests/corpus, tune split; source URL on each case's line 1)."""

from __future__ import annotations

import sys
from pathlib import Path

from trainmedic.triage import triage_text

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
sys.path.insert(0, str(CORPUS))
from corpus import read_case  # noqa: E402


def top_link(relative: str) -> str | None:
    case = read_case(CORPUS / "cases" / relative)
    assert case.split == "tune"  # unit tests read tune cases only
    findings = triage_text(case.excerpt).findings
    return findings[0].link if findings else None


def test_trainer_dicts_with_aligned_columns_are_read():
    """A Trainer paste whose columns were aligned by hand (`'grad_norm':    14.98`) is still
    read: the pre-clip grad norm jumping to 11140 is an explosion."""
    assert top_link("loss-spike/hf_trainer_grad_norm_11140_isolated_spike_lora_gemma4_unsloth_"
                    "5207.log") == "loss-spike#grad-norm-explosion"


def test_one_step_spike_mid_run_that_recovers_asks_what_caused_it():
    """LLaVA #918: 0.80 then 4.27 at step 2566, 0.77 the next step. Two points before it are
    enough 2500 steps into a run, and one bad step the run shrugged off needs no roll-back:
    the tree asks what caused it (spike-when)."""
    assert top_link("loss-spike/hf_trainer_single_step_loss_jump_4_27_recovers_llava_lora_"
                    "918.log") == "loss-spike#spike-when"


def test_two_points_before_a_jump_at_the_start_of_a_run_stay_quiet():
    """At the start of a run the loss swings: a threefold jump after two points is not read as
    a spike there (the same numbers 2500 steps in are)."""
    def hf(first: int) -> str:
        losses = [0.66, 0.80, 4.27, 0.77, 0.56]
        return "\n".join(
            f" 24%|##        | {first + i}/10485 [3:15:13<10:06:35,  4.59s/it]\n"
            f"{{'loss': {v}, 'learning_rate': 0.0001768, 'epoch': 0.24}}"
            for i, v in enumerate(losses))
    assert [f.link for f in triage_text(hf(2564)).findings][:1] == ["loss-spike#spike-when"]
    assert triage_text(hf(1)).findings == []


def test_a_few_percent_of_the_gpu_reserved_but_unallocated_is_slack_not_fragmentation():
    """Megatron #525 (1.15 GiB of 31.7 GiB cached and free: 3.6 %) asks when the OOM comes;
    mgfn #35 (2.30 of 6 GiB) is fragmentation."""
    assert top_link("oom/megatron_gpt2_large_v100_estimate_says_fits_megatron_525.log") == \
        "oom#when"
    assert top_link("oom/fragmentation_capacty_typo_mgfn_35.log") == "oom#fragmentation"


def test_dcp_missing_key_is_the_state_dict_type_question():
    """torchtitan #961: DCP's planner finds no saved entry for a key of the wrapped model."""
    assert top_link("checkpoint/dcp_missing_key_resume_compiled_model_torchtitan_961.log") == \
        "checkpoint#fsdp-state-dict-type"


def test_megatron_core_flattened_range_is_a_save_error():
    """AReaL #1468: Megatron Core 0.16+ refuses the distributed optimizer's flat-range layout
    while saving."""
    assert top_link("checkpoint/dist_ckpt_flattened_range_not_supported_save_mcore017_areal_"
                    "1468.log") == "checkpoint#save-error"


def test_an_epoch_whose_step_losses_repeat_the_last_one_exactly_is_no_update():
    """TRACE #5: `Epoch 2, Step k, Loss: X` prints, step for step, the losses of epoch 1: the
    same batches give the same loss, so the LoRA weights never changed."""
    assert top_link("convergence/lora_llama3_loss_identical_every_epoch_trace_5.log") == \
        "convergence#no-update"


def test_repeat_needs_several_different_values_recurring_at_one_period():
    from trainmedic.triage.trends import repeat

    epoch = [0.9741, 1.3742, 1.2390, 0.9670, 1.0386]
    found = repeat(list(enumerate(epoch + epoch, start=1)))
    assert found is not None and found["period"] == 5 and found["points"] == 5
    # training moves the losses a little: no repeat; a flat loss is the plateau's, not this
    moved = [v - 0.001 * i for i, v in enumerate(epoch)]
    assert repeat(list(enumerate(epoch + moved, start=1))) is None
    assert repeat(list(enumerate([2.30256] * 10, start=1))) is None
    # printed with two digits, a loss comes back to the same values by chance
    assert repeat(list(enumerate([0.09, 0.1, 0.11, 0.12] * 3, start=1))) is None
