"""Which Megatron flags the memory model leaves out, and whether they could change memory.

Every flag `config_from_args` does not read lands here. A flag that cannot change GPU memory
(logging, learning rate, data paths, checkpoint format...) is counted and dropped; any other
flag, known to change memory or simply unknown to us, is reported as "not modelled", so a user
never mistakes silence for a modelled effect.
"""

from __future__ import annotations

from trainmedic.memory.config import MemoryConfig

# Flags that change what the GPU allocates and that the model does not reproduce, with why.
NOT_MODELLED: dict[str, str] = {
    "--cpu-offloading": "activations offloaded to the host",
    "--cpu-offloading-num-layers": "activations offloaded to the host",
    "--fine-grained-activation-offloading": "activations offloaded to the host",
    "--offload-modules": "activations offloaded to the host",
    "--optimizer-cpu-offload": "optimizer state on the host",
    "--optimizer-offload-fraction": "optimizer state on the host",
    "--use-torch-fsdp2": "FSDP shards parameters and gradients",
    "--use-megatron-fsdp": "FSDP shards parameters and gradients",
    "--use-custom-fsdp": "FSDP shards parameters and gradients",
    "--data-parallel-sharding-strategy": "FSDP shards parameters and gradients",
    "--enable-cuda-graph": "CUDA graphs keep static input/output buffers",
    "--cuda-graph-impl": "CUDA graphs keep static input/output buffers",
    "--cuda-graph-scope": "CUDA graphs keep static input/output buffers",
    "--external-cuda-graph": "CUDA graphs keep static input/output buffers",
    "--tp-comm-overlap": "Transformer Engine userbuffers for TP overlap",
    "--tp-comm-overlap-cfg": "Transformer Engine userbuffers for TP overlap",
    "--cp-comm-type": "all-gather / all-to-all context parallelism hold more keys and values",
    "--hierarchical-context-parallel-sizes": "hierarchical context parallelism buffers",
    "--moe-layer-recompute": "MoE layers recomputed in backward",
    "--moe-enable-deepep": "DeepEP dispatch buffers",
    "--moe-flex-dispatcher-backend": "flex dispatcher buffers",
    "--moe-shared-expert-overlap": "shared experts on a side stream",
    "--delay-wgrad-compute": "weight gradients held for later",
    "--distribute-saved-activations": "recompute checkpoints split over TP",
    "--first-last-layers-bf16": "mixed fp8/bf16 layers",
    "--num-layers-at-start-in-bf16": "mixed fp8/bf16 layers",
    "--num-layers-at-end-in-bf16": "mixed fp8/bf16 layers",
    "--fp4-format": "fp4 weights and activations",
    "--fp8-recipe": "the recipe's scaling tensors (delayed, tensorwise, mxfp8, blockwise)",
    "--accumulate-allreduce-grads-in-fp32": "fp32 gradient buffer with fp16",
    "--reuse-grad-buf-for-mxfp8-param-ag": "gradient buffer reused for fp8 parameters",
    "--use-legacy-models": "the legacy GPT model saves different tensors",
    "--hybrid-override-pattern": "Mamba layers",
    "--is-hybrid-model": "Mamba layers",
    "--decoder-seq-length": "encoder-decoder models",
    "--encoder-num-layers": "encoder-decoder models",
    "--encoder-seq-length": "encoder-decoder models",
    "--moe-use-legacy-grouped-gemm": "legacy grouped GEMM buffers",
    "--moe-router-padding-for-fp8": "padded expert inputs",
    "--use-transformer-engine-op-fuser": "TE's operation fuser saves different tensors",
}

