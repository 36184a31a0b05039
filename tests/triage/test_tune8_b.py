"""Rules from the tune-8 round on the oom, loss-spike, convergence, checkpoint, sharding, compile,
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

# an old-style CUDA OOM with little cached slack (ColossalAI 5068's own line), for the routes
OOM = ("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 448.00 MiB (GPU 4; "
       "79.32 GiB total capacity; 77.24 GiB already allocated; 443.56 MiB free; 77.32 GiB "
       "reserved in total by PyTorch) If reserved memory is >> allocated memory try setting "
       "max_split_size_mb to avoid fragmentation.  See documentation for Memory Management and "
       "PYTORCH_CUDA_ALLOC_CONF")


@pytest.mark.parametrize(("case", "link"), [
    # the OOM came while a lazily built model was materialised (ColossalAI's LazyTensor)
    ("oom/lazy_init_materialize_oom_llama2_70b_colossalai_5068.log", "oom#model-init"),
    # the OOM came while ZeRO-3 gathered a sub-module's parameters (fetch_sub_module)
    ("sharding/zero3_offload_param_fetch_oom_falcon40b_lightning_18134.log",
     "sharding#zero-bucket-memory"),
])
def test_tune8_case_lands_on_its_node(case: str, link: str) -> None:
    assert top(excerpt(case)) == link


def test_a_materialising_frame_routes_the_oom_to_model_init() -> None:
    # constructed: FSDP1's meta-device materialisation frame above the same OOM line
    frame = ('  File "/usr/lib/python3.10/site-packages/torch/distributed/fsdp/_init_utils.py", '
             'line 888, in _materialize_meta_module')
    assert top(frame + "\n" + OOM) == "oom#model-init"


def test_torch_lazy_cuda_init_frame_is_not_a_materialising_one() -> None:
    # torch/cuda/__init__.py's _lazy_init (CUDA initialisation) is no model materialisation
    frame = ('  File "/usr/lib/python3.10/site-packages/torch/cuda/__init__.py", line 298, '
             'in _lazy_init')
    assert top(frame + "\n" + OOM) != "oom#model-init"


def test_a_zero3_stack_dump_without_an_oom_is_not_bucket_memory() -> None:
    # the fetch frame alone (a hang's stack dump) stays with the hang's signature
    line = ('  File "/mnt/nvme1/code/github/00optimize/DeepSpeed/deepspeed/runtime/zero/stage3.py",'
            ' line 406 in fetch_sub_module')
    assert "sharding#zero-bucket-memory" not in links(line)


def test_an_oom_without_the_fetch_frame_is_not_bucket_memory() -> None:
    assert "sharding#zero-bucket-memory" not in links(OOM)


def test_losses_from_a_small_pool_of_exact_values_are_no_update() -> None:
    # litgpt 834: 22 losses (shuffled batches) take 8 exact values: the weights do not change
    assert top(excerpt("convergence/lora_ddp_losses_repeat_exactly_litgpt_834.log")) == (
        "convergence#no-update")


def _iters(losses: list[str], ranks: int = 1) -> str:
    # constructed in litgpt's progress format
    return "\n".join(f"iter {i} step {i}: loss {v}, iter time: 95.00ms"
                     for i, v in enumerate(losses, 1) for _ in range(ranks))


def test_low_precision_losses_that_recur_are_not_a_pool() -> None:
    # a loss printed with two digits repeats by chance in a healthy run
    values = ["3.5", "3.4", "3.5", "3.3", "3.4", "3.2", "3.3", "3.2", "3.1", "3.2", "3.1", "3.0",
              "3.1", "3.0"]
    assert "convergence#no-update" not in links(_iters(values))


def test_every_rank_printing_the_same_step_is_one_reading() -> None:
    # constructed: a healthy falling loss, each step's line printed by four ranks
    values = [f"{3.9 - 0.0137 * i:.4f}" for i in range(16)]
    assert "convergence#no-update" not in links(_iters(values, ranks=4))


def test_a_run_of_zero_learning_rates_before_it_rises_is_lr_too_small() -> None:
    # Qwen 672: 'learning_rate': 0 on six lines (five epochs), then 0.0003
    assert top(excerpt("convergence/learning_rate_zero_first_epochs_multi_gpu_lora_qwen_672.log")
               ) == "convergence#lr-too-small"


def _hf(lrs: list[str]) -> list[str]:
    # constructed in the HF Trainer's dict format
    return [f"{{'loss': {2.5 - 0.01 * i:.4f}, 'learning_rate': {lr}, "
            f"'epoch': {0.01 * (i + 1):.2f}}}" for i, lr in enumerate(lrs)]


def test_one_zero_learning_rate_at_the_start_of_a_warm_up_is_no_finding() -> None:
    text = "\n".join(_hf(["0.0", "1e-05", "2e-05", "3e-05", "4e-05", "5e-05"]))
    assert "convergence#lr-too-small" not in links(text)


def test_zero_learning_rates_while_the_fp16_scaler_skips_steps_are_no_finding() -> None:
    # a skipped step leaves the scheduler at 0; DeepSpeed's overflow lines say so
    ovf = ("[2021-06-08 12:02:45,001] [INFO] [stage3.py:2323:_overflow_clean_up] [deepscale] "
           "OVERFLOW! Rank 0 Skipping step. Attempted loss scale: {a}, reducing to {b}")
    lines: list[str] = []
    scale = 2.0 ** 32
    for line in _hf(["0.0", "0.0", "0.0", "0.0", "1e-05", "2e-05", "3e-05"]):
        if "'learning_rate': 0.0" in line:
            lines.append(ovf.format(a=scale, b=scale / 2))
            scale /= 2
        lines.append(line)
    assert "convergence#lr-too-small" not in links("\n".join(lines))


@pytest.mark.parametrize("case", [
    # litgpt 628: 1.70, then 11.46 and it stays between 10 and 12
    "loss-spike/loss_1_7_to_11_full_finetune_codellama_litgpt_628.log",
    # gpt-neox 947: lm_loss 2.28 at iteration 1, 11.05 at iteration 2
    "loss-spike/neox_llama_bf16_lm_loss_2_27_to_11_05_after_first_step_gpt_neox_947.log",
])
def test_a_jump_to_a_language_models_chance_loss_is_a_spike_with_one_point_before(
        case: str) -> None:
    assert (top(excerpt(case)) or "").startswith("loss-spike#")


def _steps(losses: list[float]) -> str:
    # constructed in litgpt's progress format
    return "\n".join(f"iter {i} step {i}: loss {v:.4f}, iter time: 95.00ms"
                     for i, v in enumerate(losses, 1))


def test_a_fresh_language_model_coming_down_from_chance_is_no_spike() -> None:
    assert links(_steps([10.9, 9.8, 8.1, 7.2, 6.6])) == []


def test_a_jump_far_above_any_chance_loss_needs_the_history() -> None:
    # a summed detection loss: 1.5 then 63 (mmdetection 11708's values), two points only
    assert not any(link.startswith("loss-spike#") for link in links(_steps([1.5043, 63.1261])))


def test_an_oom_message_wrapped_over_lines_is_read_whole() -> None:
    # DeepSpeedExamples 389: the sizes are on the lines below "Tried to allocate 3.82 GiB"
    assert top(excerpt("oom/bloom1b1_sft_zero3_v100_oom_deepspeedexamples_389.log")) == (
        "oom#fragmentation")


def test_a_cut_oom_message_followed_by_other_lines_keeps_its_reading() -> None:
    # constructed: the message cut after the request, then a traceback's lines
    text = ("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.82 GiB\n"
            "Traceback (most recent call last):\n"
            '  File "train.py", line 10, in <module>\n')
    assert top(text) == "oom#when"


def test_the_later_lines_of_a_wrapped_message_alone_are_no_finding() -> None:
    # DeepSpeedExamples 389's second and third lines without the first
    text = ("GiB total capacity; 23.21 GiB already allocated; 2.43 GiB free; 25.59 GiB\n"
            "reserved in total by PyTorch) If reserved memory is >> allocated memory try\n")
    assert links(text) == []


def test_a_small_rate_rounded_to_zero_decimals_is_no_zero_run() -> None:
    # constructed: a warm-up whose rate a fixed-decimals print shows as 0.0000 at first
    text = "\n".join(_hf(["0.0000", "0.0000", "0.0000", "0.0001", "0.0001", "0.0002"]))
    assert "convergence#lr-too-small" not in links(text)
