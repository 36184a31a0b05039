"""Configuration checks that make Megatron fail at launch, or silently do something else.

Every check, here, in the launcher and environment checks (`trainmedic.launch.checks`) and in
preflight's memory verdict, is one `Check` (`trainmedic.launch.check`): a name,
pass/warn/fail/skip and one line; `to_dict()` is the `--json` form.
"""

from __future__ import annotations

from trainmedic.launch.check import Check, CheckStatus
from trainmedic.memory.config import MemoryConfig
from trainmedic.memory.layout import effective_layer_count

__all__ = ["Check", "CheckStatus", "run_checks"]


def _check(name: str, ok: bool, good: str, bad: str, *,
           severity: CheckStatus = "fail") -> Check:
    return Check(name, "pass" if ok else severity, good if ok else bad)


def run_checks(cfg: MemoryConfig) -> list[Check]:
    """Divisibility, batch arithmetic, world size, sequence parallel, vocab padding, GQA."""
    t, p, cp = cfg.tp, cfg.pp, cfg.cp
    a, g, layers = cfg.num_attention_heads, cfg.effective_query_groups, cfg.num_layers
    out: list[Check] = []
    if cfg.kv_channels is None and not cfg.multi_latent_attention:
        h = cfg.hidden_size
        out.append(_check(
            "hidden-divisible-by-heads", h % a == 0, f"head size {h // a} (hidden {h} / {a})",
            f"--hidden-size {h} is not divisible by --num-attention-heads {a} (set --kv-channels)"))
    out += [
        _check("heads-divisible-by-tp", a % t == 0,
               f"{a} attention heads / TP {t} = {a // t} per rank",
               f"--num-attention-heads {a} is not divisible by --tensor-model-parallel-size {t}"),
    ]
    if cfg.group_query_attention and not cfg.multi_latent_attention:
        out.append(_check(
            "query-groups-divisible-by-tp", g % t == 0,
            f"{g} query groups / TP {t} = {max(1, g // t)} per rank",
            f"--num-query-groups {g} is not divisible by --tensor-model-parallel-size {t}"))
    elif cfg.num_query_groups and cfg.num_query_groups != a and not cfg.multi_latent_attention:
        out.append(Check(
            "query-groups-ignored", "warn",
            f"--num-query-groups {cfg.num_query_groups} has no effect without "
            f"--group-query-attention: Megatron builds {a} KV heads (plain MHA)"))
    first, last = cfg.decoder_first_pipeline_num_layers, cfg.decoder_last_pipeline_num_layers
    if p > 1 and (first is not None or last is not None):
        fixed = [n for n in (first, last) if n is not None]
        rest, stages = layers - sum(fixed), p - len(fixed)
        ok = rest >= 0 and (rest % stages == 0 if stages else rest == 0)
        out.append(_check(
            "layers-divisible-by-pp", ok,
            f"uneven pipeline: {layers} layers = {' + '.join(map(str, fixed))} on the first/last "
            f"stage + {rest} over {stages} stages",
            f"uneven pipeline: the {rest} layers left after the first/last stages do not divide "
            f"over the other {stages} stages"))
    else:
        out.append(_layers_over_pp(cfg))
    out += _virtual_stage_checks(cfg)
    model = t * p * cp
    world = cfg.effective_world_size
    out.append(_check(
        "world-size", world % model == 0,
        f"world {world} = TP {t} x PP {p} x CP {cp} x DP {world // model}",
        f"world size {world} is not divisible by TP {t} x PP {p} x CP {cp} = {model}"))
    if cfg.global_batch_size:
        dp, mbs, gbs = cfg.data_parallel_size, cfg.micro_batch_size, cfg.global_batch_size
        ok = gbs % (mbs * dp) == 0
        out.append(_check(
            "global-batch", ok,
            f"global batch {gbs} = micro batch {mbs} x DP {dp} x {gbs // (mbs * dp)} accumulation "
            "steps",
            f"--global-batch-size {gbs} is not divisible by micro batch {mbs} x DP {dp} "
            f"= {mbs * dp}"))
    if cfg.sequence_parallel:
        # not a problem: Megatron's validate_args turns it off with a warning at TP 1
        out.append(Check(
            "sequence-parallel-needs-tp", "pass",
            "sequence parallelism over TP ranks" if t > 1 else
            "--sequence-parallel at TP 1: Megatron turns it off (with a warning); no effect"))
    if cp > 1:
        out.append(_check(
            "seq-length-divisible-by-2cp", cfg.seq_length % (2 * cp) == 0,
            f"--seq-length {cfg.seq_length} splits into 2 x CP {cp} chunks",
            f"--seq-length {cfg.seq_length} is not divisible by 2 x --context-parallel-size {cp}"))
    if cfg.num_experts:
        ep = cfg.expert_model_parallel_size
        out.append(_check(
            "experts-divisible-by-ep", cfg.num_experts % ep == 0,
            f"{cfg.num_experts} experts / EP {ep}",
            f"--num-experts {cfg.num_experts} is not divisible by --expert-model-parallel-size "
            f"{ep}"))
    if cfg.fp16 and cfg.bf16:
        out.append(Check("precision", "fail",
                         "--fp16 and --bf16 are both set; Megatron refuses this"))
    vocab, padded = cfg.effective_vocab_size, cfg.padded_vocab_size
    multiple = cfg.make_vocab_size_divisible_by * t
    extra = padded - vocab
    out.append(_check(
        "vocab-padding", extra <= 0.02 * vocab,
        f"vocabulary {vocab} padded to {padded} (multiple of {cfg.make_vocab_size_divisible_by}"
        f" x TP {t} = {multiple}); checkpoints converted at another TP pad differently",
        f"vocabulary {vocab} padded to {padded} (multiple of {multiple}): {extra} unused rows; "
        "lower --make-vocab-size-divisible-by", severity="warn"))
    return out