# Prefixes (and exact names) of flags that cannot change GPU memory during training.
NO_EFFECT_PREFIXES = (
    "--log", "--tensorboard", "--wandb", "--timing-log", "--lr", "--min-lr", "--weight-decay",
    "--start-weight-decay", "--end-weight-decay", "--clip-grad", "--adam-", "--sgd-momentum",
    "--init-method", "--seed", "--save", "--load", "--no-load", "--pretrained-checkpoint",
    "--ckpt", "--no-ckpt", "--dist-ckpt", "--async-save", "--use-persistent-ckpt-worker", "--data",
    "--split", "--train-", "--eval-", "--exit-", "--vocab-file", "--merge-file",
    "--tokenizer-", "--tiktoken", "--decoupled-lr", "--decoupled-min-lr",
    "--apply-layernorm-1p", "--rotary-percent", "--mock-data", "--num-workers",
    "--no-mmap-bin-files",
    "--distributed-backend", "--distributed-timeout", "--use-mcore-models",
    "--no-persist-layer-norm", "--norm-epsilon", "--rotary-base", "--rotary-scaling-factor",
    "--rotary-seq-len-interpolation", "--rotary-interleaved", "--mscale", "--no-rope-fusion",
    "--no-bias-gelu-fusion", "--no-bias-swiglu-fusion", "--no-bias-dropout-fusion",
    "--bias-dropout-fusion", "--overlap-grad-reduce", "--overlap-param-gather",
    "--use-checkpoint", "--deterministic-mode", "--manual-gc", "--check-for-nan",
    "--no-check-for-nan", "--check-weight-hash", "--rerun-", "--result-rejected",
    "--verify-integrity", "--moe-aux-loss-coeff", "--moe-z-loss-coeff",
    "--moe-router-load-balancing-type", "--moe-router-score-function",
    "--moe-router-pre-softmax", "--moe-router-topk-scaling-factor",
    "--moe-router-enable-expert-bias", "--moe-router-bias-update-rate",
    "--moe-router-group-topk", "--moe-router-num-groups", "--moe-input-jitter-eps",
    "--moe-token-drop-policy", "--moe-per-layer-logging", "--mtp-loss-scaling-factor",
    "--ddp-", "--use-tp-pp-dp-mapping", "--test-mode", "--no-async-tensor-model-parallel",
    "--micro-batch-size-per", "--use-cpu-initialization", "--empty-unused-memory-level",
    "--override-opt_param-scheduler", "--use-checkpoint-opt_param-scheduler",
    "--calculate-per-token-loss", "--fp8-margin", "--fp8-interval", "--fp8-amax",
    "--fp8-wgrad", "--no-fp8-wgrad", "--fp8-dot-product-attention", "--fp8-multi-head",
    "--apply-query-key-layer-scaling", "--no-bias-gelu", "--use-rope-scaling",
    "--overlap-param-gather-with-optimizer-step",
    "--no-gradient-reduce-div-fusion", "--align-grad-reduce", "--align-param-gather",
    "--finetune", "--auto-detect-ckpt-format", "--no-save-optim", "--no-save-rng",
    "--no-load-optim", "--no-load-rng", "--exit-interval", "--exit-duration",
    "--num-dataset-builder-threads", "--object-storage-cache-path", "--dataloader-type",
    "--reset-position-ids", "--reset-attention-mask", "--eod-mask-loss",
    "--no-create-attention-mask-in-dataloader", "--create-attention-mask-in-dataloader",
    "--padded-vocab-size", "--moe-router-topk-limited-devices", "--profile",
    "--record-memory", "--nsys", "--use-pytorch-profiler", "--full-validation",
    "--skip-train", "--moe-router-fusion", "--moe-permute-fusion",
)


def classify(ignored: list[str]) -> tuple[list[str], list[str]]:
    """(flags that might change memory and are not modelled, flags that cannot), each sorted."""
    risky: set[str] = set()
    harmless: set[str] = set()
    for flag in ignored:
        if flag in NOT_MODELLED or not flag.startswith(NO_EFFECT_PREFIXES):
            risky.add(flag)
        else:
            harmless.add(flag)
    return sorted(risky), sorted(harmless)


def not_modelled_note(flags: list[str]) -> str:
    """One line naming the flags the estimate does not account for."""
    named = [f"{flag} ({NOT_MODELLED[flag]})" if flag in NOT_MODELLED else flag
             for flag in flags]
    return "not modelled (may change memory): " + ", ".join(named)


# Megatron's --recompute-modules; the model recomputes core attention only.
MODELLED_RECOMPUTE_MODULES = ("core_attn",)


def unmodelled_settings(cfg: MemoryConfig) -> list[str]:
    """Values of flags the model reads but does not reproduce, as flags to list."""
    out = []
    modules = cfg.recompute_modules or []
    other = [m for m in modules if m not in MODELLED_RECOMPUTE_MODULES]
    if cfg.recompute_granularity == "selective" and other:
        out.append("--recompute-modules " + " ".join(other))
    return out
