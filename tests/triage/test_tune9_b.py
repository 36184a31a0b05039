"""Rules from the tune-9 round on the oom, loss-spike, convergence, checkpoint, sharding, compile,
moe and data-pipeline trees: each checked on the tune case that showed it and against a line it
must leave alone.

Log text comes from the public corpus (tests/corpus, tune cases only; the source URL is on each
case's first line) or from the public thread a rule's comment names; the few lines marked
"constructed" are written for the test in the shape of the real ones.
"""

from __future__ import annotations

import pytest

from .routed import links, top
from .test_never_silent import excerpt  # a tune case's excerpt (tune cases only)

# ---- DeepSpeed's fused/unfused fp16 optimizers word their overflow their own way -------------


def test_deepspeed_unfused_optimizer_stuck_at_scale_one_is_a_collapse() -> None:
    # transformers 14834: "fp16 dynamic loss scale overflow! ... Attempted loss scale: 1,
    # reducing to 1" and "Reducing dynamic loss scale from 1 to 1"
    case = "loss-spike/deepspeed_fp16_loss_scale_stuck_at_1_gpt2_large_transformers_14834.log"
    assert top(excerpt(case)) == "loss-spike#loss-scale-collapse"


def test_the_start_up_search_in_that_wording_is_no_finding() -> None:
    # constructed in DeepSpeed's unfused-optimizer wording: the first overflows of a healthy run
    lines = []
    scale = 65536.0
    for it in range(3):
        lines += [
            f"[2024-03-08 16:33:21,415] [INFO] [unfused_optimizer.py:281:_update_scale] Grad "
            f"overflow on iteration: {it}",
            f"[2024-03-08 16:33:21,416] [INFO] [unfused_optimizer.py:282:_update_scale] Reducing "
            f"dynamic loss scale from {scale} to {scale / 2}",
            f"[2024-03-08 16:33:21,416] [INFO] [unfused_optimizer.py:207:step] [deepspeed] fp16 "
            f"dynamic loss scale overflow! Skipping step. Attempted loss scale: {scale}, reducing "
            f"to {scale / 2}",
        ]
        scale /= 2
    assert links("\n".join(lines)) == []


def test_the_reader_follows_the_scale_in_that_wording_down_to_one() -> None:
    # constructed: the same wording, the scale halving from 64 down to 1 mid-run
    lines = [f"[deepspeed] fp16 dynamic loss scale overflow! Skipping step. Attempted loss scale: "
             f"{2.0 ** k}, reducing to {2.0 ** (k - 1)}" for k in range(6, 0, -1)]
    assert "loss-spike#loss-scale-collapse" in links("\n".join(lines))


# ---- a NaN printed among the scaler's overflow reports: the scale-halving answer -------------


def test_nan_loss_among_overflow_skips_is_the_scale_collapse() -> None:
    # ColossalAI-Examples 37: loss=nan on the tqdm bar of each step DeepSpeed's scaler skipped
    case = "loss-spike/colossalai_gpt2_zero3_fp16_overflow_every_step_loss_nan_examples_37.log"
    assert top(excerpt(case)) == "loss-spike#loss-scale-collapse"


def test_nan_loss_without_overflow_reports_stays_nan_loss() -> None:
    # constructed: the same bar without DeepSpeed's overflow lines
    bar = ("[Epoch 0 / Train]:   0%|          | {i}/8614 [00:00<1:00:07,  2.39it/s, loss=nan, "
           "lr=2.5e-05, throughput=4.9813]")
    text = "\n".join(bar.format(i=i) for i in (2, 3))
    assert "loss-spike#loss-scale-collapse" not in links(text)


# ---- an OOM whose process list cannot size anything: the other ranks on GPU 0 ------------------


def test_seven_unsized_processes_on_gpu0_are_the_other_ranks() -> None:
    # trl 3172: seven "Process N has 0 bytes memory in use" on GPU 0, this process at 0 bytes
    # too while PyTorch holds 10.47 GiB; the exception's name printed alone above the message
    assert top(excerpt("oom/grpo_lora_zero3_gpu0_seven_processes_trl_3172.log")) == (
        "oom#device-zero")


_UNSIZED = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 130.00 MiB. GPU 0 has a "
            "total capacity of 79.10 GiB of which 12.81 MiB is free. {others}Including non-PyTorch "
            "memory, this process has 0 bytes memory in use. Of the allocated memory 10.47 GiB is "
            "allocated by PyTorch, and 93.52 MiB is reserved by PyTorch but unallocated.")


