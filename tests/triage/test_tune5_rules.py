"""Rules from the tune-5 round on the oom, loss-spike, convergence, hardware, preflight and moe
trees: each checked on the tune case that showed it and against a line or log it must leave
alone.

Log text comes from the public corpus (tests/corpus, tune cases only; the source URL is on each
case's first line).
"""

from __future__ import annotations

import pytest

from trainmedic.trees.forest import load_forest
from trainmedic.triage.loss.detect import SeriesAnalyzer
from trainmedic.triage.loss.lines import LineReader

from .routed import top
from .test_never_silent import excerpt  # a tune case's excerpt (tune cases only)


@pytest.mark.parametrize(("case", "link"), [
    # NCCL's code-first "Cuda failure 2 'out of memory'" inside the Trainer's checkpoint save
    ("oom/ckpt_save_nccl_cuda_failure_spatialvla_12.log", "oom#checkpoint-save"),
    # another process's 14.85 GiB in the OOM's list answers the oom tree's first question,
    # although the OOM came while moving the model to the GPU
    ("oom/other_process_on_gpu_rlinf_255.log", "oom#other-process"),
    # DeepSpeed's launcher kill glued to the checkpoint-shards bar: no message from the worker
    ("oom/deepspeed_exit9_loading_shards_chatglm_finetuning_102.log", "oom#host-ram-load"),
    # fairseq's gnorm explodes (2.75 -> 100615 -> ... -> inf): the NaN followed an explosion
    ("loss-spike/fconv_gnorm_explodes_to_inf_fairseq_41.log", "loss-spike#grad-norm-explosion"),
    # YOLOv7's box and total columns print nan mid-run
    ("loss-spike/box_loss_nan_mid_training_yolov7_613.log", "loss-spike#nan-loss"),
    ("hardware/reset_required_gb200_dra_driver_982.log", "hardware#gpu-reset"),
    ("preflight/nvidia_smi_err_gpu_crashed_ci_runner_healthcheck_3967.log",
     "preflight#gpu-health"),
    ("moe/deepep_timeout_check_failed_barrier_cp_570.log", "moe#ep-dispatch-timeout"),
    ("convergence/all_labels_masked_responses_only_unsloth_3198.log",
     "convergence#template-mismatch"),
    ("startup/illegal_memory_access_overnight_yolo3_83.log", "startup#device-assert"),
])
def test_tune5_case_lands_on_its_node(case: str, link: str) -> None:
    assert top(excerpt(case)) == link


def test_nccl_oom_outside_a_save_stays_a_raw_cuda_oom() -> None:
    line = ("TENCENT64:47604:53083 [0] include/alloc.h:103 NCCL WARN Cuda failure 2 "
            "'out of memory'")
    assert top(line) == "oom#raw-cuda-oom"


def test_a_fragmented_oom_in_backward_is_fragmentation_first() -> None:
    """The oom tree reads the message before asking when: 9.1 GiB reserved but unallocated in
    an OOM raised in Megatron-LM's backward_step (tune-2's Megatron-LM#60) answers its second
    question, as it does in detectron2#1563's backward."""
    text = excerpt("oom/oom_allreduce_flatten_grads_backward_gpt2_mp2_v100_megatron_60.log")
    assert top(text) == "oom#fragmentation"
    assert top(excerpt("oom/backward_oom_reserved_gap_detectron2_1563.log")) == "oom#fragmentation"


def test_an_oom_in_backward_with_little_cached_still_goes_by_when() -> None:
    assert top(excerpt("oom/backward_rank1_prefix_axolotl_1717.log")) == "oom#backward-grads"


def test_the_launcher_kill_on_its_own_line_is_not_a_silent_kill() -> None:
    line = ("[2023-09-10 11:45:59,501] [INFO] [launch.py:428:sigkill_handler] Killing "
            "subprocess 6294")
    assert top(line) != "oom#host-ram-load"


def test_one_err_field_alone_is_not_a_crashed_gpu() -> None:
    row = "|   0  ERR!                Off  | 00000000:00:1E.0 Off |                 ERR! |"
    assert top(row) is None


def _read(lines: list[str]) -> SeriesAnalyzer:
    series = SeriesAnalyzer()
    reader = LineReader(series)
    reader.begin("log")
    for i, line in enumerate(lines, 1):
        reader.feed(line, i)
    reader.flush()
    series.finish()
    return series


def test_fairseq_lines_are_read_with_their_grad_norm() -> None:
    lines = excerpt("loss-spike/fconv_gnorm_explodes_to_inf_fairseq_41.log").splitlines()
    a = _read(lines).a
    assert a.count == 7 and a.first_step == 1000 and a.last_step == 7000
    assert a.grad_explosions and a.grad_explosions[0].step == 4000
    assert a.grad_exploded_before_nan


def test_a_healthy_fairseq_log_reads_without_events() -> None:
    lines = excerpt("healthy/fairseq_fp16_epoch1_progress_940.log").splitlines()
    a = _read(lines).a
    assert a.count >= 3
    assert not a.grad_explosions and not a.nan_runs and not a.spikes


def test_grad_norm_that_fell_back_before_the_nan_keeps_the_question_open() -> None:
    """YOLO-World#614: 205225 first, then 638, 635, then nan. No history says 205225 is an
    explosion, and the two readings before the NaN are flat: the labels disagree and the tree's
    question stays open (nan-loss)."""
    text = excerpt("loss-spike/yolo_world_grad_norm_205k_then_nan_yolo_world_614.log")
    assert top(text) == "loss-spike#nan-loss"


def test_yolo_rows_are_read_and_a_header_alone_is_not() -> None:
    lines = excerpt("loss-spike/box_loss_nan_mid_training_yolov7_613.log").splitlines()
    a = _read(lines).a
    assert a.nan_points >= 2 and a.nan_runs[0].start == 41
    assert not _read(["     Epoch   gpu_mem       box       obj       cls     total"]).a.count


def test_illegal_memory_access_without_xid_goes_where_the_triage_tree_sends_it() -> None:
    """The hardware tree's no-Xid answer and the triage tree agree on the node."""
    forest = load_forest()
    died = forest.trees["triage"].nodes["died"]
    entry = next(a for a in died.answers if "illegal memory access" in a.text)
    want = forest.resolve("triage", entry.goto)
    question = forest.trees["hardware"].nodes["no-xid-fault"]
    answer = next(a for a in question.answers if "illegal memory access" in a.text)
    assert forest.resolve("hardware", answer.goto) == want
    for node in ("symptom", "xid"):
        gotos = [a.goto for a in forest.trees["hardware"].nodes[node].answers
                 if "illegal memory access" in a.text]
        assert gotos == ["no-xid-fault"], node
