"""Rules from the tune-7 round on the oom, checkpoint, loss-spike, convergence, compile,
data-pipeline and startup trees: each checked on the tune case that showed it and against a
line it must leave alone.

Log text comes from the public corpus (tests/corpus, tune cases only; the source URL is on each
case's first line) or from the public thread a rule's comment names; the few lines marked
"constructed" are written for the test in the shape of the real ones.
"""

from __future__ import annotations

import pytest

from .routed import links, top
from .test_never_silent import excerpt  # a tune case's excerpt (tune cases only)


@pytest.mark.parametrize(("case", "link"), [
    # Megatron's own message: the checkpoint holds no optimizer state
    ("checkpoint/converted_ckpt_no_optimizer_state_megatron_deepspeed_pr_14.log",
     "checkpoint#missing-shard-files"),
    # a frame of Inductor's C++ compile command, the error line cut off
    ("compile/inductor_cpp_builder_gpp_fails_all_ranks_8xa100_pytorch_146306.log",
     "compile#backend-compiler-failed"),
    # a frame of Transformer Engine's loader of its compiled library
    ("startup/te_load_library_stopiteration_after_pip_upgrade_megatron_1274.log",
     "startup#transformer-engine"),
    # the OOM came while the ZeRO optimizer created Adam's state
    ("oom/zero2_optimizer_states_oom_megatron_gpt2_deepspeed_237.log", "oom#zero-offload"),
    # py-spy: the main thread inside a dist_checkpointing save
    ("checkpoint/async_save_blocked_finalize_pyspy_megatron_2422.log", "checkpoint#save-hang"),
    # py-spy: the main thread waits in the data iterator for a batch
    ("data-pipeline/rank0_stuck_in_dataloader_queue_32gpu_fairseq_pytorch_87995.log",
     "data-pipeline#worker-hang"),
])
def test_tune7_case_lands_on_its_node(case: str, link: str) -> None:
    assert top(excerpt(case)) == link


def test_the_megatron_rng_message_is_not_the_optimizer_one() -> None:
    """Only the optimizer message is read; a successful load line (constructed) is none."""
    line = " successfully loaded checkpoint from /data/ckpt at iteration 1000"
    assert "checkpoint#missing-shard-files" not in links(line)


def test_the_compile_command_source_line_alone_is_no_compile_finding() -> None:
    # https://github.com/pytorch/pytorch/issues/146306 (the frame's source line, not the frame)
    line = ("[rank2]:     status = subprocess.check_output(args=cmd, cwd=cwd, "
            "stderr=subprocess.STDOUT)")
    assert not any(link.startswith("compile#") for link in links(line))


def test_another_transformer_engine_frame_alone_is_not_the_loader() -> None:
    # constructed: a frame of TE's package that is not its library loader
    line = ('  File "/usr/local/lib/python3.10/dist-packages/transformer_engine/pytorch/'
            'module/base.py", line 20, in <module>')
    assert "startup#transformer-engine" not in links(line)


def test_an_adam_state_word_in_a_training_oom_elsewhere_is_not_the_optimizer_route() -> None:
    """An allocator OOM (constructed) with no optimizer frame near it stays off that route."""
    line = ("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 "
            "has a total capacity of 79.15 GiB of which 6.00 MiB is free.")
    assert top(line) != "oom#zero-offload"


def test_a_traceback_frame_of_the_dataloader_is_no_pyspy_wait() -> None:
    # https://github.com/horovod/horovod/issues/2255
    line = ('[1,0]<stderr>:  File "/usr/local/lib/python3.7/dist-packages/torch/utils/data/'
            'dataloader.py", line 779, in _try_get_data')
    assert "data-pipeline#worker-hang" not in links(line)


