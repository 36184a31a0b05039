"""A finding names the node when the message holds enough (issue 15 item 5, issue 18 item 7).

Whole excerpts are real public cases (tests/corpus, tune split) or fixtures; single lines are
taken from them verbatim.
"""

from __future__ import annotations

import sys
from pathlib import Path

from trainmedic.triage import triage_paths, triage_text

from .conftest import FIXTURES

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
sys.path.insert(0, str(CORPUS))
from corpus import read_case  # noqa: E402


def tune(relative: str) -> str:
    case = read_case(CORPUS / "cases" / relative)
    assert case.split == "tune"
    return case.excerpt


def top(text: str) -> str:
    return triage_text(text).findings[0].link


def test_nccls_own_cuda_oom_goes_to_the_nccl_buffers_fix():
    text = tune("oom/nccl_enqueue_cuda_failure_oom_opensoraplan_386.log")
    assert top(text) == "oom#raw-cuda-oom"
    line = next(x for x in text.splitlines() if "NCCL WARN Cuda failure 'out of memory'" in x)
    assert top(line) == "oom#raw-cuda-oom"


def test_memory_held_by_another_process_goes_to_that_fix():
    assert top(tune("oom/other_process_crashed_run_holds_gpu_returnn_1649.log")) == \
        "oom#other-process"


def test_own_process_under_another_pid_is_not_another_process():
    """In a container the process may be listed as "Process N": it holds what PyTorch
    allocated, so it is this process, not a squatter."""
    assert top(tune("oom/own_process_pid_in_container_generateu_10.log")) == "oom#when"


def test_oom_while_saving_the_state_dict_goes_to_the_checkpoint_save_fix():
    assert top(tune("oom/ckpt_save_fsdp_clone_failed_alpaca_65.log")) == "oom#checkpoint-save"
    assert top(tune("oom/ckpt_save_fsdp_state_dict_after_train_fastchat_256.log")) == \
        "oom#checkpoint-save"


def test_oom_in_evaluation_ipython_traceback_order():
    """IPython prints the exception above the frames: `near` looks below the match too."""
    assert top(tune("oom/eval_oom_jupyter_trainer_evaluate_t4rec_693.log")) == "oom#eval-oom"


def test_no_fragmentation_when_free_and_cached_memory_cannot_hold_the_request():
    """Issue 18 item 7 (app review F7): 12.73 GiB free + 9.35 GiB cached < 22.78 GiB."""
    report = triage_paths([str(FIXTURES / "oom_fragmentation.log")])
    f = report.findings[0]
    assert f.link == "oom#when"
    assert f.details["free_mib"] + f.details["unallocated_mib"] < f.details["tried_mib"]
    assert "does not fit" in f.summary and "expandable_segments" not in f.summary
    report = triage_paths([str(FIXTURES / "multirank_oom")])
    assert report.findings[0].link == "oom#when"


def test_real_fragmentation_still_goes_to_fragmentation():
    """2.30 GiB cached but unusable next to a 1.70 GiB request, 0 bytes free."""
    assert top(tune("oom/fragmentation_capacty_typo_mgfn_35.log")) == "oom#fragmentation"


def test_triton_shared_memory_is_not_gpu_memory():
    text = tune("compile/triton_shared_memory_pascal_long_context_pascalpkgs_50.log")
    findings = triage_text(text).findings
    assert findings and all(f.tree != "oom" for f in findings)
    # the wording issue 15 reports as a false positive
    assert all(f.tree != "oom" for f in triage_text(
        "OutOfMemoryError: out of resource: shared memory").findings)


def test_illegal_memory_access_follows_the_triage_tree():
    assert top("RuntimeError: CUDA error: an illegal memory access was encountered") == \
        "startup#device-assert"


def test_xid_45_follows_the_xid_it_names():
    assert top(tune("hardware/xid45_after_nvlink_xid145_149_okm_1150.log")) == "hardware#nvlink"


