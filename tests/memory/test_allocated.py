"""The allocated-memory model: worked by hand, schedule, layout, state bytes and flags."""

from __future__ import annotations

import pytest

from trainmedic.memory import config_from_args, estimate, require, run_checks
from trainmedic.memory.activations import chunk_activations, expert_tokens, shape_of
from trainmedic.memory.allocated import deferred_wgrad_bytes, rank_allocation
from trainmedic.memory.flags import NOT_MODELLED, classify
from trainmedic.memory.layout import chunks_of_rank, layers_per_virtual_stage
from trainmedic.memory.schedule import ChunkMemory, peak, schedule_table, warmup_passes
from trainmedic.memory.weights import optimizer_shards, state_bytes

MIB = 1024 * 1024
DENSE = ("--num-layers 2 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 "
         "--micro-batch-size 2 --vocab-size 32000 --bf16 --world-size 1")


def cfg_of(text: str):
    return require(config_from_args(text.split()))


def test_dense_single_gpu_by_hand():
    """Every term of a 2-layer GPT on one GPU, from Megatron's defaults (biases, LayerNorm,
    learned positions, dropout 0.1, tied embedding, TE with flash attention)."""
    h, a, v, s, b = 1024, 16, 32000, 2048, 2
    t = s * b  # tokens
    layer_params = 12 * h * h + 13 * h  # QKV, proj, fc1, fc2 with biases; two LayerNorms
    params = 2 * layer_params + v * h + s * h + 2 * h  # words, positions, final norm
    workspaces = 3 * 32 * MIB  # PyTorch cuBLAS + cuBLASLt, Transformer Engine
    static = 18 * params + workspaces  # bf16 weights, fp32 grads, fp32 main params + Adam
    per_layer = 34 * t * h + 4 * t * a  # Korthikanti's 34 sbh with flash's fp32 statistics
    saved = 2 * per_layer + 16 * t + t * h + 4 * t * h + 4 * t * v  # ids, dropout, norm, loss
    expected = static + saved + 2 * t * v  # the bf16 logits next to their fp32 softmax
    got = rank_allocation(cfg_of(DENSE), 0)
    assert got.parameters == params
    assert got.static_mib * MIB == pytest.approx(static)
    assert got.peak_mib * MIB == pytest.approx(expected)


def test_unfused_attention_keeps_scores_and_selective_recompute_drops_them():
    flash = rank_allocation(cfg_of(DENSE), 0).activation_peak_mib
    unfused = rank_allocation(cfg_of(DENSE + " --attention-backend unfused"), 0)
    # softmax output (bf16, fused kernel) + dropout mask + dropped probabilities, per layer
    scores = 2 * (2 + 1 + 2) * 2 * 16 * 2048 * 2048 / MIB
    assert unfused.activation_peak_mib - flash == pytest.approx(scores, rel=0.01)
    selective = rank_allocation(cfg_of(
        DENSE + " --attention-backend unfused --recompute-granularity selective"), 0)
    assert selective.activation_peak_mib == pytest.approx(flash, rel=1e-6)


def test_cross_entropy_variants():
    cfg = cfg_of(DENSE)
    last = chunks_of_rank(cfg, 0)[-1]
    logits = 2048 * 2 * 32000
    plain = chunk_activations(cfg, last)
    fused = chunk_activations(cfg_of(DENSE + " --cross-entropy-loss-fusion"), last)
    te = chunk_activations(cfg_of(DENSE + " --cross-entropy-loss-fusion "
                                  "--cross-entropy-fusion-impl te"), last)
    # the fused native kernel keeps a second fp32 tensor while it runs
    assert fused.forward_peak - plain.forward_peak == 4 * logits
    # TE keeps the bf16 logits (holding their gradient) instead of an fp32 softmax
    assert plain.saved_total - te.saved_total == (4 - 2) * logits


