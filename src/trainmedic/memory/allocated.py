"""What PyTorch's caching allocator holds at its peak on each pipeline rank.

The number comparable with `torch.cuda.max_memory_allocated()` (Megatron logs it as
`mem-max-allocated-bytes`): the persistent tensors (weights, gradient buffer, optimizer state,
framework workspaces) plus the most activation memory held at once over one iteration's
pipeline schedule (`schedule.py`), built from the tensors each module saves
(`activations.py`). It leaves out what the allocator does not count (the CUDA context,
NCCL's own buffers) and its fragmentation; `model.py` adds stated allowances for those.

Assumptions that are not flags: Hopper-sized workspaces, balanced MoE routing, Adam unless
`--optimizer sgd`, no evaluation pass (its forward-only peak is lower).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from trainmedic.memory.activations import ChunkActivations, chunk_activations
from trainmedic.memory.config import MemoryConfig
from trainmedic.memory.layout import Chunk, chunks_of_rank, moe_pattern
from trainmedic.memory.schedule import ChunkMemory, peak
from trainmedic.memory.weights import (
    optimizer_shards,
    rank_parameters,
    state_bytes,
)
from trainmedic.memory.workspaces import workspace_terms

MIB = 1024 * 1024
FP8_WEIGHT_COPY_BYTES = 2.0  # TE caches each linear weight in fp8 and its transpose


@dataclass
class RankAllocation:
    """One pipeline rank's allocated memory (MiB) and where it goes."""

    rank: int
    parameters: float
    static: dict[str, float] = field(default_factory=dict)  # persistent tensors, MiB
    activation_peak_mib: float = 0.0  # saved activations and temporaries at the peak
    largest_chunk_saved: dict[str, float] = field(default_factory=dict)  # MiB per microbatch
    in_flight_at_peak: int = 0  # chunk-microbatches held at the peak
    warmup: int = 0

    @property
    def static_mib(self) -> float:
        return sum(self.static.values())

    @property
    def peak_mib(self) -> float:
        return self.static_mib + self.activation_peak_mib

    def to_dict(self) -> dict[str, object]:
        return {
            "rank": self.rank,
            "parameters": self.parameters,
            "static_mib": self.static,
            "activation_peak_mib": self.activation_peak_mib,
            "in_flight_at_peak": self.in_flight_at_peak,
            "warmup_passes": self.warmup,
            "peak_mib": self.peak_mib,
        }


def static_terms(cfg: MemoryConfig, rank: int,
                 chunks: list[Chunk] | None = None) -> tuple[float, dict[str, float]]:
    """(parameters, persistent bytes by name) of one GPU of pipeline rank `rank`."""
    chunks = chunks if chunks is not None else chunks_of_rank(cfg, rank)
    params = rank_parameters(cfg, chunks)
    per = state_bytes(cfg)
    dense_shards, expert_shards = optimizer_shards(cfg)
    terms = {
        "weights": per.weights * params.total,
        "gradient buffer": per.grads * params.total,
        "optimizer state (main params, moments)": per.optimizer * (
            params.dense / dense_shards + params.expert / expert_shards),
    }
    if cfg.fp8 and not cfg.fp8_param_gather:
        # TE keeps an fp8 cast (and transpose) of every linear weight between microbatches;
        # with --fp8-param-gather the weights themselves are fp8 (+ transpose), the same
        # 2 bytes as bf16, and no cast is kept
        terms["fp8 weight copies"] = FP8_WEIGHT_COPY_BYTES * params.linear_weights
    last = rank == cfg.pp - 1
    terms.update(workspace_terms(cfg, last_stage=last))
    return params.total, terms


def _cached_chunk(cfg: MemoryConfig, chunk: Chunk,
                  cache: dict[tuple[object, ...], ChunkActivations]) -> ChunkActivations:
    """Chunks with the same layer kinds, embedding and output keep the same bytes."""
    pattern = moe_pattern(cfg)
    key = (tuple(pattern[i] for i in chunk.layers), chunk.embedding, chunk.output)
    if key not in cache:
        cache[key] = chunk_activations(cfg, chunk)
    return cache[key]


def rank_allocation(cfg: MemoryConfig, rank: int,
                    cache: dict[tuple[object, ...], ChunkActivations] | None = None,
                    ) -> RankAllocation:
    """Static tensors plus the activation peak of pipeline rank `rank`."""
    cache = {} if cache is None else cache
    chunks = chunks_of_rank(cfg, rank)
    params, terms = static_terms(cfg, rank, chunks)
    acts = [_cached_chunk(cfg, c, cache) for c in chunks]
    memories = [ChunkMemory(a.saved_total, a.forward_peak, a.backward_peak) for a in acts]
    microbatches = cfg.num_microbatches
    result = peak(memories, pp=cfg.pp, rank=rank, microbatches=microbatches,
                  group_size=cfg.microbatch_group_size_per_vp_stage,
                  combined=cfg.overlap_moe_expert_parallel_comm)
    biggest = max(acts, key=lambda a: a.saved_total)
    deferred = deferred_wgrad_bytes(cfg) if any(c.output for c in chunks) else 0.0
    return RankAllocation(
        rank=rank,
        parameters=params,
        static={k: v / MIB for k, v in terms.items()},
        activation_peak_mib=(result.peak_bytes + deferred) / MIB,
        largest_chunk_saved={k: v / MIB for k, v in biggest.saved.items()},
        in_flight_at_peak=result.in_flight_at_peak,
        warmup=result.warmup,
    )


def deferred_wgrad_bytes(cfg: MemoryConfig) -> float:
    """`--defer-embedding-wgrad-compute`: the output layer keeps each microbatch's bf16
    logits gradient and its (gathered) input until the pipeline flush, for the first
    `--wgrad-deferral-limit` microbatches (all when 0), so they are all held when the
    last microbatches run their backward."""
    if not cfg.defer_embedding_wgrad_compute:
        return 0.0
    tokens = cfg.seq_length / cfg.cp * cfg.micro_batch_size
    limit = cfg.wgrad_deferral_limit or cfg.num_microbatches
    kept = min(limit, cfg.num_microbatches - 1)
    per = 2.0 * tokens * cfg.padded_vocab_size / cfg.tp + 2.0 * tokens * cfg.hidden_size
    return kept * per


def allocated_by_rank(cfg: MemoryConfig) -> list[RankAllocation]:
    """Every pipeline rank's allocated peak."""
    cache: dict[tuple[object, ...], ChunkActivations] = {}
    return [rank_allocation(cfg, rank, cache) for rank in range(cfg.pp)]