def test_a_pyspy_dump_in_a_collective_stays_a_hang() -> None:
    """A py-spy dump whose main thread waits in an all-reduce is no save and no data wait
    (constructed)."""
    text = ('Thread 2433 (active): "MainThread"\n'
            "    all_reduce (torch/distributed/distributed_c10d.py:2050)\n"
            "    train_step (train.py:120)\n")
    found = links(text)
    assert "checkpoint#save-hang" not in found
    assert "data-pipeline#worker-hang" not in found


def test_fifteen_one_size_contexts_on_gpu0_are_the_ranks() -> None:
    """Every other rank's CUDA context listed on GPU 0 (returnn#1469) is device-zero."""
    case = "oom/every_rank_on_gpu0_oom_returnn_1469.log"
    assert top(excerpt(case)) == "oom#device-zero"


@pytest.mark.parametrize("case", [
    # one foreign process of 71 GiB beside this one
    "oom/other_process_crashed_run_holds_gpu_returnn_1649.log",
    # a small and a large other process: different sizes, not one context per rank
    "oom/other_process_on_gpu_rlinf_255.log",
])
def test_foreign_processes_stay_other_process(case: str) -> None:
    assert top(excerpt(case)) == "oom#other-process"


def test_rank_contexts_needs_several_of_one_small_size() -> None:
    from trainmedic.triage.oom_contexts import rank_contexts

    assert rank_contexts([1218.6] * 15)
    assert not rank_contexts([1218.6])  # one process: a foreign one as likely
    assert not rank_contexts([419.5, 15206.4])  # differing sizes
    assert not rank_contexts([20480.0, 20480.0])  # large: whole jobs, not contexts


def test_a_traceback_through_torchs_zip_reader_is_a_truncated_checkpoint() -> None:
    """The error line is cut after 'PytorchStreamReader'; the reader's frame says enough."""
    case = "checkpoint/central_directory_load_trained_iter_mmagic_876.log"
    assert top(excerpt(case)) == "checkpoint#truncated-checkpoint"


def test_the_zip_readers_class_name_alone_is_no_truncated_checkpoint() -> None:
    # constructed: the reader named in a line that is no traceback frame of its constructor
    line = "reader = torch._C.PyTorchFileReader(f)"
    assert "checkpoint#truncated-checkpoint" not in links(line)


@pytest.mark.parametrize("case", [
    "convergence/llava_next_llama3_sft_loss_zero_after_first_step_12.log",
    "convergence/loss_zero_from_second_step_tiny_grad_norm_qwen2_sft_qwen3_771.log",
])
def test_a_loss_that_drops_to_exactly_zero_is_the_template_answer(case: str) -> None:
    assert top(excerpt(case)) == "convergence#template-mismatch"


def test_a_nan_step_printed_as_zero_stays_a_nan() -> None:
    """HF's NaN filter prints the loss as 0.0 beside a NaN grad norm: the NaN answers it."""
    case = "loss-spike/grad_norm_nan_loss_zero_second_step_zero2_llamafactory_9298.log"
    found = links(excerpt(case))
    assert found[0] == "loss-spike#nan-loss"
    assert "convergence#template-mismatch" not in found


def test_zero_tail_needs_an_abrupt_drop_and_no_nan() -> None:
    from trainmedic.triage.loss_zero import zero_tail

    assert zero_tail([(1, 1.9166), (2, 0.0), (3, 0.0)], nan_seen=False, framework="hf-trainer")
    # a small task memorised: the loss passes through small values before a rounded 0.0
    assert zero_tail([(1, 0.9), (2, 0.05), (3, 0.0)], nan_seen=False, framework=None) is None
    assert zero_tail([(1, 1.7), (2, 0.0)], nan_seen=True, framework=None) is None
    assert zero_tail([(1, 0.0), (2, 0.0)], nan_seen=False, framework=None) is None
    # an RL objective: negative values, or verl's policy loss
    assert zero_tail([(1, -0.2), (2, 0.3), (3, 0.0)], nan_seen=False, framework=None) is None
    assert zero_tail([(1, 0.3), (2, 0.0)], nan_seen=False, framework="verl") is None