def _counted_layers(cfg: MemoryConfig) -> tuple[int, str]:
    """Layers Megatron splits over the pipeline, and how they were counted."""
    counted = effective_layer_count(cfg)
    extra = [name for name, on in (("embedding", cfg.account_for_embedding_in_pipeline_split),
                                   ("loss", cfg.account_for_loss_in_pipeline_split)) if on]
    how = f"{cfg.num_layers} layers" + (" + " + " + ".join(extra) if extra else "")
    return counted, how


def _layers_over_pp(cfg: MemoryConfig) -> Check:
    """--num-layers (plus the embedding/loss when accounted for) over the pipeline stages."""
    p = cfg.pp
    counted, how = _counted_layers(cfg)
    return _check(
        "layers-divisible-by-pp", counted % p == 0,
        f"{how} / PP {p} = {counted // p} per stage",
        f"{how} = {counted} is not divisible by --pipeline-model-parallel-size {p}")


def _virtual_stage_checks(cfg: MemoryConfig) -> list[Check]:
    """Interleaving: the stage's layers divide into virtual stages (Megatron's validate_args,
    counting the embedding and the loss as layers when they are accounted for)."""
    p = cfg.pp
    out: list[Check] = []
    counted, how = _counted_layers(cfg)
    per_stage = cfg.num_layers_per_virtual_pipeline_stage
    if per_stage:
        ok = p > 1 and (counted // p) % per_stage == 0
        out.append(_check(
            "layers-divisible-by-virtual-stages", ok,
            f"{counted // p} layers per stage in chunks of {per_stage}",
            f"--num-layers-per-virtual-pipeline-stage {per_stage} needs PP > 1 and must divide "
            f"the {counted // max(p, 1)} layers of each pipeline stage"))
    if cfg.num_virtual_stages_per_pipeline_rank:
        v = cfg.num_virtual_stages_per_pipeline_rank
        out.append(_check(
            "layers-divisible-by-virtual-stages", p > 1 and counted % (p * v) == 0,
            f"{how} = PP {p} x {v} virtual stages x {counted // (p * v) if p * v else 0}",
            f"{how} = {counted} is not divisible by PP {p} x {v} virtual stages"))
    return out
