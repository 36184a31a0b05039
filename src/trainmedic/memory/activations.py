"""What autograd keeps from the forward pass to the backward pass, tensor by tensor.

Per microbatch and GPU, for Megatron-Core's Transformer Engine GPT layers
(`gpt_layer_specs.py`). T is the tokens of one GPU (sequence / CP x micro batch); tensors
outside the TP region are divided by TP only under sequence parallelism ("/sp" below),
tensors inside it always are. Activations are 2 bytes (bf16/fp16), 4 in fp32.

Each term names the module that saves the tensor:

* TE `LayerNormLinear` (norm fused into QKV or fc1) saves the norm's input and its output
  (the GEMM input; only the local shard under sequence parallelism, gathered again in
  backward: `ctx.ln_out_needs_gather`); with fp8 the GEMM input is kept as fp8 (1 byte).
* Core attention keeps q, k, v and its output: flash/cuDNN also a fp32 log-sum-exp per
  head and token; unfused attention (`--attention-backend unfused/local`, `transformer_impl
  local`) keeps the softmax output, b x heads x s x s (2 bytes when the fused softmax kernel
  runs, fp32 otherwise), and with attention dropout its mask (1 byte) and output (2 bytes).
  Rotary embeddings write new q and k, and TE's attention makes q, k, v contiguous when their
  layouts differ (`get_qkv_layout`), so the QKV output is released: no extra term. QK norms
  (`--qk-layernorm`) also write new q and k but save their inputs, views of the QKV output,
  which therefore stays.
* bias-dropout-add keeps a 1-byte mask when `--hidden-dropout` > 0 (PyTorch's dropout
  returns its input unchanged at p = 0).
* The MLP keeps fc1's output (2f wide with SwiGLU) for the activation's backward and the
  activation's output (fc2's input).
* MoE (`megatron/core/transformer/moe`): the router keeps an fp32 copy of its input with
  `--moe-router-dtype fp32` (`RouterGatingLinearFunction`) and fp32 scores; the experts
  keep their dispatched input, fc1 output and activation output, weighted by the routing
  probabilities inside the experts (so combining keeps nothing). A GPU's experts see its
  T/sp tokens x
  top-k x ETP (all-to-all, or all-gather then local selection: the same count when routing
  is balanced), times the capacity factor when inputs are padded to capacity.
* MLA (`multi_latent_attention.py`): the down projections are replicated and run on the
  local tokens; their outputs are all-gathered, normed and up-projected; the rotated q and k
  are concatenated into new tensors while v stays a view of the kv up projection.
* The last stage keeps the final norm's input and output and, for the loss, the fp32
  softmax of its vocabulary shard (`_VocabParallelCrossEntropy` saves `exp_logits`, made
  from an fp32 copy of the bf16 logits); MTP layers add their own.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from trainmedic.memory.config import MemoryConfig
from trainmedic.memory.layout import Chunk, moe_pattern

UNFUSED_BACKENDS = ("unfused", "local")
# Megatron's / TE's fused scaled-masked-softmax kernel: 16 < s_k <= 16384 (is_kernel_available)
FUSED_SOFTMAX_MAX_KEYS = 16384


@dataclass
class Pass:
    """Bytes of one forward+backward pass of one layer or block, for one microbatch."""

    saved: dict[str, float] = field(default_factory=dict)  # kept until its backward
    forward_extra: float = 0.0  # freed again before its forward returns
    backward_extra: float = 0.0  # gradients and temporaries while its backward runs

    @property
    def saved_total(self) -> float:
        return sum(self.saved.values())


@dataclass(frozen=True)
class Shape:
    """Sizes shared by every term of one GPU."""

    tokens: float  # T: tokens of this GPU per microbatch (sequence / CP x micro batch)
    sp: int  # divisor of tensors outside the TP region (TP under sequence parallelism)
    tp: int
    act: int  # bytes of an activation element
    lin_in: float  # bytes per element of a saved linear input (1 with fp8)


def shape_of(cfg: MemoryConfig) -> Shape:
    sp = cfg.tp if cfg.sequence_parallel and cfg.tp > 1 else 1
    act = 4 if cfg.precision == "fp32" else 2
    return Shape(tokens=cfg.seq_length / cfg.cp * cfg.micro_batch_size, sp=sp, tp=cfg.tp,
                 act=act, lin_in=1.0 if cfg.fp8 else float(act))


def attention_backend(cfg: MemoryConfig) -> str:
    """'unfused' when the s x s scores are materialised, else 'flash' (flash or cuDNN)."""
    if cfg.transformer_impl == "local" or cfg.attention_backend in UNFUSED_BACKENDS:
        return "unfused"
    return "flash"  # flash, fused (cuDNN), auto (TE picks one of them), --use-flash-attn


def _scores_bytes_per_element(cfg: MemoryConfig, keys: float, batches: float) -> tuple[
        float, float, float]:
    """(saved, forward extra, backward extra) bytes per b x heads x s x s element of unfused
    attention: the softmax output (bf16 from the fused kernel, else an fp32 softmax and its
    bf16 cast), the dropout mask and output, the raw scores before softmax, and in backward
    the gradient of the probabilities and of the scores."""
    fused = (cfg.masked_softmax_fusion and 16 < keys <= FUSED_SOFTMAX_MAX_KEYS
             and batches % 4 == 0)
    fp32 = cfg.transformer_impl == "transformer_engine" or cfg.attention_softmax_in_fp32
    if fused:
        saved, forward = 2.0, 2.0  # bf16 probabilities; bf16 scores before the kernel
    elif fp32:  # TE's softmax_in_fp32 default, Megatron's --attention-softmax-in-fp32
        saved, forward = 4.0 + 2.0, 2.0 + 4.0  # fp32 softmax kept + bf16 copy for the bmm
    else:
        saved, forward = 2.0, 2.0  # bf16 softmax
    if cfg.attention_dropout > 0:
        saved += 1.0 + 2.0  # dropout mask and dropped probabilities (the bmm's input)
    backward = 2.0 + 2.0  # grad of probabilities, then of scores (fused kernel: in place)
    return saved, forward, backward


def attention_pass(cfg: MemoryConfig, sh: Shape) -> Pass:
    """Input norm, self-attention (standard or MLA), projection and its dropout."""
    h, a, t, act, T, sp = cfg.hidden_size, cfg.num_attention_heads, sh.tp, sh.act, sh.tokens, sh.sp
    p = Pass()
    p.saved["input norm input"] = act * T * h / sp
    if cfg.multi_latent_attention:
        qk = cfg.qk_head_dim + cfg.qk_pos_emb_head_dim
        p.saved["input norm output (down projections' input)"] = sh.lin_in * T * h / sp
        q_width = a * qk / t
        if cfg.q_lora_rank:
            # gathered q latent: the q norm's input and output (up projection's input)
            p.saved["q latent and its norm"] = (act + sh.lin_in) * T * cfg.q_lora_rank
        kv_lat = cfg.kv_lora_rank
        p.saved["kv latent and its norm"] = (act + sh.lin_in) * T * kv_lat
        p.saved["q (rotated, concatenated)"] = act * T * q_width
        p.saved["k (rotated, concatenated)"] = act * T * q_width
        p.saved["kv up projection (v is a view)"] = act * T * a * (
            cfg.qk_head_dim + cfg.v_head_dim) / t
        v_dim = cfg.v_head_dim
        heads_out = a * v_dim / t
        qkv_grad = 2 * q_width + a * (cfg.qk_head_dim + cfg.v_head_dim) / t
    else:
        d, g = cfg.effective_kv_channels, cfg.effective_query_groups
        p.saved["input norm output (QKV input)"] = sh.lin_in * T * h / sp
        p.saved["q, k, v"] = act * T * (a + 2 * g) * d / t
        if cfg.qk_layernorm:
            # QK norms write new q and k and save their inputs, views of the QKV output,
            # which therefore stays whole next to the normed copies
            p.saved["normed q, k (QK norms keep the QKV output too)"] = act * T * (a + g) * d / t
        heads_out = a * d / t
        qkv_grad = (2 * a + 2 * g) * d / t
    p.saved["attention output (projection input)"] = act * T * heads_out
    if cfg.fp8:
        p.saved["fp8 copy of the projection input"] = 1.0 * T * heads_out
    if cfg.hidden_dropout > 0:
        p.saved["attention dropout mask"] = 1.0 * T * h / sp
    heads = a / t
    if attention_backend(cfg) == "unfused" and not _core_attn_recomputed(cfg):
        batches = cfg.micro_batch_size * heads
        keys = cfg.seq_length  # unfused attention does not run under context parallelism
        elements = batches * (cfg.seq_length / cfg.cp) * keys
        saved, forward, backward = _scores_bytes_per_element(cfg, keys, batches)
        p.saved["attention scores (s x s per head)"] = saved * elements
        p.forward_extra = forward * elements
        p.backward_extra = backward * elements + act * T * qkv_grad
    else:
        p.saved["softmax statistics (fp32)"] = 4.0 * T * heads
        # gradients of q, k, v and of the output
        p.backward_extra = act * T * (qkv_grad + heads_out)
    return p


def _core_attn_recomputed(cfg: MemoryConfig) -> bool:
    """Selective recompute of core attention (Megatron's default recompute module)."""
    if cfg.recompute_granularity != "selective":
        return False
    return "core_attn" in (cfg.recompute_modules or ["core_attn"])


def mlp_pass(cfg: MemoryConfig, sh: Shape, ffn: int, *, norm: bool = True) -> Pass:
    """Pre-MLP norm, fc1, activation, fc2 and dropout (also shared experts, without norm)."""
    h, t, act, T, sp = cfg.hidden_size, sh.tp, sh.act, sh.tokens, sh.sp
    gate = 2 if cfg.swiglu else 1
    p = Pass()
    if norm:
        p.saved["pre-MLP norm input"] = act * T * h / sp
        p.saved["pre-MLP norm output (fc1 input)"] = sh.lin_in * T * h / sp
        if cfg.hidden_dropout > 0:
            p.saved["MLP dropout mask"] = 1.0 * T * h / sp
    p.saved["fc1 output"] = act * T * ffn * gate / t
    p.saved["activation output (fc2 input)"] = sh.lin_in * T * ffn / t
    # grads of fc2's input and fc1's output, then fc1's input gradient before its reduction
    p.backward_extra = act * T * ffn * (gate + 1) / t + act * T * h
    return p


def expert_tokens(cfg: MemoryConfig, sh: Shape) -> float:
    """Token copies the experts of one GPU process per microbatch (balanced routing)."""
    copies = sh.tokens / sh.sp * cfg.moe_router_topk * cfg.etp
    if cfg.moe_expert_capacity_factor and cfg.moe_pad_expert_input_to_capacity:
        copies *= cfg.moe_expert_capacity_factor
    return copies


def moe_pass(cfg: MemoryConfig, sh: Shape) -> Pass:
    """Pre-MLP norm, router, token dispatch, experts, combine, shared experts."""
    h, act, T, sp = cfg.hidden_size, sh.act, sh.tokens, sh.sp
    experts = cfg.num_experts or 1
    ffn = cfg.moe_ffn_hidden_size or cfg.effective_ffn_hidden_size
    gate = 2 if cfg.swiglu else 1
    local_tokens = T / sp
    n = expert_tokens(cfg, sh)
    p = Pass()
    p.saved["pre-MLP norm input"] = act * T * h / sp
    p.saved["pre-MLP norm output (router and dispatch input)"] = act * T * h / sp
    if cfg.moe_router_dtype in ("fp32", "fp64"):
        width = 4 if cfg.moe_router_dtype == "fp32" else 8
        p.saved["router input in fp32"] = width * local_tokens * h
    # router.py: fp32 logits, their softmax/sigmoid scores and the top-k probabilities map
    p.saved["router logits, scores and probabilities (fp32)"] = 3 * 4.0 * local_tokens * experts
    width = cfg.moe_latent_size or h  # experts work on the latent projection when set
    p.saved["dispatched tokens (expert fc1 input)"] = sh.lin_in * n * width
    if cfg.moe_latent_size:
        p.saved["latent projection input"] = act * local_tokens * h
    p.saved["expert fc1 output"] = act * n * ffn * gate / cfg.etp
    p.saved["expert activation output (fc2 input)"] = sh.lin_in * n * ffn / cfg.etp
    # the routing probabilities weight the activation inside the experts (experts.py
    # bias_act_func): the fused weighted SwiGLU keeps only them, any other activation is
    # multiplied out of place, which keeps its output too; combining then keeps nothing
    p.saved["routing probabilities per token copy (fp32)"] = 4.0 * n
    if not cfg.swiglu:
        p.saved["expert activation before the routing weights"] = act * n * ffn / cfg.etp
    if cfg.hidden_dropout > 0:
        p.saved["MLP dropout mask"] = 1.0 * T * h / sp
    if cfg.moe_shared_expert_intermediate_size:
        shared = mlp_pass(cfg, sh, cfg.moe_shared_expert_intermediate_size, norm=False)
        for name, value in shared.saved.items():
            p.saved["shared expert " + name] = value
    if cfg.moe_token_dispatcher_type == "allgather":
        # every token of the EP x ETP group, gathered before the local experts pick theirs
        p.forward_extra = act * local_tokens * cfg.expert_model_parallel_size * cfg.etp * h
    # gradients of the expert activations and of the dispatched tokens
    p.backward_extra = act * n * ffn * (gate + 1) / cfg.etp + 2 * act * n * width
    return p


def _merge(*parts: dict[str, float]) -> dict[str, float]:
    out: dict[str, float] = {}
    for part in parts:
        for name, value in part.items():
            out[name] = out.get(name, 0.0) + value
    return out


def layer_pass(cfg: MemoryConfig, sh: Shape, moe: bool) -> Pass:
    """One transformer layer: attention, then a dense MLP or MoE."""
    attn = attention_pass(cfg, sh)
    mlp = moe_pass(cfg, sh) if moe else mlp_pass(cfg, sh, cfg.effective_ffn_hidden_size)
    out = Pass(saved=_merge(attn.saved, mlp.saved))
    mlp_total = mlp.saved_total
    # forward: attention's temporaries come before the MLP saved anything
    out.forward_extra = max(attn.forward_extra - mlp_total, mlp.forward_extra, 0.0)
    # backward runs the MLP first (attention still saved), then attention
    out.backward_extra = max(mlp.backward_extra, attn.backward_extra - mlp_total, 0.0)
    return out


def recomputed_pass(cfg: MemoryConfig, sh: Shape, layers: list[Pass]) -> Pass:
    """Layers under full activation recompute (`tensor_parallel.checkpoint`): only the
    group's input survives the forward; backward re-runs the group, so its activations and
    gradients exist together again for a moment."""
    p = Pass()
    p.saved["checkpointed layer input"] = sh.act * sh.tokens * cfg.hidden_size / sh.sp
    p.forward_extra = max(layer.forward_extra for layer in layers)
    full = sum(layer.saved_total for layer in layers)
    p.backward_extra = full + max(layer.backward_extra for layer in layers)
    return p


def loss_pass(cfg: MemoryConfig, sh: Shape) -> Pass:
    """Final norm, output layer and cross-entropy of the vocabulary shard."""
    h, act, T, sp = cfg.hidden_size, sh.act, sh.tokens, sh.sp
    logits = T * cfg.padded_vocab_size / sh.tp
    p = Pass()
    p.saved["final norm input"] = act * T * h / sp
    p.saved["final norm output (output layer input)"] = act * T * h / sp
    fused = cfg.cross_entropy_loss_fusion
    if fused and cfg.cross_entropy_fusion_impl == "te":
        # TE's parallel_cross_entropy writes the gradient into the bf16 logits in forward
        p.saved["logits holding their gradient (bf16)"] = act * logits
        p.backward_extra = act * T * h
        return p
    p.saved["softmax of the vocabulary shard (fp32)"] = 4.0 * logits
    # forward: the bf16 logits live while their fp32 copy is made; the fused native kernel
    # (megatron/core/fusions/fused_cross_entropy.py) also keeps the shifted fp32 logits
    # next to the exponentials
    extra = 4.0 * logits if fused else 0.0
    p.forward_extra = act * logits + extra
    # backward: the fp32 gradient (the saved softmax, in place, in the unfused kernel; a new
    # tensor in the fused one) is cast to bf16 for the output layer while the saved softmax
    # still exists (autograd releases it after the cast); then the output layer computes its
    # input gradient and, without gradient-accumulation fusion, a bf16 weight gradient
    wgrad = 0.0 if cfg.gradient_accumulation_fusion else act * cfg.padded_vocab_size * h / sh.tp
    p.backward_extra = max(act * logits + extra,
                           act * logits + act * T * h + wgrad - 4.0 * logits)
    return p


def mtp_pass(cfg: MemoryConfig, sh: Shape) -> Pass:
    """One MTP layer: embedding of the shifted tokens, two norms, eh_proj, a transformer
    layer like the last one, and its own final norm, logits and loss."""
    h, act, T, sp = cfg.hidden_size, sh.act, sh.tokens, sh.sp
    pattern = moe_pattern(cfg)
    layer = layer_pass(cfg, sh, pattern[-1] if pattern else False)
    loss = loss_pass(cfg, sh)
    p = Pass()
    p.saved["MTP norms' inputs and outputs"] = 4 * act * T * h / sp
    p.saved["MTP eh_proj input (2h)"] = sh.lin_in * T * 2 * h / sp
    for name, value in layer.saved.items():
        p.saved["MTP layer " + name] = value
    for name, value in loss.saved.items():
        p.saved["MTP " + name] = value
    p.forward_extra = max(layer.forward_extra - loss.saved_total, loss.forward_extra)
    p.backward_extra = max(loss.backward_extra, layer.backward_extra)
    return p


@dataclass
class ChunkActivations:
    """One microbatch of one model chunk: what it keeps and its peaks."""

    saved: dict[str, float]
    forward_peak: float
    backward_peak: float

    @property
    def saved_total(self) -> float:
        return sum(self.saved.values())


def chunk_activations(cfg: MemoryConfig, chunk: Chunk) -> ChunkActivations:
    """Saved bytes of one microbatch through `chunk`, and its forward/backward peaks.

    Passes run in model order forward and in reverse backward; a pass's extra memory comes
    on top of everything saved before it (forward) or still saved (backward).
    """
    sh = shape_of(cfg)
    pattern = moe_pattern(cfg)
    order: list[Pass] = []
    if chunk.embedding:
        emb = Pass()
        emb.saved["token and position ids"] = 16.0 * sh.tokens  # int64 each
        if cfg.hidden_dropout > 0:
            emb.saved["embedding dropout mask"] = 1.0 * sh.tokens * cfg.hidden_size / sh.sp
        # the embedding's weight gradient is a dense bf16 tensor before it reaches main_grad
        emb.backward_extra = sh.act * cfg.padded_vocab_size * cfg.hidden_size / sh.tp
        order.append(emb)
    kinds: dict[bool, Pass] = {}
    layers: list[Pass] = []
    for layer in chunk.layers:
        moe = pattern[layer]
        if moe not in kinds:
            kinds[moe] = layer_pass(cfg, sh, moe)
        layers.append(kinds[moe])
    order.extend(_with_recompute(cfg, sh, layers))
    if chunk.output:
        order.extend(mtp_pass(cfg, sh) for _ in range(cfg.mtp_num_layers or 0))
        order.append(loss_pass(cfg, sh))
    saved: dict[str, float] = {}
    held = forward_peak = 0.0
    for part in order:
        forward_peak = max(forward_peak, held + part.saved_total + part.forward_extra)
        held += part.saved_total
        for name, value in part.saved.items():
            saved[name] = saved.get(name, 0.0) + value
    backward_peak = 0.0
    for part in reversed(order):
        backward_peak = max(backward_peak, held + part.backward_extra)
        held -= part.saved_total
    return ChunkActivations(saved, max(forward_peak, sum(saved.values())), backward_peak)


def _with_recompute(cfg: MemoryConfig, sh: Shape, layers: list[Pass]) -> list[Pass]:
    """The chunk's layers as Megatron runs them under `--recompute-granularity full`:
    `uniform` checkpoints every group of `--recompute-num-layers` layers, `block` the first
    `--recompute-num-layers` layers of the chunk and keeps the rest."""
    if cfg.recompute_granularity != "full" or not layers:
        return layers
    size = max(1, cfg.recompute_num_layers or 1)
    if cfg.recompute_method == "block":
        head = layers[:size]
        return ([recomputed_pass(cfg, sh, [x]) for x in head] + layers[size:])
    return [recomputed_pass(cfg, sh, layers[i:i + size]) for i in range(0, len(layers), size)]