def test_deferred_embedding_wgrad_keeps_logit_gradients():
    text = DENSE + " --world-size 1 --global-batch-size 16"  # 8 microbatches
    cfg = cfg_of(text + " --defer-embedding-wgrad-compute --wgrad-deferral-limit 2")
    per = 2 * 4096 * 32000 + 2 * 4096 * 1024
    assert deferred_wgrad_bytes(cfg) == 2 * per
    assert deferred_wgrad_bytes(cfg_of(text + " --defer-embedding-wgrad-compute")) == 7 * per
    assert deferred_wgrad_bytes(cfg_of(text)) == 0


def test_megatron_schedule_table_and_warmup():
    # Megatron's own example (get_schedule_table docstring): PP2 N3 M5 VP2
    table = schedule_table(5, 2, 3)
    assert [mb for mb, _ in table] == [0, 1, 2, 0, 1, 2, 3, 4, 3, 4]
    assert [chunk for _, chunk in table] == [0, 0, 0, 1, 1, 1, 0, 0, 1, 1]
    # num_warmup = (PP - rank - 1) * 2 + (VP - 1) * group, capped at every pass
    assert [warmup_passes(4, r, 2, 8, 4) for r in range(4)] == [10, 8, 6, 4]
    assert warmup_passes(4, 0, 2, 4, 4) == 8  # all 8 passes in warm-up
    assert [warmup_passes(4, r, 1, 8, 4) for r in range(4)] == [3, 2, 1, 0]


def test_schedule_peak_walks_the_real_order():
    chunks = [ChunkMemory(1, 1, 1), ChunkMemory(10, 10, 10)]
    # last rank of PP2 VP2: two chunk-0 passes warm up, then 1F1B: three passes in flight
    steady = peak(chunks, pp=2, rank=1, microbatches=4)
    assert (steady.peak_bytes, steady.in_flight_at_peak, steady.warmup) == (12, 3, 2)
    # first rank with 2 microbatches: every pass in warm-up, everything held at once
    flush = peak(chunks, pp=2, rank=0, microbatches=2)
    assert (flush.peak_bytes, flush.in_flight_at_peak) == (22, 4)


def test_layout_counts_embedding_and_loss_as_layers():
    text = ("--num-layers 6 --hidden-size 512 --num-attention-heads 8 --seq-length 1024 "
            "--pipeline-model-parallel-size 4 --num-virtual-stages-per-pipeline-rank 2 "
            "--account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split "
            "--world-size 8 --vocab-size 50257")
    cfg = cfg_of(text)
    assert layers_per_virtual_stage(cfg) == [0, 1, 1, 1, 1, 1, 1, 0]
    first, last = chunks_of_rank(cfg, 0), chunks_of_rank(cfg, 3)
    assert first[0].layers == () and first[0].embedding
    assert last[1].layers == () and last[1].output and last[0].layers == (2,)
    # issue 17's false problem: Megatron accepts this layout
    checks = {c.name: c.status for c in run_checks(cfg)}
    assert checks["layers-divisible-by-pp"] == "pass"  # 6 + 2 = 8 over PP 4
    assert checks["layers-divisible-by-virtual-stages"] == "pass"  # 8 = 4 x 2 x 1
    without = {c.name: c.status for c in run_checks(cfg_of(
        text.replace("--account-for-loss-in-pipeline-split", "")))}
    assert without["layers-divisible-by-pp"] == "fail"  # 7 over 4


def test_sequence_parallel_at_tp1_is_not_a_problem():
    cfg = cfg_of(DENSE + " --sequence-parallel")
    check = next(c for c in run_checks(cfg) if c.name == "sequence-parallel-needs-tp")
    assert check.status == "pass" and "turns it off" in check.message
    assert rank_allocation(cfg, 0).peak_mib == rank_allocation(cfg_of(DENSE), 0).peak_mib


