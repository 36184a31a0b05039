"""The memory model: Megatron's own report, and what the GPU really allocates.

`megatron_report` reproduces `megatron/training/theoretical_memory_usage.py` (core_v0.18+: TP,
replicated and expert parameter buckets) so its three numbers can be compared with the line
Megatron prints at the first iteration. `stage_estimates` is the allocated-memory model
(`allocated.py`: weights, gradients, optimizer state, workspaces and the activation peak over
the pipeline schedule, per rank), checked against Megatron's CI measurements
(`benchmarks/memory_accuracy.py`); the verdict is about the stage that dies first.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from trainmedic.memory.checks import Check
from trainmedic.memory.config import MemoryConfig
from trainmedic.memory.flags import classify, not_modelled_note, unmodelled_settings

MIB = 1024 * 1024
# Stated allowances beyond the tensors (see docs/memory.md).
RUNTIME_ALLOWANCE_MIB = 1536.0  # CUDA context and NCCL buffers: outside PyTorch's allocator
FRAGMENTATION_FRACTION = 0.05  # caching-allocator slack on top of what it hands out
TIGHT_FRACTION = 0.90  # above this share of the card the run is "tight"


@dataclass
class ParamCounts:
    """Parameter counts by how each rank holds them (Megatron's three buckets)."""

    attention: float
    dense_mlp: float
    shared_expert: float
    routed_experts: float
    active_routed_experts: float
    layernorm: float
    router: float
    shared_gate: float
    latent: float
    embedding: float  # one h x V table
    final_norm: float
    dense_layers: int
    moe_layers: int
    mtp_dense_layers: int
    mtp_moe_layers: int
    untied: bool

    @property
    def dense_layer(self) -> float:
        return self.attention + self.dense_mlp + self.layernorm

    @property
    def moe_layer(self) -> float:
        return (
            self.attention + self.shared_expert + self.routed_experts + self.latent
            + self.layernorm + self.router + self.shared_gate
        )

    @property
    def active_moe_layer(self) -> float:
        return self.moe_layer - self.routed_experts + self.active_routed_experts

    @property
    def transformer_block(self) -> float:
        return (
            self.dense_layer * self.dense_layers + self.moe_layer * self.moe_layers
            + self.final_norm
        )

    @property
    def mtp_block(self) -> float:
        return self.dense_layer * self.mtp_dense_layers + self.moe_layer * self.mtp_moe_layers

    @property
    def embedding_layers(self) -> float:
        return 2 * self.embedding if self.untied else self.embedding

    @property
    def total(self) -> float:
        return self.transformer_block + self.mtp_block + self.embedding_layers

    @property
    def active_total(self) -> float:
        block = (
            self.dense_layer * self.dense_layers + self.active_moe_layer * self.moe_layers
            + self.final_norm
        )
        return block + self.mtp_block + self.embedding_layers

    def buckets(self, dense: int, moe: int) -> tuple[float, float, float]:
        """(TP-sharded, replicated, expert-sharded) parameters of `dense` + `moe` layers."""
        tp_sharded = (self.attention + self.dense_mlp) * dense + (
            self.attention + self.shared_expert
        ) * moe
        replicated = self.layernorm * dense + (
            self.layernorm + self.latent + self.router + self.shared_gate
        ) * moe
        expert = self.routed_experts * moe
        return tp_sharded, replicated, expert


def count_parameters(cfg: MemoryConfig) -> ParamCounts:
    """Megatron's parameter count: GQA, kv_channels, SwiGLU, MoE, MLA, MTP; no linear biases."""
    h = cfg.hidden_size
    a = cfg.num_attention_heads
    g = cfg.effective_query_groups
    gated = 1.5 if cfg.swiglu else 1.0
    norm = 1 if cfg.normalization == "RMSNorm" else 2
    moe = cfg.num_experts is not None
    experts = cfg.num_experts or 1
    if moe:
        freq = cfg.moe_layer_freq
        pattern = [1 if i % freq == 0 else 0 for i in range(cfg.num_layers)] if isinstance(
            freq, int
        ) else list(freq)
        moe_ffn = cfg.moe_ffn_hidden_size or cfg.effective_ffn_hidden_size
    else:
        pattern = [0] * cfg.num_layers
        moe_ffn = 0
    moe_layers = sum(pattern)
    mtp = cfg.mtp_num_layers or 0
    mtp_moe = pattern[-1] * mtp if pattern else 0
    attention: float
    if cfg.multi_latent_attention:
        qk = cfg.qk_head_dim + cfg.qk_pos_emb_head_dim
        q_term = h * a * qk if cfg.q_lora_rank is None else cfg.q_lora_rank * (h + a * qk + norm)
        attention = (
            q_term
            + cfg.kv_lora_rank * (h + a * (cfg.qk_head_dim + cfg.v_head_dim) + norm)
            + h * cfg.qk_pos_emb_head_dim
            + a * cfg.v_head_dim * h
        )
    else:
        attention = 2 * h * h * ((1 + g / a) * (cfg.effective_kv_channels * a / h))
    routed_width = cfg.moe_latent_size or h
    shared = cfg.moe_shared_expert_intermediate_size or 0
    return ParamCounts(
        attention=attention,
        dense_mlp=2 * h * cfg.effective_ffn_hidden_size * gated,
        shared_expert=2 * h * shared * gated,
        routed_experts=2 * routed_width * moe_ffn * experts * gated if moe else 0.0,
        active_routed_experts=2 * routed_width * moe_ffn * cfg.moe_router_topk * gated
        if moe
        else 0.0,
        layernorm=2 * h * norm,
        router=(h * experts + (experts if cfg.add_bias_linear else 0)) if moe else 0,
        shared_gate=h if shared > 0 and cfg.moe_shared_expert_gate else 0,
        latent=2 * h * cfg.moe_latent_size if moe and cfg.moe_latent_size else 0,
        embedding=h * cfg.padded_vocab_size,
        final_norm=norm * h,
        dense_layers=cfg.num_layers - moe_layers,
        moe_layers=moe_layers,
        mtp_dense_layers=mtp - mtp_moe,
        mtp_moe_layers=mtp_moe,
        untied=cfg.untie_embeddings_and_output_weights,
    )


def megatron_bytes_per_param(distributed_optimizer: bool, dp: int) -> float:
    """Megatron's bf16 row: 18 B, or 6 + 12/DP with the distributed optimizer."""
    return 6 + 12 / dp if distributed_optimizer else 18.0


def expert_data_parallel_size(cfg: MemoryConfig) -> int:
    return max(1, cfg.effective_world_size // (cfg.etp * cfg.expert_model_parallel_size * cfg.pp))


def sequence_parallel_on(cfg: MemoryConfig) -> bool:
    """Megatron switches sequence parallelism off when TP is 1."""
    return cfg.sequence_parallel and cfg.tp > 1


@dataclass
class MegatronReport:
    """Megatron's three numbers (MiB, most loaded GPU = pipeline stage 0) and the inputs."""

    weight_and_optimizer_mib: float
    activation_mib: float
    total_mib: float
    activation_path: str  # "sp" or "without_sp"
    params_most_loaded_shard: float
    params_other_shards: float | None


def megatron_weight_and_optimizer_bytes(cfg: MemoryConfig, pc: ParamCounts) -> float:
    t, p = cfg.tp, cfg.pp
    tp_block, rep_block, exp_block = pc.buckets(pc.dense_layers, pc.moe_layers)
    rep_block += pc.final_norm
    tp_mtp, rep_mtp, exp_mtp = pc.buckets(pc.mtp_dense_layers, pc.mtp_moe_layers)
    tp_shard = (tp_block / p + tp_mtp + pc.embedding) / t
    if pc.untied and p == 1:
        tp_shard += pc.embedding / t
    replicated = rep_block / p + rep_mtp
    expert = (exp_block / p + exp_mtp) / (cfg.etp * cfg.expert_model_parallel_size)
    dist = cfg.use_distributed_optimizer
    return (tp_shard + replicated) * megatron_bytes_per_param(
        dist, cfg.data_parallel_size
    ) + expert * megatron_bytes_per_param(dist, expert_data_parallel_size(cfg))


def _pipeline_factor(cfg: MemoryConfig, num_microbatches: int | None) -> float:
    p, v = cfg.pp, cfg.virtual_pipeline_size
    if v is not None:
        return 1 + (p - 1) / (p * v)
    if p > 1 and num_microbatches is not None:
        return min(1.0, num_microbatches / p)
    return 1.0


def megatron_activation_bytes(cfg: MemoryConfig, num_microbatches: int | None) -> tuple[float, str]:
    """Stage-0 activations exactly as Megatron computes them, and which path it took."""
    s, b, h, t, p = cfg.seq_length, cfg.micro_batch_size, cfg.hidden_size, cfg.tp, cfg.pp
    f = cfg.effective_ffn_hidden_size
    vocab = cfg.padded_vocab_size
    sp_path = sequence_parallel_on(cfg) and cfg.recompute_granularity == "selective"
    per_layer = s * b * h * (18 + 4 * (f / h)) if sp_path else s * b * h * (10 + 24 / t)
    act = per_layer * cfg.num_layers
    act += 8 * s * b * p + s * b * h * p
    act *= _pipeline_factor(cfg, num_microbatches)
    if sp_path:
        if p == 1:
            act += s * b * h * 4 * (1 + vocab / h)
        return act / t, "sp"
    if p == 1:
        act += (s * b * vocab / t + s * b * h) * 2
    return act * 1.05, "without_sp"


def megatron_report(cfg: MemoryConfig, num_microbatches: int | None = None) -> MegatronReport:
    """Megatron's `report_theoretical_memory` (MiB; unrounded)."""
    pc = count_parameters(cfg)
    weights = megatron_weight_and_optimizer_bytes(cfg, pc) / MIB
    act_bytes, path = megatron_activation_bytes(cfg, num_microbatches)
    tp_block, rep_block, exp_block = pc.buckets(pc.dense_layers, pc.moe_layers)
    rep_block += pc.final_norm
    tp_mtp, rep_mtp, exp_mtp = pc.buckets(pc.mtp_dense_layers, pc.mtp_moe_layers)
    ep = cfg.etp * cfg.expert_model_parallel_size
    most = (
        (tp_block / cfg.pp + tp_mtp + pc.embedding) / cfg.tp
        + rep_block / cfg.pp + rep_mtp + (exp_block / cfg.pp + exp_mtp) / ep
    )
    if pc.untied and cfg.pp == 1:
        most += pc.embedding / cfg.tp
    other = (
        tp_block / (cfg.pp * cfg.tp) + rep_block / cfg.pp + exp_block / (cfg.pp * ep)
        if cfg.pp > 1
        else None
    )
    activation = act_bytes / MIB
    return MegatronReport(weights, activation, weights + activation, path, most, other)


# ---------------------------------------------------------------- what the GPU allocates
@dataclass
class StageEstimate:
    """One pipeline stage (rank): the allocated-memory model (memory/allocated.py), MiB.

    `allocated_mib` is comparable with `torch.cuda.max_memory_allocated()`; `total_mib` adds
    what the caching allocator does not count (CUDA context, NCCL) and its fragmentation.
    """

    stage: int
    parameters: float
    weights_and_optimizer_mib: float  # weights, gradient buffer, optimizer state (fp8 copies)
    workspaces_mib: float  # cuBLAS / Transformer Engine workspaces, Megatron's global buffer
    activation_mib: float  # saved activations and temporaries at the schedule's peak
    allocated_mib: float
    runtime_allowance_mib: float
    fragmentation_mib: float
    total_mib: float
    in_flight_microbatches: int  # chunk-microbatches whose activations are held at the peak
    warmup: int  # Megatron's num_warmup_microbatches on this rank (chunk passes)

    def to_dict(self) -> dict[str, float | int]:
        return dict(self.__dict__)


WORKSPACE_TERMS = ("workspace", "global buffer")


def stage_estimates(cfg: MemoryConfig) -> list[StageEstimate]:
    """Every pipeline stage's allocated peak, plus the stated allowances."""
    from trainmedic.memory.allocated import allocated_by_rank

    out = []
    for rank in allocated_by_rank(cfg):
        workspaces = sum(v for k, v in rank.static.items()
                         if any(word in k for word in WORKSPACE_TERMS))
        tensors = rank.static_mib - workspaces
        allocated = rank.peak_mib
        frag = FRAGMENTATION_FRACTION * allocated
        out.append(StageEstimate(
            stage=rank.rank,
            parameters=rank.parameters,
            weights_and_optimizer_mib=tensors,
            workspaces_mib=workspaces,
            activation_mib=rank.activation_peak_mib,
            allocated_mib=allocated,
            runtime_allowance_mib=RUNTIME_ALLOWANCE_MIB,
            fragmentation_mib=frag,
            total_mib=allocated + RUNTIME_ALLOWANCE_MIB + frag,
            in_flight_microbatches=rank.in_flight_at_peak,
            warmup=rank.warmup,
        ))
    return out


def verdict_for(total_mib: float, capacity_mib: float) -> str:
    if total_mib > capacity_mib:
        return "does not fit"
    if total_mib > TIGHT_FRACTION * capacity_mib:
        return "tight"
    return "fits"


@dataclass(frozen=True)
class Suggestion:
    """A configuration change (or two) and the re-estimated memory it leads to."""

    change: str
    args: list[str]
    total_mib: float
    megatron_total_mib: float
    verdict: str
    cost: int

    def to_dict(self) -> dict[str, object]:
        return {"change": self.change, "args": list(self.args), "total_mib": self.total_mib,
                "megatron_total_mib": self.megatron_total_mib, "verdict": self.verdict,
                "cost": self.cost}


@dataclass
class MemoryReport:
    """Everything `trainmedic memory` shows; `to_dict()` is its --json form."""

    config: MemoryConfig
    params: ParamCounts
    megatron: MegatronReport
    stages: list[StageEstimate]
    capacity_mib: float
    capacity_source: str
    notes: list[str] = field(default_factory=list)
    suggestions: list[Suggestion] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)

    @property
    def worst(self) -> StageEstimate:
        return max(self.stages, key=lambda st: st.total_mib)

    @property
    def verdict(self) -> str:
        return verdict_for(self.worst.total_mib, self.capacity_mib)

    def to_dict(self) -> dict[str, object]:
        m, w, pc = self.megatron, self.worst, self.params
        return {
            "weight_and_optimizer_mib": m.weight_and_optimizer_mib,
            "activation_mib": m.activation_mib,
            "total_mib": m.total_mib,
            "megatron": {
                "activation_path": m.activation_path,
                "num_microbatches": self.config.first_num_microbatches,
                "params_most_loaded_shard": m.params_most_loaded_shard,
                "params_other_shards": m.params_other_shards,
            },
            "parameters": {
                "total": pc.total,
                "active": pc.active_total,
                "transformer_block": pc.transformer_block,
                "mtp_block": pc.mtp_block,
                "embedding_layers": pc.embedding_layers,
            },
            "extended": {
                "most_loaded_stage": w.stage,
                "weights_and_optimizer_mib": w.weights_and_optimizer_mib,
                "workspaces_mib": w.workspaces_mib,
                "activation_mib": w.activation_mib,
                "allocated_mib": w.allocated_mib,
                "runtime_allowance_mib": w.runtime_allowance_mib,
                "fragmentation_mib": w.fragmentation_mib,
                "total_mib": w.total_mib,
            },
            "stages": [st.to_dict() for st in self.stages],
            "capacity_mib": self.capacity_mib,
            "capacity_source": self.capacity_source,
            "verdict": self.verdict,
            "suggestions": [sug.to_dict() for sug in self.suggestions],
            "checks": [c.to_dict() for c in self.checks],
            "notes": list(self.config.notes) + self.notes,
            "ignored_args": sorted(set(self.config.ignored_args)),
            "not_modelled_args": (classify(self.config.ignored_args)[0]
                                  + unmodelled_settings(self.config)),
            "inputs": self.config.to_dict(),
        }


DEFAULT_CAPACITY_MIB = 80 * 1024.0


def estimate(
    cfg: MemoryConfig,
    *,
    capacity_mib: float | None = None,
    capacity_source: str | None = None,
) -> MemoryReport:
    """The report for `cfg` on a card of `capacity_mib` (default 80 GiB, with a note); the
    cheapest changes that fit are `suggest.add_suggestions`'s job."""
    notes: list[str] = []
    if capacity_mib is None:
        capacity_mib = DEFAULT_CAPACITY_MIB
        capacity_source = "default"
        notes.append("GPU capacity not given: assumed 80 GiB; pass --gpu-memory 80GiB")
    report = MemoryReport(
        config=cfg,
        params=count_parameters(cfg),
        megatron=megatron_report(cfg, cfg.first_num_microbatches),
        stages=stage_estimates(cfg),
        capacity_mib=capacity_mib,
        capacity_source=capacity_source or "--gpu-memory",
        notes=notes,
    )
    if cfg.sequence_parallel and cfg.tp == 1:
        notes.append("--sequence-parallel is ignored at TP 1 (Megatron turns it off)")
    risky = classify(cfg.ignored_args)[0] + unmodelled_settings(cfg)
    if risky:
        notes.append(not_modelled_note(risky))
    return report
