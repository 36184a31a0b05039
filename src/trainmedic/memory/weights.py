"""Parameters one GPU holds, module by module, and the bytes they cost with their gradients
and optimizer state.

Unlike Megatron's report (which counts no biases and only stage 0), this counts what
Megatron-Core's GPT modules build on each pipeline rank (`gpt_layer_specs.py`): linear biases
(`--add-bias-linear`, Megatron's default), LayerNorm biases, QK norms, learned position
embeddings (replicated, first stage), the last stage's output layer (its own copy of a tied
embedding when PP > 1), the final norm, MTP layers and the embedding they need on the last
stage. Column- and row-parallel weights are split over TP (experts over ETP), row-parallel
biases and norms are replicated, MLA's down projections are replicated ("duplicated").
"""

from __future__ import annotations

from dataclasses import dataclass

from trainmedic.memory.config import MemoryConfig
from trainmedic.memory.layout import Chunk, moe_pattern

DTYPE_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "uint8": 1}


@dataclass
class RankParameters:
    """Parameters of one GPU, by how the optimizer shards them."""

    dense: float = 0.0  # sharded over the data-parallel group (with CP) by the dist. optimizer
    expert: float = 0.0  # sharded over the expert data-parallel group
    linear_weights: float = 0.0  # of those, weights of Transformer Engine linears (fp8 copies)

    @property
    def total(self) -> float:
        return self.dense + self.expert


def _norm(cfg: MemoryConfig) -> int:
    """Parameters per element of a norm: weight, plus bias for LayerNorm."""
    return 1 if cfg.normalization == "RMSNorm" else 2


def attention_parameters(cfg: MemoryConfig) -> tuple[float, float]:
    """(parameters on one TP rank, of which linear weights) of one self-attention block,
    including its input norm."""
    h, a, t = cfg.hidden_size, cfg.num_attention_heads, cfg.tp
    n = _norm(cfg)
    bias = cfg.add_bias_linear
    if cfg.multi_latent_attention:
        qk = cfg.qk_head_dim + cfg.qk_pos_emb_head_dim
        linear = 0.0
        if cfg.q_lora_rank:
            q_down = h * cfg.q_lora_rank  # duplicated on every TP rank
            q_up = cfg.q_lora_rank * a * qk / t
            linear += q_down + q_up
            extra = cfg.q_lora_rank * n  # q norm, fused into the up projection
        else:
            linear += h * a * qk / t
            extra = 0
        kv_down = h * (cfg.kv_lora_rank + cfg.qk_pos_emb_head_dim)  # duplicated
        kv_up = cfg.kv_lora_rank * a * (cfg.qk_head_dim + cfg.v_head_dim) / t
        proj = a * cfg.v_head_dim * h / t
        linear += kv_down + kv_up + proj
        extra += cfg.kv_lora_rank * n + h * n + (h if bias else 0)
        return linear + extra, linear
    d, g = cfg.effective_kv_channels, cfg.effective_query_groups
    qkv = h * (a + 2 * g) * d / t
    proj = a * d * h / t
    params = qkv + proj + h * n  # input norm fused into linear_qkv
    if bias or cfg.add_qkv_bias:
        params += (a + 2 * g) * d / t
    if bias:
        params += h  # row-parallel bias: replicated
    if cfg.qk_layernorm:
        params += 2 * d * n
    return params, qkv + proj


def dense_mlp_parameters(cfg: MemoryConfig, ffn: int, tp: int,
                         width: int | None = None) -> tuple[float, float]:
    """(parameters, linear weights) of an MLP of width `ffn` split over `tp` (no norm), on
    `width`-wide tokens (the hidden size, or an MoE latent size)."""
    h = width or cfg.hidden_size
    gate = 2 if cfg.swiglu else 1
    weights = h * ffn * gate / tp + ffn * h / tp
    params = weights
    if cfg.add_bias_linear:
        params += ffn * gate / tp + h
    return params, weights


def layer_parameters(cfg: MemoryConfig, moe: bool) -> RankParameters:
    """Parameters of one transformer layer on one GPU."""
    h, n = cfg.hidden_size, _norm(cfg)
    attn, attn_linear = attention_parameters(cfg)
    out = RankParameters(dense=attn + h * n, linear_weights=attn_linear)  # + pre-MLP norm
    if not moe:
        mlp, lin = dense_mlp_parameters(cfg, cfg.effective_ffn_hidden_size, cfg.tp)
        out.dense += mlp
        out.linear_weights += lin
        return out
    experts = cfg.num_experts or 1
    local = experts / cfg.expert_model_parallel_size
    ffn = cfg.moe_ffn_hidden_size or cfg.effective_ffn_hidden_size
    expert, expert_lin = dense_mlp_parameters(cfg, ffn, cfg.etp, cfg.moe_latent_size)
    out.expert += local * expert
    out.linear_weights += local * expert_lin
    out.dense += experts * h  # router, replicated
    if cfg.moe_shared_expert_intermediate_size:
        shared, lin = dense_mlp_parameters(cfg, cfg.moe_shared_expert_intermediate_size, cfg.tp)
        out.dense += shared + (h if cfg.moe_shared_expert_gate else 0)
        out.linear_weights += lin
    if cfg.moe_latent_size:
        out.dense += 2 * h * cfg.moe_latent_size
    return out