def test_state_bytes_per_precision_and_flag():
    bf16 = state_bytes(cfg_of(DENSE))
    assert (bf16.weights, bf16.grads, bf16.optimizer) == (2, 4, 12)  # Megatron's 6 + 12
    fp16 = state_bytes(cfg_of(DENSE.replace("--bf16", "--fp16")))
    assert fp16.weights + fp16.grads == 4 and fp16.optimizer == 16  # 4 + 16
    fp32 = state_bytes(cfg_of(DENSE.replace("--bf16", "")))
    assert fp32.weights + fp32.grads == 8 and fp32.optimizer == 8  # 8 + 8
    assert state_bytes(cfg_of(DENSE + " --grad-reduce-in-bf16")).grads == 2
    aware = state_bytes(cfg_of(DENSE + " --use-precision-aware-optimizer --main-grads-dtype "
                               "bf16 --exp-avg-dtype bf16 --exp-avg-sq-dtype bf16"))
    assert (aware.grads, aware.optimizer) == (2, 4 + 2 + 2)
    assert state_bytes(cfg_of(DENSE + " --optimizer sgd")).optimizer == 4 + 4


def test_optimizer_shards_follow_megatrons_groups():
    base = ("--num-layers 2 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 "
            "--use-distributed-optimizer ")
    assert optimizer_shards(cfg_of(base + "--world-size 16 --context-parallel-size 2 "
                                   "--tensor-model-parallel-size 2")) == (8, 8)
    assert optimizer_shards(cfg_of(base + "--world-size 16 "
                                   "--num-distributed-optimizer-instances 2")) == (8, 8)
    moe = cfg_of(base + "--world-size 16 --num-experts 8 --expert-model-parallel-size 4 "
                 "--tensor-model-parallel-size 2 --expert-tensor-parallel-size 1")
    assert optimizer_shards(moe) == (8, 4)  # DP 8; EDP = 16 / (EP 4 x ETP 1)


def test_expert_tokens_and_capacity():
    text = DENSE + (" --num-experts 8 --moe-router-topk 2 --expert-model-parallel-size 1"
                    " --tensor-model-parallel-size 2 --sequence-parallel --world-size 2")
    cfg = cfg_of(text)
    assert expert_tokens(cfg, shape_of(cfg)) == 4096 / 2 * 2 * 2  # T/SP x top-k x ETP
    padded = cfg_of(text + " --moe-expert-capacity-factor 1.5 "
                           "--moe-pad-expert-input-to-capacity")
    assert expert_tokens(padded, shape_of(padded)) == 4096 / 2 * 2 * 2 * 1.5


def test_flags_never_silently_ignored():
    risky, harmless = classify(["--cpu-offloading", "--lr", "--log-interval",
                                "--some-future-flag"])
    assert risky == ["--cpu-offloading", "--some-future-flag"]
    assert harmless == ["--log-interval", "--lr"]
    report = estimate(cfg_of(DENSE + " --cpu-offloading --lr 0.1"), capacity_mib=1e6)
    assert report.to_dict()["not_modelled_args"] == ["--cpu-offloading"]
    assert any("not modelled" in n and NOT_MODELLED["--cpu-offloading"] in n
               for n in report.notes)


def test_overlapped_moe_communication_adds_a_warmup_forward_not_a_microbatch():
    """--overlap-moe-expert-parallel-comm: Megatron warms up one more forward, then runs each
    forward together with a backward (combined 1F1B): the count in flight does not grow."""
    chunks = [ChunkMemory(1, 1, 1), ChunkMemory(10, 10, 10)]
    plain = peak(chunks, pp=2, rank=1, microbatches=4)
    combined = peak(chunks, pp=2, rank=1, microbatches=4, combined=True)
    assert combined.warmup == plain.warmup + 1
    assert combined.in_flight_at_peak == plain.in_flight_at_peak
    assert warmup_passes(1, 0, 1, 8, 1, combined=True) == 1  # no pipelining: one alone
    solo = peak([ChunkMemory(5, 5, 5)], pp=1, rank=0, microbatches=8, combined=True)
    assert (solo.peak_bytes, solo.in_flight_at_peak) == (5, 1)


def test_selective_recompute_of_other_modules_is_listed_as_not_modelled():
    text = DENSE + " --recompute-granularity selective --recompute-modules core_attn mlp"
    report = estimate(cfg_of(text), capacity_mib=1e6)
    assert report.to_dict()["not_modelled_args"] == ["--recompute-modules mlp"]
    assert cfg_of(text).recompute_modules == ["core_attn", "mlp"]
