"""The model against Megatron's own formulas (core_v0.18+), to the MiB, for many configurations.

Expected numbers are computed here, independently of trainmedic's code: `reference()` is a
literal transcription of the formulas written out in
/work/shared/research/training-diagnostics.md §1.3-1.5 (Megatron's
`theoretical_memory_usage.py`), and the MoE numbers are the ones of Megatron's own unit test
`tests/unit_tests/training/test_weight_and_optimizer_memory.py`, in bytes.
"""

from __future__ import annotations

import math

import pytest

from trainmedic.memory import config_from_args, estimate, megatron_report, require
from trainmedic.memory.model import MIB, count_parameters, megatron_weight_and_optimizer_bytes

SEED_11_1 = (
    "--num-layers 80 --hidden-size 8192 --num-attention-heads 64 "
    "--num-query-groups 8 --kv-channels 128 --ffn-hidden-size 28672 "
    "--seq-length 8192 --max-position-embeddings 8192 "
    "--micro-batch-size 1 --global-batch-size 1024 "
    "--tensor-model-parallel-size 8 "
    "--pipeline-model-parallel-size 4 "
    "--bf16 "
    "--use-distributed-optimizer"
)


def reference(
    *, L, h, a, s, b=1, g=None, d=None, f=None, swiglu=False, rms=False, vocab=50257,
    divisible=128, untied=False, t=1, p=1, v=None, world=None, dist=False, sp=False,
    selective=False, gbs=None,
):
    """Megatron's report for a dense GPT, from the written formulas (MiB)."""
    g = g or a
    d = d or h // a
    if f is None:
        f = int((4 * h * 2 / 3) / 64) * 64 if swiglu else 4 * h
    gamma = 1.5 if swiglu else 1.0
    n = 1 if rms else 2
    V = math.ceil(vocab / (divisible * t)) * divisible * t
    world = world or t * p
    D = world // (t * p)
    nmb = (gbs or b * D) // (b * D)
    attn = 2 * h * h * (1 + g / a) * (d * a / h)
    mlp = 2 * h * f * gamma
    ln = 2 * h * n
    emb = h * V
    tp_sharded = (attn + mlp) * L
    replicated = ln * L + n * h
    T = (tp_sharded / p + emb) / t + (emb / t if untied and p == 1 else 0)
    R = replicated / p
    B = 6 + 12 / D if dist else 18
    weights = (T + R) * B / MIB
    if sp and t > 1 and selective:
        A = s * b * h * (18 + 4 * f / h) * L + 8 * s * b * p + s * b * h * p
        if v is not None:
            A *= 1 + (p - 1) / (p * v)
        elif p > 1:
            A *= min(1, nmb / p)
        if p == 1:
            A += s * b * h * 4 * (1 + V / h)
        A /= t
    else:
        A = s * b * h * (10 + 24 / t) * L + 8 * s * b * p + s * b * h * p
        if v is not None:
            A *= 1 + (p - 1) / (p * v)
        elif p > 1:
            A *= min(1, nmb / p)
        if p == 1:
            A += 2 * (s * b * V / t + s * b * h)
        A *= 1.05
    act = A / MIB
    return weights, act, weights + act


