"""Which transformer layers, embedding, output layer and MTP layers each pipeline rank holds.

Mirrors Megatron-Core's layer placement (`megatron/core/transformer/transformer_block.py`
`get_num_layers_to_build` and `get_transformer_layer_offset`): virtual stage k of rank r is
model chunk k; chunks are numbered rank-major within a virtual stage, so virtual stage
`k * PP + r` follows `k * PP + r - 1`. Uneven first/last stages, and the embedding and loss
counted as layers (`--account-for-embedding/loss-in-pipeline-split`), are placed as Megatron
places them; the MTP block lives on the last virtual stage with the loss.
"""

from __future__ import annotations

from dataclasses import dataclass

from trainmedic.memory.config import MemoryConfig


@dataclass(frozen=True)
class Chunk:
    """One model chunk (virtual stage) of a pipeline rank."""

    rank: int
    index: int  # model chunk on this rank (0 without interleaving)
    layers: tuple[int, ...]  # global indices of its transformer layers
    embedding: bool  # first virtual stage: word (and position) embeddings
    output: bool  # last virtual stage: final norm, output layer, loss (and MTP)


def virtual_stages(cfg: MemoryConfig) -> int:
    return cfg.virtual_pipeline_size or 1


def effective_layer_count(cfg: MemoryConfig) -> int:
    """Layers Megatron splits: the transformer layers, plus one each for the embedding and the
    loss when they are accounted for in the pipeline split."""
    return (cfg.num_layers + cfg.account_for_embedding_in_pipeline_split
            + cfg.account_for_loss_in_pipeline_split)


def layers_per_virtual_stage(cfg: MemoryConfig) -> list[int]:
    """Transformer layers in each virtual stage, in model order (length PP x VP).

    Raises ValueError when the layers do not divide as Megatron requires (the checks report it
    first; the model then falls back to an even split).
    """
    p, v = cfg.pp, virtual_stages(cfg)
    first, last = cfg.decoder_first_pipeline_num_layers, cfg.decoder_last_pipeline_num_layers
    per_rank: list[int]
    if p > 1 and (first is not None or last is not None):
        rest = cfg.num_layers - (first or 0) - (last or 0)
        middle = p - (first is not None) - (last is not None)
        if rest < 0 or (middle and rest % middle) or (not middle and rest):
            raise ValueError("uneven pipeline layers do not divide")
        share = rest // middle if middle else 0
        per_rank = [share] * p
        if first is not None:
            per_rank[0] = first
        if last is not None:
            per_rank[-1] = last
        for n in per_rank:
            if n % v:
                raise ValueError("a stage's layers do not divide into its virtual stages")
        per_stage = [0] * (p * v)
        for k in range(v):
            for r in range(p):
                per_stage[k * p + r] = per_rank[r] // v
        return per_stage
    total = effective_layer_count(cfg)
    if total % (p * v):
        raise ValueError("layers do not divide over the virtual stages")
    per_stage = [total // (p * v)] * (p * v)
    if cfg.account_for_embedding_in_pipeline_split:
        per_stage[0] -= 1  # the embedding takes one layer's slot in the first virtual stage
    if cfg.account_for_loss_in_pipeline_split:
        per_stage[-1] -= 1  # the loss takes one layer's slot in the last virtual stage
    if min(per_stage) < 0:
        raise ValueError("more pipeline slots than layers")
    return per_stage


def even_fallback(cfg: MemoryConfig) -> list[int]:
    """An approximately even split for layouts Megatron would refuse (the checks say so)."""
    stages = cfg.pp * virtual_stages(cfg)
    base, extra = divmod(cfg.num_layers, stages)
    return [base + (k < extra) for k in range(stages)]


def chunks_of_rank(cfg: MemoryConfig, rank: int) -> list[Chunk]:
    """The model chunks pipeline rank `rank` holds, in chunk order."""
    p, v = cfg.pp, virtual_stages(cfg)
    try:
        per_stage = layers_per_virtual_stage(cfg)
    except ValueError:
        per_stage = even_fallback(cfg)
    starts = [0]
    for n in per_stage:
        starts.append(starts[-1] + n)
    out = []
    for k in range(v):
        stage = k * p + rank
        layers = tuple(range(starts[stage], starts[stage + 1]))
        out.append(Chunk(rank, k, layers, embedding=stage == 0, output=stage == p * v - 1))
    return out


def moe_pattern(cfg: MemoryConfig) -> list[bool]:
    """Whether each transformer layer is an MoE layer (Megatron's --moe-layer-freq)."""
    if not cfg.num_experts:
        return [False] * cfg.num_layers
    freq = cfg.moe_layer_freq
    if isinstance(freq, int):
        return [i % freq == 0 for i in range(cfg.num_layers)]
    return [bool(x) for x in freq][: cfg.num_layers]