def rank_parameters(cfg: MemoryConfig, chunks: list[Chunk]) -> RankParameters:
    """All parameters of the GPU holding `chunks` (one pipeline rank)."""
    h, t, n = cfg.hidden_size, cfg.tp, _norm(cfg)
    vocab = cfg.padded_vocab_size
    pattern = moe_pattern(cfg)
    out = RankParameters()
    kinds = {moe: layer_parameters(cfg, moe) for moe in (False, True)}
    for chunk in chunks:
        for layer in chunk.layers:
            _add(out, kinds[pattern[layer]])
    pre = any(c.embedding for c in chunks)
    post = any(c.output for c in chunks)
    mtp = (cfg.mtp_num_layers or 0) if post else 0
    if pre or mtp:  # the MTP block embeds its shifted tokens on the last stage
        out.dense += vocab * h / t
        if cfg.position_embedding_type == "learned_absolute":
            out.dense += (cfg.max_position_embeddings or cfg.seq_length) * h
    if post:
        out.dense += h * n  # final norm
        if cfg.untie_embeddings_and_output_weights or not (pre or mtp):
            out.dense += vocab * h / t  # output layer (a tied copy when it has no embedding)
    for _ in range(mtp):
        last_moe = pattern[-1] if pattern else False
        _add(out, layer_parameters(cfg, last_moe))
        out.dense += 3 * h * n + 2 * h * h / t  # enorm, hnorm, final norm; eh_proj
        out.linear_weights += 2 * h * h / t
    return out


def _add(total: RankParameters, part: RankParameters) -> None:
    total.dense += part.dense
    total.expert += part.expert
    total.linear_weights += part.linear_weights


@dataclass(frozen=True)
class StateBytes:
    """Bytes per parameter: kept whole on every data-parallel rank, and sharded by the
    distributed optimizer."""

    weights: float
    grads: float
    optimizer: float  # main parameters and optimizer moments, before sharding


def state_bytes(cfg: MemoryConfig) -> StateBytes:
    """Per-parameter bytes for the precision and optimizer flags.

    Megatron's distributed-optimizer guide: bf16 params + fp32 grads = 6 replicated + 12
    sharded; fp16 params + fp16 grads 4 + 16 (the optimizer keeps fp32 copies of the grads);
    fp32 8 + 8. `--grad-reduce-in-bf16` keeps the grad buffer in bf16 (arguments.py turns
    accumulate_allreduce_grads_in_fp32 off). With `--use-precision-aware-optimizer`,
    `--main-grads-dtype`, `--main-params-dtype`, `--exp-avg-dtype` and `--exp-avg-sq-dtype`
    set the buffers' dtypes. SGD keeps one momentum buffer instead of Adam's two moments.
    """
    precision = cfg.precision
    weights = 4.0 if precision == "fp32" else 2.0
    aware = cfg.use_precision_aware_optimizer
    if precision == "fp32":
        grads = 4.0
    elif (precision == "fp16" or cfg.grad_reduce_in_bf16
          or (aware and cfg.main_grads_dtype == "bf16")):
        grads = 2.0
    else:
        grads = 4.0
    main = 0.0 if precision == "fp32" else float(
        DTYPE_BYTES.get(cfg.main_params_dtype, 4) if aware else 4)
    if precision == "fp16":
        main += 4.0  # fp32 copies of the fp16 gradients, held by the optimizer
    if cfg.optimizer == "sgd":
        moments = 4.0
    else:
        avg = DTYPE_BYTES.get(cfg.exp_avg_dtype, 4) if aware else 4
        avg_sq = DTYPE_BYTES.get(cfg.exp_avg_sq_dtype, 4) if aware else 4
        moments = float(avg + avg_sq)
    return StateBytes(weights, grads, main + moments)


def optimizer_shards(cfg: MemoryConfig) -> tuple[int, int]:
    """(dense, expert) shard counts of the optimizer state (1 without the dist. optimizer).

    The distributed optimizer shards over the data-parallel group including CP ranks
    (`data_parallel_group_with_cp`), experts over the expert data-parallel group
    (world / (PP x EP x ETP)); `--num-distributed-optimizer-instances N` keeps N copies.
    """
    if not cfg.use_distributed_optimizer:
        return 1, 1
    instances = max(1, cfg.num_distributed_optimizer_instances)
    dense = max(1, cfg.data_parallel_size * cfg.cp // instances)
    edp = cfg.effective_world_size // (cfg.pp * cfg.expert_model_parallel_size * cfg.etp)
    return dense, max(1, edp // instances)
