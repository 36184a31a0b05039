"""A Megatron-style training configuration, read from Megatron's own argument names.

Megatron has hundreds of flags; we read the few that decide memory and launch-time validity
with a small parser of our own (no Megatron import), keep Megatron's defaults, and record every
flag we ignored so the user sees what was not taken into account.
"""

from __future__ import annotations

import ast
import dataclasses
import math
from dataclasses import dataclass, field

from trainmedic.errors import UsageError

REQUIRED = ("num_layers", "hidden_size", "num_attention_heads", "seq_length")

# Vocabulary sizes of tokenizers whose size the flags do not state (assumed, with a note).
GPT2_VOCAB = 50257
TOKENIZER_VOCAB = {
    "GPT2BPETokenizer": GPT2_VOCAB,
    "Llama2Tokenizer": 32000,
    "LLamaTokenizer": 32000,  # Pai-Megatron-Patch --patch-tokenizer-type names
    "LLama2Tokenizer": 32000,
    "LLama3Tokenizer": 128256,
}
# Well-known Hugging Face tokenizer families, matched in --tokenizer-model (lower case).
MODEL_NAME_VOCAB = (("llama-3", 128256), ("llama3", 128256), ("llama-2", 32000),
                    ("llama2", 32000), ("mistral", 32000), ("mixtral", 32000))


