"""Rules from the tune-6 round on the oom, checkpoint, loss-spike, convergence, compile,
data-pipeline and startup trees: each checked on the tune case that showed it and against a
line it must leave alone.

Log text comes from the public corpus (tests/corpus, tune cases only; the source URL is on each
case's first line) or from the public thread a rule's comment names.
"""

from __future__ import annotations

import pytest

from .routed import links, top
from .test_never_silent import excerpt  # a tune case's excerpt (tune cases only)


@pytest.mark.parametrize(("case", "link"), [
    # Inductor's own launcher raises Triton's shared-memory limit as an OutOfMemoryError
    ("compile/no_valid_triton_configs_fused_flexattention_bwd_h100_torch210_pytorch_175250.log",
     "compile#triton-shared-memory"),
    # Triton's per-kernel C launcher cannot include Python.h
    ("compile/triton_main_c_python_h_missing_hydra_training_pytorch_97146.log",
     "compile#backend-compiler-failed"),
    # the OOM came inside torch.load, restoring the optimizer state onto the GPU
    ("oom/optimizer_torch_load_no_map_location_transformer_lm_21.log", "oom#resume-load"),
    # cuDNN's sub-library was found but is from another cuDNN: undefined symbol
    ("startup/libcudnn_cnn_train_undefined_symbol_local_cudnn_torch22_pytorch_119989.log",
     "startup#version-matrix"),
    # clip_grad_norm_ warns of a non-finite total norm
    ("loss-spike/petr_nonfinite_grad_norm_clip_warning_mmdet_petr_175.log", "loss-spike#nan-loss"),
])
def test_tune6_case_lands_on_its_node(case: str, link: str) -> None:
    assert top(excerpt(case)) == link


def test_a_real_gpu_oom_is_still_an_oom() -> None:
    """The oom tree's own example (an allocator OOM) still reads as GPU memory."""
    line = ("[rank1]: torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.91 GiB. "
            "GPU  has a total capacity of 23.68 GiB of which 3.38 GiB is free. Including "
            "non-PyTorch memory, this process has 20.29 GiB memory in use.")
    found = top(line)
    assert found is not None and found.startswith("oom#")


def test_a_missing_cuda_library_stays_missing() -> None:
    """'cannot open shared object file' is still the missing-library answer (tune case)."""
    text = excerpt("startup/libcudnn_cnn_infer_aborted_epoch0_anomalydiffusion_76.log")
    assert top(text) == "startup#missing-shared-library"


def test_an_extension_built_for_another_torch_stays_flash_attn() -> None:
    text = excerpt("startup/flash_attn2_undefined_symbol_pad_enum_torch_nightly_fa_723.log")
    assert top(text) == "startup#flash-attn"


def test_an_oom_while_loading_weights_stays_model_init() -> None:
    """load_state_dict without torch.load's restore frames keeps the model-init answer."""
    text = excerpt("oom/oom_load_state_dict_meta_predict_rank5_llamafactory_7781.log")
    assert top(text) == "oom#model-init"


def test_the_zero_shards_warning_alone_is_no_finding() -> None:
    """Loading only the weights on purpose prints it too: alone it does not alarm."""
    text = excerpt("checkpoint/zero_ckpt_paths_missing_two_nodes_no_shared_fs_neox_750.log")
    assert links(text) == []


def test_every_ranks_context_on_gpu0_is_device_zero() -> None:
    text = excerpt("oom/rank0_gpu_extra_871mib_per_process_pytorch_49481.log")
    assert top(text) == "oom#device-zero"


def test_one_process_per_gpu_is_no_finding() -> None:
    """A single process row (the large rank of the same table) is not the pattern."""
    first = excerpt("oom/rank0_gpu_extra_871mib_per_process_pytorch_49481.log").splitlines()[0]
    assert "26167MiB" in first
    assert links(first) == []


def test_the_gpu_rows_of_nvidia_smi_are_not_process_rows() -> None:
    text = excerpt("oom/gpu0_held_by_tensorflow_job_gpt2_chitchat_19.log")
    assert "oom#device-zero" not in links(text)


def test_an_oom_in_the_adam_update_is_the_optimizer_state() -> None:
    text = excerpt("oom/adam_state_zero2_v100_llama7b_full_llamafactory_1221.log")
    assert top(text) == "oom#zero-offload"


def test_an_oom_in_backward_stays_backward() -> None:
    """The Adam frames' route leaves an OOM raised in autograd's backward alone."""
    text = excerpt("oom/backward_rank1_prefix_axolotl_1717.log")
    assert top(text) == "oom#backward-grads"


def test_apex_falling_back_to_python_is_no_apex_failure() -> None:
    """APEX's 'Original ImportError was: ...' warning (wrapped to 'was: ...') is a fallback."""
    text = excerpt("convergence/albert_from_scratch_loss_stuck_7_27_transformers_4727.log")
    assert "startup#apex" not in links(text)


def test_a_missing_amp_c_in_a_traceback_stays_apex() -> None:
    text = excerpt("startup/apex_amp_c_missing_distributed_lamb_python_only_865.log")
    assert top(text) == "startup#apex"


def test_the_shells_killed_in_markdown_bold_is_a_host_kill() -> None:
    text = excerpt("oom/tf_maskrcnn_bare_killed_fastmaskrcnn_172.log")
    assert top(text) == "oom#host-ram"


def test_killed_inside_a_sentence_is_not_the_shells_line() -> None:
    # the oom tree's own counterexample (a tqdm bar with "Killed workers: 0")
    line = "Loading checkpoint shards:   0%|          | 0/2 [00:00<?, ?it/s]Killed workers: 0"
    assert "oom#host-ram" not in links(line)


def test_marians_cost_nan_is_a_nan_loss() -> None:
    text = excerpt("loss-spike/fp16_cost_nan_gnorm_rising_2080ti_marian_dev_699.log")
    assert top(text) == "loss-spike#nan-loss"


def test_marians_finite_cost_is_no_finding() -> None:
    first = [line for line in excerpt(
        "loss-spike/fp16_cost_nan_gnorm_rising_2080ti_marian_dev_699.log").splitlines()
        if "Up. 100 :" in line]
    assert first and links(first[0]) == []