CASES = {
    "gpt3-1.3b-dense-tp1": (
        "--num-layers 24 --hidden-size 2048 --num-attention-heads 16 --seq-length 2048 "
        "--micro-batch-size 4 --world-size 8",
        dict(L=24, h=2048, a=16, s=2048, b=4, world=8),
    ),
    "llama2-7b-swiglu-sp-selective": (
        "--num-layers 32 --hidden-size 4096 --num-attention-heads 32 --ffn-hidden-size 11008 "
        "--swiglu --normalization RMSNorm --untie-embeddings-and-output-weights --vocab-size 32000"
        " --tensor-model-parallel-size 2 --sequence-parallel --recompute-activations "
        "--world-size 16 --use-distributed-optimizer --seq-length 4096",
        dict(L=32, h=4096, a=32, s=4096, f=11008, swiglu=True, rms=True, untied=True,
             vocab=32000, t=2, world=16, dist=True, sp=True, selective=True),
    ),
    "llama2-13b-tp4-pp2": (
        "--num-layers 40 --hidden-size 5120 --num-attention-heads 40 --ffn-hidden-size 13824 "
        "--swiglu --normalization RMSNorm --untie-embeddings-and-output-weights --vocab-size 32000"
        " --tensor-model-parallel-size 4 --pipeline-model-parallel-size 2 --world-size 32 "
        "--use-distributed-optimizer --seq-length 4096 --global-batch-size 128",
        dict(L=40, h=5120, a=40, s=4096, f=13824, swiglu=True, rms=True, untied=True,
             vocab=32000, t=4, p=2, world=32, dist=True, gbs=128),
    ),
    "llama3-70b-gqa-sp-pp4": (
        "--num-layers 80 --hidden-size 8192 --num-attention-heads 64 --group-query-attention "
        "--num-query-groups 8 --ffn-hidden-size 28672 --swiglu --normalization RMSNorm "
        "--untie-embeddings-and-output-weights --vocab-size 128256 "
        "--tensor-model-parallel-size 8 --pipeline-model-parallel-size 4 --sequence-parallel "
        "--recompute-granularity selective --world-size 256 --use-distributed-optimizer "
        "--seq-length 8192 --global-batch-size 512",
        dict(L=80, h=8192, a=64, g=8, s=8192, f=28672, swiglu=True, rms=True, untied=True,
             vocab=128256, t=8, p=4, world=256, dist=True, sp=True, selective=True, gbs=512),
    ),
    "llama3-70b-vpp": (
        "--num-layers 80 --hidden-size 8192 --num-attention-heads 64 --group-query-attention "
        "--num-query-groups 8 --ffn-hidden-size 28672 --swiglu --normalization RMSNorm "
        "--untie-embeddings-and-output-weights --vocab-size 128256 "
        "--tensor-model-parallel-size 8 --pipeline-model-parallel-size 4 --sequence-parallel "
        "--recompute-granularity selective --world-size 256 --use-distributed-optimizer "
        "--seq-length 8192 --num-layers-per-virtual-pipeline-stage 5",
        dict(L=80, h=8192, a=64, g=8, s=8192, f=28672, swiglu=True, rms=True, untied=True,
             vocab=128256, t=8, p=4, v=4, world=256, dist=True, sp=True, selective=True),
    ),
    "seed-000-11.1-as-written": (
        SEED_11_1,
        # no --group-query-attention: Megatron ignores --num-query-groups (g = a)
        dict(L=80, h=8192, a=64, d=128, s=8192, f=28672, t=8, p=4, dist=True, gbs=1024),
    ),
    "pp4-fewer-microbatches-than-stages": (
        "--num-layers 24 --hidden-size 2048 --num-attention-heads 16 --seq-length 2048 "
        "--pipeline-model-parallel-size 4 --world-size 4 --global-batch-size 2",
        dict(L=24, h=2048, a=16, s=2048, p=4, world=4, gbs=2),
    ),
    "swiglu-default-ffn": (
        "--num-layers 32 --hidden-size 4096 --num-attention-heads 32 --swiglu "
        "--seq-length 4096 --tensor-model-parallel-size 2 --world-size 8",
        dict(L=32, h=4096, a=32, s=4096, swiglu=True, t=2, world=8),
    ),
    "kv-channels-not-h-over-a": (
        "--num-layers 16 --hidden-size 4096 --num-attention-heads 32 --kv-channels 256 "
        "--seq-length 2048 --micro-batch-size 2 --tensor-model-parallel-size 4 --world-size 32 "
        "--use-distributed-optimizer",
        dict(L=16, h=4096, a=32, d=256, s=2048, b=2, t=4, world=32, dist=True),
    ),
    "sp-without-selective-takes-the-without-sp-path": (
        "--num-layers 32 --hidden-size 4096 --num-attention-heads 32 --seq-length 4096 "
        "--tensor-model-parallel-size 4 --sequence-parallel --world-size 8",
        dict(L=32, h=4096, a=32, s=4096, t=4, world=8, sp=True, selective=False),
    ),
    "sp-at-tp1-is-switched-off": (
        "--num-layers 12 --hidden-size 768 --num-attention-heads 12 --seq-length 1024 "
        "--sequence-parallel --recompute-activations --world-size 1",
        dict(L=12, h=768, a=12, s=1024, world=1),
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_megatron_three_numbers_match_the_formulas(name):
    argv, ref_kwargs = CASES[name]
    cfg = require(config_from_args(argv.split()))
    got = megatron_report(cfg, cfg.num_microbatches)
    weights, act, total = reference(**ref_kwargs)
    assert got.weight_and_optimizer_mib == pytest.approx(weights, abs=0.5)
    assert got.activation_mib == pytest.approx(act, abs=0.5)
    assert got.total_mib == pytest.approx(total, abs=0.5)


def test_seed_example_hand_numbers():
    """The seed's 80-layer example, worked by hand (MHA, LayerNorm, tied, V = 51200, DP 1)."""
    cfg = require(config_from_args(SEED_11_1.split()))
    pc = count_parameters(cfg)
    # attention 2*8192^2*2 = 268,435,456; MLP 2*8192*28672 = 469,762,048; norms 2*8192*2 = 32,768
    assert pc.dense_layer == 268_435_456 + 469_762_048 + 32_768
    # stage 0: ((738,197,504*80)/4 + 8192*51200)/8 + (32,768*80 + 16,384)/4 = 1,898,582,016 params
    most_loaded = (738_197_504 * 80 / 4 + 8192 * 51200) / 8 + (32_768 * 80 + 16_384) / 4
    assert most_loaded == 1_898_582_016
    assert megatron_weight_and_optimizer_bytes(cfg, pc) == most_loaded * 18  # DP 1: 6 + 12/1
    # activations (without-SP path, PP 4, 1024 microbatches >= 4): per layer s*b*h*(10+24/8)
    act = (8192 * 8192 * 13 * 80 + 8 * 8192 * 4 + 8192 * 8192 * 4) * 1.05
    report = megatron_report(cfg, cfg.num_microbatches)
    assert report.activation_mib == pytest.approx(act / MIB, abs=1e-6)
    assert report.total_mib == pytest.approx((most_loaded * 18 + act) / MIB, abs=1e-6)


def _unit_test_args(**over):
    """Megatron's unit-test model: h=8, a=2, d=4, f=16, E=4 (freq [0,1]), shared 8, V=32."""
    args = dict(
        tp=2, pp=1, world=32, ep=2, etp=4, dist=True,
    )
    args.update(over)
    argv = (
        "--num-layers 2 --hidden-size 8 --num-attention-heads 2 --kv-channels 4 "
        "--ffn-hidden-size 16 --num-experts 4 --moe-ffn-hidden-size 16 --moe-layer-freq [0,1] "
        "--moe-shared-expert-intermediate-size 8 --moe-router-topk 1 --normalization RMSNorm "
        "--disable-bias-linear --vocab-size 32 --make-vocab-size-divisible-by 8 --seq-length 4 "
        f"--tensor-model-parallel-size {args['tp']} --pipeline-model-parallel-size {args['pp']} "
        f"--world-size {args['world']} --expert-model-parallel-size {args['ep']} "
        f"--expert-tensor-parallel-size {args['etp']}"
        + (" --use-distributed-optimizer" if args["dist"] else "")
    )
    cfg = require(config_from_args(argv.split()))
    return megatron_weight_and_optimizer_bytes(cfg, count_parameters(cfg))


def test_moe_unit_test_of_megatron_expert_parallelism():
    # Literal numbers of test_weight_and_optimizer_memory_accounts_for_expert_parallelism.
    got = _unit_test_args(pp=2, world=64)
    tp_sharded = ((256 + 256 + 256 + 128) / 2 + 256) / 2
    replicated = (16 + 16 + 32 + 8) / 2
    expert = 1024 / 2 / (4 * 2)
    expected = (tp_sharded + replicated) * (6 + 12 / 16) + expert * (6 + 12 / 4)
    assert math.isclose(got, expected)


def test_moe_memory_decreases_with_tensor_and_expert_parallelism():
    by_tp = [_unit_test_args(tp=tp, ep=1, etp=1, dist=False, world=16 * tp) for tp in (1, 2, 4)]
    assert by_tp[0] > by_tp[1] > by_tp[2]
    by_ep = [_unit_test_args(ep=ep, etp=etp) for ep, etp in ((1, 1), (2, 1), (2, 2), (4, 2))]
    assert by_ep[0] > by_ep[1] > by_ep[2] > by_ep[3]


def test_mixtral_like_moe_by_hand():
    """8 experts top-2, GQA 8, SwiGLU, RMSNorm, untied, EP 8, TP 1, DP 8, no dist optimizer."""
    argv = (  # noqa: SIM905
        "--num-layers 32 --hidden-size 4096 --num-attention-heads 32 --group-query-attention "
        "--num-query-groups 8 --ffn-hidden-size 14336 --swiglu --normalization RMSNorm "
        "--untie-embeddings-and-output-weights --vocab-size 32000 --num-experts 8 "
        "--moe-router-topk 2 --expert-model-parallel-size 8 --world-size 8 --seq-length 4096 "
        "--disable-bias-linear"
    ).split()
    cfg = require(config_from_args(argv))
    h, f, L = 4096, 14336, 32
    attn = 2 * h * h * (1 + 8 / 32)  # d*a/h = 1
    routed = 2 * h * f * 8 * 1.5
    ln = 2 * h
    router = h * 8
    emb = h * 32000
    pc = count_parameters(cfg)
    assert pc.total == (attn + routed + ln + router) * L + h + 2 * emb
    assert pc.active_total == (attn + 2 * h * f * 2 * 1.5 + ln + router) * L + h + 2 * emb
    # TP 1, PP 1: T = attn*L + 2*emb; R = (ln+router)*L + h; X = routed*L/8; EDP = 8//8 = 1
    expected = (attn * L + 2 * emb + (ln + router) * L + h) * 18 + routed * L / 8 * 18
    assert megatron_weight_and_optimizer_bytes(cfg, pc) == expected


def test_allocated_model_counts_megatrons_parameters_where_megatron_is_complete():
    """Without biases, learned positions or a tied copy, the allocated model's parameters on
    all stages add up to Megatron's total (it counts module by module, Megatron by formula);
    TP 8 splits everything but the norms, which Megatron's bucket R replicates."""
    argv = [*CASES["llama3-70b-gqa-sp-pp4"][0].split(), "--bf16", "--disable-bias-linear",
            "--position-embedding-type", "rope"]
    cfg = require(config_from_args(argv))
    report = estimate(cfg, capacity_mib=141 * 1024.0)
    pc = count_parameters(cfg)
    tp_sharded, replicated, _ = pc.buckets(pc.dense_layers, pc.moe_layers)
    replicated += pc.final_norm
    expected = (tp_sharded + 2 * pc.embedding) / 8 + replicated
    assert sum(st.parameters for st in report.stages) == pytest.approx(expected)
    # the bias-free, rope default keeps that equality; learned positions add a table
    learned = estimate(require(config_from_args(argv[:-2])), capacity_mib=1e6)
    assert learned.stages[0].parameters - report.stages[0].parameters == 8192 * 8192