@dataclass
class MemoryConfig:
    """Inputs of the memory model, named after Megatron's `args` attributes."""

    num_layers: int = 0
    hidden_size: int = 0
    num_attention_heads: int = 0
    seq_length: int = 0
    kv_channels: int | None = None
    group_query_attention: bool = False
    num_query_groups: int | None = None
    ffn_hidden_size: int | None = None
    swiglu: bool = False
    normalization: str = "LayerNorm"
    vocab_size: int | None = None
    make_vocab_size_divisible_by: int = 128
    untie_embeddings_and_output_weights: bool = False
    tensor_model_parallel_size: int = 1
    pipeline_model_parallel_size: int = 1
    num_layers_per_virtual_pipeline_stage: int | None = None
    num_virtual_stages_per_pipeline_rank: int | None = None
    decoder_first_pipeline_num_layers: int | None = None
    decoder_last_pipeline_num_layers: int | None = None
    context_parallel_size: int = 1
    expert_model_parallel_size: int = 1
    expert_tensor_parallel_size: int | None = None
    world_size: int | None = None
    use_distributed_optimizer: bool = False
    micro_batch_size: int = 1
    global_batch_size: int | None = None
    rampup_batch_size: list[int] | None = None  # start, increment, samples
    sequence_parallel: bool = False
    recompute_granularity: str | None = None
    recompute_method: str | None = None
    recompute_num_layers: int | None = None
    num_experts: int | None = None
    moe_ffn_hidden_size: int | None = None
    moe_shared_expert_intermediate_size: int | None = None
    moe_layer_freq: int | list[int] = 1
    moe_router_topk: int = 2
    moe_latent_size: int | None = None
    add_bias_linear: bool = True
    moe_shared_expert_gate: bool = False
    mtp_num_layers: int | None = None
    multi_latent_attention: bool = False
    q_lora_rank: int | None = None
    kv_lora_rank: int = 32
    qk_head_dim: int = 128
    qk_pos_emb_head_dim: int = 64
    v_head_dim: int = 128
    fp16: bool = False
    bf16: bool = False
    fp8: str | None = None
    fp8_param_gather: bool = False
    tokenizer_type: str | None = None
    tokenizer_model: str | None = None
    # ---- read for the allocated-memory model (memory/allocated.py), Megatron's defaults -------
    transformer_impl: str = "transformer_engine"
    attention_backend: str = "auto"  # flash, fused, unfused, local, auto
    use_flash_attn: bool = False
    hidden_dropout: float = 0.1
    attention_dropout: float = 0.1
    position_embedding_type: str = "learned_absolute"
    max_position_embeddings: int | None = None
    add_qkv_bias: bool = False
    qk_layernorm: bool = False
    masked_softmax_fusion: bool = True
    attention_softmax_in_fp32: bool = False
    recompute_modules: list[str] | None = None  # Megatron's default: core_attn
    grad_reduce_in_bf16: bool = False
    use_precision_aware_optimizer: bool = False
    main_grads_dtype: str = "fp32"
    main_params_dtype: str = "fp32"
    exp_avg_dtype: str = "fp32"
    exp_avg_sq_dtype: str = "fp32"
    optimizer: str = "adam"
    num_distributed_optimizer_instances: int = 1
    gradient_accumulation_fusion: bool = True
    moe_token_dispatcher_type: str = "allgather"
    moe_expert_capacity_factor: float | None = None
    moe_pad_expert_input_to_capacity: bool = False
    moe_router_dtype: str | None = None
    moe_grouped_gemm: bool = False
    overlap_moe_expert_parallel_comm: bool = False
    cross_entropy_loss_fusion: bool = False
    cross_entropy_fusion_impl: str = "native"
    account_for_embedding_in_pipeline_split: bool = False
    account_for_loss_in_pipeline_split: bool = False
    microbatch_group_size_per_vp_stage: int | None = None
    defer_embedding_wgrad_compute: bool = False
    wgrad_deferral_limit: int = 0  # 0: every microbatch is deferred
    notes: list[str] = field(default_factory=list, compare=False)
    ignored_args: list[str] = field(default_factory=list, compare=False)

    # ---- values Megatron derives in arguments.py -------------------------------------------
    @property
    def tp(self) -> int:
        return self.tensor_model_parallel_size

    @property
    def pp(self) -> int:
        return self.pipeline_model_parallel_size

    @property
    def cp(self) -> int:
        return self.context_parallel_size

    @property
    def etp(self) -> int:
        return self.expert_tensor_parallel_size or self.tensor_model_parallel_size

    @property
    def effective_world_size(self) -> int:
        """The world size; without one, the smallest that holds the model (DP = 1)."""
        return self.world_size or self.tp * self.pp * self.cp

    @property
    def data_parallel_size(self) -> int:
        return max(1, self.effective_world_size // (self.tp * self.pp * self.cp))

    @property
    def effective_kv_channels(self) -> int:
        return self.kv_channels or self.hidden_size // self.num_attention_heads

    @property
    def effective_query_groups(self) -> int:
        """Megatron ignores --num-query-groups unless --group-query-attention is given."""
        if self.group_query_attention:
            return self.num_query_groups or 1  # Megatron's default is 1 group (MQA)
        return self.num_attention_heads

    @property
    def effective_ffn_hidden_size(self) -> int:
        if self.ffn_hidden_size:
            return self.ffn_hidden_size
        if self.swiglu:
            return int((4 * self.hidden_size * 2 / 3) / 64) * 64
        return 4 * self.hidden_size

    @property
    def effective_vocab_size(self) -> int:
        if self.vocab_size:
            # Megatron's NullTokenizer adds an end-of-document id on top of --vocab-size.
            return self.vocab_size + (self.tokenizer_type == "NullTokenizer")
        if self.tokenizer_type in TOKENIZER_VOCAB:
            return TOKENIZER_VOCAB[self.tokenizer_type]
        model = (self.tokenizer_model or "").lower()
        for needle, size in MODEL_NAME_VOCAB:
            if needle in model:
                return size
        return GPT2_VOCAB

    @property
    def padded_vocab_size(self) -> int:
        multiple = self.make_vocab_size_divisible_by * self.tp
        return int(math.ceil(self.effective_vocab_size / multiple) * multiple)

    @property
    def virtual_pipeline_size(self) -> int | None:
        if self.pp <= 1:
            return None
        if self.num_virtual_stages_per_pipeline_rank:
            return self.num_virtual_stages_per_pipeline_rank
        if self.num_layers_per_virtual_pipeline_stage:
            # the embedding and the loss count as layers when accounted for in the split
            layers = (self.num_layers + self.account_for_embedding_in_pipeline_split
                      + self.account_for_loss_in_pipeline_split)
            return (layers // self.pp) // self.num_layers_per_virtual_pipeline_stage
        return None

    @property
    def global_batch(self) -> int:
        return self.global_batch_size or self.micro_batch_size * self.data_parallel_size

    @property
    def num_microbatches(self) -> int:
        return max(1, self.global_batch // (self.micro_batch_size * self.data_parallel_size))

    @property
    def first_num_microbatches(self) -> int:
        """Microbatches at the first iteration, when Megatron prints its report (batch rampup)."""
        if self.rampup_batch_size:
            per_step = self.micro_batch_size * self.data_parallel_size
            return max(1, self.rampup_batch_size[0] // per_step)
        return self.num_microbatches

    @property
    def precision(self) -> str:
        return "fp16" if self.fp16 else "bf16" if self.bf16 else "fp32"

    def replace(self, **changes: object) -> MemoryConfig:
        """A changed copy (suggestions re-run the model on these)."""
        # `changes` are field values suggest.py chose for these fields; not checkable statically
        return dataclasses.replace(self, notes=[], ignored_args=[], **changes)  # type: ignore[arg-type]

    def to_dict(self) -> dict[str, object]:
        data = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        data.pop("notes")
        data.pop("ignored_args")
        data["derived"] = {
            "data_parallel_size": self.data_parallel_size,
            "world_size": self.effective_world_size,
            "kv_channels": self.effective_kv_channels,
            "num_query_groups": self.effective_query_groups,
            "ffn_hidden_size": self.effective_ffn_hidden_size,
            "vocab_size": self.effective_vocab_size,
            "padded_vocab_size": self.padded_vocab_size,
            "virtual_pipeline_model_parallel_size": self.virtual_pipeline_size,
            "global_batch_size": self.global_batch,
            "num_microbatches": self.num_microbatches,
            "first_num_microbatches": self.first_num_microbatches,
            "expert_tensor_parallel_size": self.etp,
        }
        return data


# flag -> (field, kind).  kind: int, str, true, false, freq, opt (optional-value str)
_INT = "int"
FLAGS: dict[str, tuple[str, str]] = {
    "--num-layers": ("num_layers", _INT),
    "--hidden-size": ("hidden_size", _INT),
    "--num-attention-heads": ("num_attention_heads", _INT),
    "--seq-length": ("seq_length", _INT),
    "--kv-channels": ("kv_channels", _INT),
    "--group-query-attention": ("group_query_attention", "true"),
    "--num-query-groups": ("num_query_groups", _INT),
    "--ffn-hidden-size": ("ffn_hidden_size", _INT),
    "--swiglu": ("swiglu", "true"),
    "--normalization": ("normalization", "str"),
    "--vocab-size": ("vocab_size", _INT),
    "--make-vocab-size-divisible-by": ("make_vocab_size_divisible_by", _INT),
    "--untie-embeddings-and-output-weights": ("untie_embeddings_and_output_weights", "true"),
    "--tensor-model-parallel-size": ("tensor_model_parallel_size", _INT),
    "--pipeline-model-parallel-size": ("pipeline_model_parallel_size", _INT),
    "--num-layers-per-virtual-pipeline-stage": ("num_layers_per_virtual_pipeline_stage", _INT),
    "--num-virtual-stages-per-pipeline-rank": ("num_virtual_stages_per_pipeline_rank", _INT),
    "--decoder-first-pipeline-num-layers": ("decoder_first_pipeline_num_layers", _INT),
    "--decoder-last-pipeline-num-layers": ("decoder_last_pipeline_num_layers", _INT),
    "--context-parallel-size": ("context_parallel_size", _INT),
    "--expert-model-parallel-size": ("expert_model_parallel_size", _INT),
    "--expert-tensor-parallel-size": ("expert_tensor_parallel_size", _INT),
    "--world-size": ("world_size", _INT),
    "--use-distributed-optimizer": ("use_distributed_optimizer", "true"),
    "--micro-batch-size": ("micro_batch_size", _INT),
    "--global-batch-size": ("global_batch_size", _INT),
    "--rampup-batch-size": ("rampup_batch_size", "ints3"),
    "--sequence-parallel": ("sequence_parallel", "true"),
    "--recompute-granularity": ("recompute_granularity", "str"),
    "--recompute-activations": ("recompute_granularity", "selective"),
    "--recompute-method": ("recompute_method", "str"),
    "--recompute-num-layers": ("recompute_num_layers", _INT),
    "--num-experts": ("num_experts", _INT),
    "--moe-ffn-hidden-size": ("moe_ffn_hidden_size", _INT),
    "--moe-shared-expert-intermediate-size": ("moe_shared_expert_intermediate_size", _INT),
    "--moe-layer-freq": ("moe_layer_freq", "freq"),
    "--moe-router-topk": ("moe_router_topk", _INT),
    "--moe-latent-size": ("moe_latent_size", _INT),
    "--add-bias-linear": ("add_bias_linear", "true"),
    "--disable-bias-linear": ("add_bias_linear", "false"),
    "--moe-shared-expert-gate": ("moe_shared_expert_gate", "true"),
    "--mtp-num-layers": ("mtp_num_layers", _INT),
    "--multi-latent-attention": ("multi_latent_attention", "true"),
    "--q-lora-rank": ("q_lora_rank", _INT),
    "--kv-lora-rank": ("kv_lora_rank", _INT),
    "--qk-head-dim": ("qk_head_dim", _INT),
    "--qk-pos-emb-head-dim": ("qk_pos_emb_head_dim", _INT),
    "--v-head-dim": ("v_head_dim", _INT),
    "--fp16": ("fp16", "true"),
    "--bf16": ("bf16", "true"),
    "--fp8-format": ("fp8", "str"),
    "--fp8-param-gather": ("fp8_param_gather", "true"),
    "--tokenizer-type": ("tokenizer_type", "str"),
    "--patch-tokenizer-type": ("tokenizer_type", "str"),
    "--tokenizer-model": ("tokenizer_model", "str"),
    "--transformer-impl": ("transformer_impl", "str"),
    "--attention-backend": ("attention_backend", "str"),
    "--use-flash-attn": ("use_flash_attn", "true"),
    "--hidden-dropout": ("hidden_dropout", "float"),
    "--attention-dropout": ("attention_dropout", "float"),
    "--position-embedding-type": ("position_embedding_type", "str"),
    "--use-rotary-position-embeddings": ("position_embedding_type", "rope"),
    "--no-position-embedding": ("position_embedding_type", "none"),
    "--max-position-embeddings": ("max_position_embeddings", _INT),
    "--add-qkv-bias": ("add_qkv_bias", "true"),
    "--qk-layernorm": ("qk_layernorm", "true"),
    "--no-masked-softmax-fusion": ("masked_softmax_fusion", "false"),
    "--attention-softmax-in-fp32": ("attention_softmax_in_fp32", "true"),
    "--recompute-modules": ("recompute_modules", "list"),
    "--grad-reduce-in-bf16": ("grad_reduce_in_bf16", "true"),
    "--use-precision-aware-optimizer": ("use_precision_aware_optimizer", "true"),
    "--main-grads-dtype": ("main_grads_dtype", "str"),
    "--main-params-dtype": ("main_params_dtype", "str"),
    "--exp-avg-dtype": ("exp_avg_dtype", "str"),
    "--exp-avg-sq-dtype": ("exp_avg_sq_dtype", "str"),
    "--optimizer": ("optimizer", "str"),
    "--num-distributed-optimizer-instances": ("num_distributed_optimizer_instances", _INT),
    "--no-gradient-accumulation-fusion": ("gradient_accumulation_fusion", "false"),
    "--moe-token-dispatcher-type": ("moe_token_dispatcher_type", "str"),
    "--moe-expert-capacity-factor": ("moe_expert_capacity_factor", "float"),
    "--moe-pad-expert-input-to-capacity": ("moe_pad_expert_input_to_capacity", "true"),
    "--moe-router-dtype": ("moe_router_dtype", "str"),
    "--moe-grouped-gemm": ("moe_grouped_gemm", "true"),
    "--overlap-moe-expert-parallel-comm": ("overlap_moe_expert_parallel_comm", "true"),
    "--cross-entropy-loss-fusion": ("cross_entropy_loss_fusion", "true"),
    "--cross-entropy-fusion-impl": ("cross_entropy_fusion_impl", "str"),
    "--account-for-embedding-in-pipeline-split": (
        "account_for_embedding_in_pipeline_split", "true"),
    "--account-for-loss-in-pipeline-split": ("account_for_loss_in_pipeline_split", "true"),
    "--microbatch-group-size-per-virtual-pipeline-stage": (
        "microbatch_group_size_per_vp_stage", _INT),
    "--defer-embedding-wgrad-compute": ("defer_embedding_wgrad_compute", "true"),
    "--wgrad-deferral-limit": ("wgrad_deferral_limit", _INT),
}
# Flags that set their field to the kind's name (`--recompute-activations` = selective).
FIXED_VALUE_KINDS = ("selective", "rope", "none")
# Short Megatron aliases people use in scripts.
ALIASES = {
    "--tensor-parallel-size": "--tensor-model-parallel-size",
    "--pipeline-parallel-size": "--pipeline-model-parallel-size",
    "--expert-parallel-size": "--expert-model-parallel-size",
    "--sequence-length": "--seq-length",
}


def parse_moe_layer_freq(text: str) -> int | list[int]:
    """An int, or a list such as `[0]*3+[1]*29` / `([0]+[1]*3)*2` (Megatron's own syntax)."""
    text = text.strip()
    try:
        every = int(text)
    except ValueError:
        pass
    else:
        if every < 1:  # "every N-th layer is MoE": 0 would divide by zero later
            raise UsageError(f"--moe-layer-freq must be at least 1, not {every}")
        return every
    try:
        value = _eval_list_expr(ast.parse(text, mode="eval").body)
    except (SyntaxError, ValueError, TypeError, RecursionError) as exc:
        raise UsageError(f"--moe-layer-freq: cannot read {text!r}") from exc
    if not isinstance(value, list) or not all(v in (0, 1) for v in value):
        raise UsageError(f"--moe-layer-freq: expected an int or a list of 0/1, got {text!r}")
    return value


def _eval_list_expr(node: ast.AST) -> int | list[int]:
    """Evaluate int / list literals joined by + and * without eval()."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.List):
        # a nested list makes int() raise TypeError, which the caller reports as a bad value
        return [int(_eval_list_expr(e)) for e in node.elts]  # type: ignore[arg-type]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Mult):
        left, right = _eval_list_expr(node.left), _eval_list_expr(node.right)
        if isinstance(node.op, ast.Add):
            # int + list raises TypeError, which the caller reports as a bad value
            return left + right  # type: ignore[operator]
        # the bound is on the result: ([1]*100000)*100000 must not build 10^10 items
        if isinstance(left, list) and isinstance(right, int) and len(left) * right <= 100_000:
            return left * right
        if isinstance(right, list) and isinstance(left, int) and len(right) * left <= 100_000:
            return right * left
        if isinstance(left, int) and isinstance(right, int):
            return left * right
    raise ValueError("unsupported expression")


def _split_flag(token: str) -> tuple[str, str | None]:
    if token.startswith("--") and "=" in token:
        name, value = token.split("=", 1)
        return name, value
    return token, None


def _is_flag(token: str) -> bool:
    return token.startswith("--") and len(token) > 2


def config_from_args(argv: list[str], *, config: MemoryConfig | None = None) -> MemoryConfig:
    """Read Megatron arguments (`--num-layers 80 ...`); unknown flags are skipped with a note.

    Underscore spellings (`--num_layers`) are accepted like Megatron's argparse does not, because
    scripts for forks use them. Call `require()` afterwards to check the required ones.
    """
    cfg = config or MemoryConfig()
    i = 0
    while i < len(argv):
        token = argv[i]
        i += 1
        if not _is_flag(token):
            continue
        name, inline = _split_flag(token)
        name = name.replace("_", "-")
        name = ALIASES.get(name, name)
        if name not in FLAGS:
            cfg.ignored_args.append(name)
            if inline is None:
                while i < len(argv) and not _is_flag(argv[i]):
                    i += 1
            continue
        attr, kind = FLAGS[name]
        if kind in ("true", "false"):
            setattr(cfg, attr, kind == "true")
            continue
        if kind in FIXED_VALUE_KINDS:  # flags that set a fixed value
            setattr(cfg, attr, kind)
            continue
        if kind == "list":
            values = []
            while i < len(argv) and not _is_flag(argv[i]):
                values.append(argv[i])
                i += 1
            if inline is not None:
                values.insert(0, inline)
            if not values:
                raise UsageError(f"{name} needs a value")
            setattr(cfg, attr, values)
            continue
        if kind == "ints3":
            values = argv[i : i + 3]
            if len(values) < 3 or not all(v.strip().isdigit() for v in values):
                raise UsageError(f"{name} needs three integers: start increment samples")
            setattr(cfg, attr, [int(v) for v in values])
            i += 3
            continue
        if inline is not None:
            value = inline
        elif i < len(argv) and not _is_flag(argv[i]):
            value = argv[i]
            i += 1
        else:
            raise UsageError(f"{name} needs a value")
        setattr(cfg, attr, _convert(name, kind, value))
    return cfg


def _convert(name: str, kind: str, value: str) -> object:
    value = value.strip().strip("'\"")
    if kind == _INT:
        try:
            return int(value)
        except ValueError:
            raise UsageError(f"{name}: expected an integer, got {value!r}") from None
    if kind == "float":
        try:
            return float(value)
        except ValueError:
            raise UsageError(f"{name}: expected a number, got {value!r}") from None
    if kind == "freq":
        return parse_moe_layer_freq(value)
    return value


def require(cfg: MemoryConfig) -> MemoryConfig:
    """Raise a one-line error naming every missing required argument; validate the rest."""
    missing = ["--" + name.replace("_", "-") for name in REQUIRED if not getattr(cfg, name)]
    if missing:
        # 0 is the "not given" default, so `--num-layers 0` lands here too: say both
        raise UsageError("missing required argument(s): " + ", ".join(missing)
                         + " (each must be at least 1)")
    for attr in (
        "tensor_model_parallel_size", "pipeline_model_parallel_size", "context_parallel_size",
        "expert_model_parallel_size", "micro_batch_size", "num_layers", "hidden_size",
        "num_attention_heads", "seq_length", "make_vocab_size_divisible_by",
    ):
        if getattr(cfg, attr) < 1:
            raise UsageError(f"--{attr.replace('_', '-')} must be at least 1")
    for attr in ("world_size", "global_batch_size", "num_experts", "expert_tensor_parallel_size",
                 "kv_channels", "num_query_groups", "ffn_hidden_size", "vocab_size"):
        value = getattr(cfg, attr)
        if value is not None and value < 1:
            raise UsageError(f"--{attr.replace('_', '-')} must be at least 1")
    if cfg.recompute_granularity not in (None, "full", "selective"):
        got = cfg.recompute_granularity
        raise UsageError(f"--recompute-granularity: expected full or selective, got {got!r}")
    if isinstance(cfg.moe_layer_freq, list) and cfg.num_experts and (
        len(cfg.moe_layer_freq) != cfg.num_layers
    ):
        raise UsageError(
            f"--moe-layer-freq lists {len(cfg.moe_layer_freq)} layers, --num-layers is "
            f"{cfg.num_layers}"
        )
    if cfg.world_size is None:
        cfg.notes.append(
            "world size not given (--world-size, torchrun --nnodes x --nproc-per-node or "
            f"WORLD_SIZE): assumed TP x PP x CP = {cfg.effective_world_size} (data parallel 1)"
        )
    if not cfg.vocab_size:
        cfg.notes.append(
            f"vocabulary size not given: assumed {cfg.effective_vocab_size}"
            f" ({cfg.tokenizer_model or cfg.tokenizer_type or 'GPT-2'}); pass --vocab-size N "
            "for your tokenizer"
        )
    return cfg
