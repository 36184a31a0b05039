"""Buffers the framework keeps besides the model's own tensors (all inside PyTorch's
allocator, so `max_allocated` counts them).

* PyTorch's cuBLAS workspace (`c10/cuda/CublasHandlePool.cpp`, `getChosenWorkspaceSize`):
  `CUBLAS_WORKSPACE_CONFIG=:SIZE_KiB:COUNT`, default `:4096:8` (32 MiB) on Hopper and
  newer (the size assumed here: Megatron's CI also sets `:4096:8`); one per handle and
  stream that runs a cuBLAS GEMM, and cuBLASLt has a workspace of the same size.
* Transformer Engine's cuBLAS workspace (`transformer_engine/pytorch/module/base.py`,
  `get_cublas_workspace_size_bytes`): 32 MiB on Hopper and newer, 4 MiB before, one for the
  main stream; grouped GEMMs (`--moe-grouped-gemm` with TE) add `_NUM_MAX_CUBLAS_STREAMS` = 4
  more of the same size.
* Megatron's global memory buffer (`megatron/core/utils.py` `GlobalMemoryBuffer`, name
  "mpu"): non-TE linears under sequence parallelism all-gather their input into it, and the
  output layer is such a linear, so the last stage keeps one gathered `s/cp x b x h` bf16
  tensor for good.
"""

from __future__ import annotations

from trainmedic.memory.config import MemoryConfig

MIB = 1024 * 1024
HOPPER_CUBLAS_WORKSPACE = 32 * MIB  # PyTorch default ":4096:8" and TE's Hopper size
TE_GROUPED_GEMM_STREAMS = 4  # transformer_engine: _NUM_MAX_CUBLAS_STREAMS


def workspace_terms(cfg: MemoryConfig, *, last_stage: bool) -> dict[str, float]:
    """Persistent framework buffers of one GPU (bytes), by name (Hopper sizes)."""
    cublas = float(HOPPER_CUBLAS_WORKSPACE)
    terms = {
        # cuBLAS (handle of the compute stream) and cuBLASLt, each one workspace
        "pytorch cuBLAS + cuBLASLt workspaces": 2 * cublas,
    }
    if cfg.transformer_impl == "transformer_engine":
        te = float(HOPPER_CUBLAS_WORKSPACE)
        if cfg.moe_grouped_gemm and cfg.num_experts:
            te += TE_GROUPED_GEMM_STREAMS * HOPPER_CUBLAS_WORKSPACE
        terms["Transformer Engine cuBLAS workspaces"] = te
    if last_stage and cfg.sequence_parallel and cfg.tp > 1:
        tokens = cfg.seq_length // cfg.cp * cfg.micro_batch_size
        terms["global buffer for the output layer's all-gather"] = 2.0 * tokens * cfg.hidden_size
    return terms