def test_sigkill_without_a_cuda_message_is_host_memory():
    assert top(tune("oom/host_ram_exit9_single_line_selfrag_83.log")) == "oom#host-ram"
    assert top(tune("oom/host_ram_deepspeed_launcher_minus9_colab_deepspeed_3232.log")) == \
        "oom#host-ram"


def test_a_nan_with_no_grad_norm_in_the_log_stays_at_the_question():
    """The tree asks what the grad norm did before the NaN: a log that never prints it cannot
    answer, so a mid-run NaN stays at nan-loss (an HF dict, and a plain `iteration=N loss=X`)."""
    assert top(tune("loss-spike/ppo_loss_nan_on_some_steps_chatglm_tuning_49.log")) == \
        "loss-spike#nan-loss"
    assert top(tune("loss-spike/info_iteration_loss_nan_after_865_insta_17.log")) == \
        "loss-spike#nan-loss"


def test_a_nan_at_the_second_step_that_stays_is_born_not_grown():
    """`step:2(2) total_loss:nan` after one finite step: nothing had time to grow."""
    report = triage_text(tune("loss-spike/nan_loss_step2_ring_attention_opentau_300.log"))
    assert report.findings[0].link == "loss-spike#nan-source"
    assert [p[0] for p in report.loss.points] == [1, 2]


def test_a_loss_that_ran_away_before_the_nan_points_at_exploding_updates():
    """37 -> -403 -> -801 -> nan with no grad norm printed (`02000 iter, ..., loss X`)."""
    report = triage_text(tune("loss-spike/loss_diverges_negative_then_nan_clip_fixes_hake_34.log"))
    assert report.findings[0].link == "loss-spike#grad-norm-explosion"
    assert [p[0] for p in report.loss.points][:3] == [0, 2000, 4000]


def test_a_grad_norm_nan_from_the_first_step_of_the_run_is_born_not_grown():
    """`{'loss': 344093.2, 'grad_norm': nan, ..., 'epoch': 0.0}` and NaN on every entry after."""
    case = "loss-spike/bf16_loss_0_grad_norm_nan_from_first_step_rtx3090_llamafactory_5660.log"
    assert top(tune(case)) == "loss-spike#nan-source"


def test_a_nan_grad_norm_from_the_first_line_of_a_mid_run_excerpt_stays_at_the_question():
    """The same dicts at 'epoch': 0.54: the excerpt does not show how the NaN came."""
    assert top(tune("loss-spike/hf_trainer_loss_zero_grad_norm_nan_repeated_time_moe_31.log")) == \
        "loss-spike#nan-loss"


def test_one_nan_grad_norm_on_the_first_fp16_step_is_the_scalers_start_up():
    """mmcv's `Epoch [1][100/62598] ... grad_norm: nan` then a finite grad norm: no finding."""
    case = "healthy/mmocr_fp16_first_grad_norm_nan_then_finite_tablemaster_32.log"
    report = triage_text(tune(case))
    assert report.findings == []
    assert report.loss.count == 2 and report.loss.nan_runs == []


def test_a_py_spy_dump_in_destroy_process_group_is_an_exit_hang():
    assert top(tune("scheduler/pyspy_mainthread_in_destroy_process_group_torchtitan_1342.log")) == \
        "scheduler#exit-hang"


def test_memoryerror_inside_torch_save_is_the_save_running_out_of_host_memory():
    text = tune("checkpoint/dreambooth_sd_torch_save_memoryerror_unexpected_pos_45.log")
    assert top(text) == "checkpoint#oom-during"
    assert top("MemoryError") == "triage#host-memory"


def test_fairseq_loss_scale_printed_as_zero_is_a_collapse():
    assert top(tune("loss-spike/fairseq_transformer_fp16_loss_scale_0_no_clip_1529.log")) == \
        "loss-spike#loss-scale-collapse"
    case = "healthy/fairseq_roberta_finetune_overflow_note_loss_scale_1024_2404.log"
    assert triage_text(tune(case)).findings == []