def test_two_unsized_processes_are_not_enough_to_call_them_ranks() -> None:
    # constructed from trl 3172's message: two other processes could be foreign jobs
    others = "Process 3427 has 0 bytes memory in use. Process 3423 has 0 bytes memory in use. "
    assert "oom#device-zero" not in links(_UNSIZED.format(others=others))


def test_unsized_rank_contexts_needs_every_size_unknown() -> None:
    from trainmedic.triage.oom_contexts import unsized_rank_contexts

    assert unsized_rank_contexts([0.0] * 7, True, 10720.0)
    assert not unsized_rank_contexts([0.0] * 7, False, 10720.0)  # this process was sized
    assert not unsized_rank_contexts([0.0, 0.0, 4096.0], True, 10720.0)  # one has a size


# ---- ZeRO-3's early placeholder: a matrix saved as torch.Size([1]) ---------------------------


def test_matrices_saved_as_one_element_are_zero3_placeholders() -> None:
    # DeepSpeed 1394: every weight of the checkpoint is torch.Size([1]) against [768, 768]
    case = "sharding/zero3_placeholder_shape_1_load_checkpoint_deepspeed_1394.log"
    assert top(excerpt(case)) == "sharding#zero3-partitioned-params"


@pytest.mark.parametrize("line", [
    # a classifier head of another size: a one-output bias against two (constructed in
    # load_state_dict's wording)
    "\tsize mismatch for classifier.bias: copying a param with shape torch.Size([1]) from "
    "checkpoint, the shape in current model is torch.Size([2]).",
    "\tsize mismatch for classifier.weight: copying a param with shape torch.Size([1, 768]) from "
    "checkpoint, the shape in current model is torch.Size([2, 768]).",
])
def test_a_changed_head_stays_a_model_shape_mismatch(line: str) -> None:
    assert top(line) == "checkpoint#model-shape-mismatch"


# ---- an OOM under a validation pass named by its short forms ---------------------------------


def test_oom_under_a_trainers_private_val_pass_is_eval_oom() -> None:
    # openseg.pytorch 41: the OOM's traceback runs through trainer.py's __train -> __val
    assert top(excerpt("oom/validation_oom_during_training_openseg_41.log")) == "oom#eval-oom"


_OLD_OOM = ("RuntimeError: CUDA out of memory. Tried to allocate 4.10 GiB (GPU 3; 10.92 GiB total "
            "capacity; 5.46 GiB already allocated; 1019.50 MiB free; 3.89 GiB cached)")


def test_a_value_named_frame_is_no_validation_pass() -> None:
    # constructed: a frame of a function whose name only starts like "val" (value_and_grad)
    frame = '  File "/opt/app/train.py", line 88, in value_and_grad'
    assert "oom#eval-oom" not in links(frame + "\n" + _OLD_OOM)


# ---- a traceback through MosaicML streaming: the data pipeline -------------------------------


def test_streaming_dataset_frames_name_the_data_pipeline() -> None:
    # Lightning 20226: FileExistsError from streaming's shared memory while building the dataset
    case = "data-pipeline/streaming_shm_file_exists_epoch_shape_ddp_notebook_lightning_20226.log"
    assert (top(excerpt(case)) or "").startswith("data-pipeline#")


def test_a_project_folder_named_streaming_is_not_the_library() -> None:
    # constructed: a project's own streaming/ package without the library's base/ modules
    frame = '  File "/home/user/asr/streaming/decoder.py", line 41, in __init__'
    assert not any(link.startswith("data-pipeline#") for link in links(frame))


# ---- the JVM's spelling of an infinite loss -------------------------------------------------


def test_bigdl_loss_is_infinity_is_a_nan_loss() -> None:
    # ipex-llm (BigDL) 1486: "Loss is Infinity." on one DistriOptimizer line
    case = "loss-spike/bigdl_distrioptimizer_loss_infinity_one_iteration_ipex_llm_1486.log"
    assert (top(excerpt(case)) or "").startswith("loss-spike#")


def test_a_finite_bigdl_loss_is_no_finding() -> None:
    # the same thread's line one iteration earlier
    line = ("2017-08-20 16:11:42 INFO  DistriOptimizer$:295 - [Epoch 64 738304/1281167][Iteration "
            "45458][Wall Clock 197336.222587172s] Train 1792 in 4.494659207seconds. Throughput is "
            "398.6954 records/second. Loss is 1.308916. Current learning rate is "
            "0.046282765356364115. Current weight decay is 1.0E-4. Current momentum is 0.9.")
    assert links(line) == []
