"""The allocated-memory model as `estimate` reports it, verdicts, suggestions and checks."""

from __future__ import annotations

import pytest

from trainmedic.errors import UsageError
from trainmedic.memory import add_suggestions, config_from_args, estimate, require, run_checks
from trainmedic.memory.capacity import parse_capacity
from trainmedic.memory.model import (
    FRAGMENTATION_FRACTION,
    MIB,
    RUNTIME_ALLOWANCE_MIB,
    verdict_for,
)
from trainmedic.probes.memory_estimate import memory_facts

BASE = (
    "--num-layers 8 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 "
    "--micro-batch-size 2 --vocab-size 32000 --bf16"
)


def cfg_of(text: str):
    return require(config_from_args(text.split()))


def test_full_recompute_keeps_only_layer_inputs():
    """Full recompute keeps each layer's input; backward re-runs one layer at a time."""
    plain = estimate(cfg_of(BASE + " --world-size 1"), capacity_mib=80 * 1024.0)
    full = estimate(cfg_of(BASE + " --recompute-granularity full --recompute-method uniform "
                           "--recompute-num-layers 1 --world-size 1"), capacity_mib=80 * 1024.0)
    assert full.stages[0].activation_mib < plain.stages[0].activation_mib
    # Megatron's report ignores full recompute: same number either way
    assert full.megatron.activation_mib == plain.megatron.activation_mib


def test_context_parallel_shrinks_activations():
    one = estimate(cfg_of(BASE + " --world-size 4"), capacity_mib=1e6)
    two = estimate(cfg_of(BASE + " --world-size 4 --context-parallel-size 2"), capacity_mib=1e6)
    assert two.stages[0].activation_mib < 0.6 * one.stages[0].activation_mib
    assert two.megatron.activation_mib == one.megatron.activation_mib  # Megatron: no CP


def test_fp8_weight_copies_and_param_gather():
    plain = estimate(cfg_of(BASE), capacity_mib=1e6).stages[0]
    fp8 = estimate(cfg_of(BASE + " --fp8-format hybrid"), capacity_mib=1e6).stages[0]
    gathered = estimate(cfg_of(BASE + " --fp8-format hybrid --fp8-param-gather"),
                        capacity_mib=1e6).stages[0]
    # attention (QKV + proj) and MLP (fc1 + fc2) weights of 8 layers, 2 bytes each
    linear = 8 * (4 * 1024 * 1024 + 2 * 1024 * 4096)
    assert fp8.weights_and_optimizer_mib - plain.weights_and_optimizer_mib == pytest.approx(
        2 * linear / MIB)
    assert gathered.weights_and_optimizer_mib == plain.weights_and_optimizer_mib
    assert fp8.activation_mib < plain.activation_mib  # linear inputs kept in fp8


def test_stages_and_allowances():
    cfg = cfg_of(BASE + " --pipeline-model-parallel-size 4 --world-size 4 "
                 "--global-batch-size 64")
    report = estimate(cfg, capacity_mib=80 * 1024.0)
    # 1F1B: stage r holds PP - r microbatches at its peak (warm-up PP - r - 1, plus one)
    assert [st.in_flight_microbatches for st in report.stages] == [4, 3, 2, 1]
    assert [st.warmup for st in report.stages] == [3, 2, 1, 0]
    for st in report.stages:
        assert st.allocated_mib == pytest.approx(
            st.weights_and_optimizer_mib + st.workspaces_mib + st.activation_mib)
        assert st.runtime_allowance_mib == RUNTIME_ALLOWANCE_MIB
        assert st.total_mib == pytest.approx(st.allocated_mib * (1 + FRAGMENTATION_FRACTION)
                                             + RUNTIME_ALLOWANCE_MIB)
    assert report.worst.total_mib == max(st.total_mib for st in report.stages)


def test_verdicts_and_facts():
    assert verdict_for(100, 80) == "does not fit"
    assert verdict_for(75, 80) == "tight"
    assert verdict_for(60, 80) == "fits"
    report = add_suggestions(estimate(cfg_of(BASE), capacity_mib=80 * 1024.0))
    facts = memory_facts(report)
    assert facts["fits"] is True and facts["verdict"] == "fits"
    assert facts["capacity_gib"] == 80.0
    assert facts["total_gib"] == pytest.approx(report.worst.total_mib / 1024)
    assert report.suggestions == []  # nothing to suggest when it fits


SEED = (
    "--num-layers 80 --hidden-size 8192 --num-attention-heads 64 --num-query-groups 8 "
    "--kv-channels 128 --ffn-hidden-size 28672 --seq-length 8192 --max-position-embeddings 8192 "
    "--micro-batch-size 1 --global-batch-size 1024 --tensor-model-parallel-size 8 "
    "--pipeline-model-parallel-size 4 --bf16 --use-distributed-optimizer"
)


@pytest.mark.parametrize("world", ["", " --world-size 64"])
def test_suggestions_are_valid_and_reproducible(world):
    argv = (SEED + world).split()
    report = add_suggestions(estimate(require(config_from_args(argv)), capacity_mib=80 * 1024.0))
    assert report.verdict == "does not fit"
    assert report.suggestions
    costs = [s.cost for s in report.suggestions]
    assert costs == sorted(costs)
    for sug in report.suggestions:
        assert sug.verdict != "does not fit"
        changed = require(config_from_args(argv + sug.args))
        assert not [c for c in run_checks(changed) if c.status == "fail"], sug
        again = estimate(changed, capacity_mib=80 * 1024.0)
        assert again.worst.total_mib == pytest.approx(sug.total_mib)


def test_suggestions_for_an_uneven_pipeline():
    """30 layers = 6 + 9 + 9 + 6 over PP 4 is valid: suggestions follow the same checks."""
    argv = (BASE + " --num-layers 30 --seq-length 4096 --micro-batch-size 4 "
            "--pipeline-model-parallel-size 4 --world-size 4 "
            "--decoder-first-pipeline-num-layers 6 --decoder-last-pipeline-num-layers 6").split()
    report = add_suggestions(estimate(require(config_from_args(argv)), capacity_mib=2 * 1024.0))
    assert report.verdict == "does not fit"
    assert report.suggestions  # none were offered while 30 % 4 != 0 counted as invalid
    for sug in report.suggestions:
        changed = require(config_from_args(argv + sug.args))
        assert not [c for c in run_checks(changed) if c.status == "fail"], sug


def test_suggestions_offer_distributed_optimizer_when_missing():
    argv = (BASE + " --num-layers 48 --hidden-size 4096 --num-attention-heads 32 "
            "--world-size 64 --tensor-model-parallel-size 1").split()
    report = add_suggestions(estimate(require(config_from_args(argv)), capacity_mib=40 * 1024.0))
    assert report.verdict == "does not fit"
    assert "--use-distributed-optimizer" in report.suggestions[0].args


def statuses(text: str) -> dict[str, str]:
    return {c.name: c.status for c in run_checks(cfg_of(text))}


def test_checks_fail_and_pass():
    ok = statuses(BASE + " --tensor-model-parallel-size 4 --world-size 8 "
                  "--global-batch-size 16")
    assert set(ok.values()) == {"pass"}
    bad = statuses(
        "--num-layers 30 --hidden-size 1024 --num-attention-heads 12 --seq-length 1000 "
        "--group-query-attention --num-query-groups 6 --tensor-model-parallel-size 8 "
        "--pipeline-model-parallel-size 4 --context-parallel-size 3 --world-size 100 "
        "--global-batch-size 10 --fp16 --bf16"
    )
    for name in ("hidden-divisible-by-heads", "heads-divisible-by-tp",
                 "query-groups-divisible-by-tp",
                 "layers-divisible-by-pp", "world-size", "seq-length-divisible-by-2cp",
                 "precision"):
        assert bad[name] == "fail", name


def test_checks_batch_vpp_sp_vocab_and_ignored_groups():
    st = statuses(BASE + " --world-size 8 --global-batch-size 12 --sequence-parallel "
                  "--num-query-groups 4 --make-vocab-size-divisible-by 4096")
    assert st["global-batch"] == "fail"  # 12 % (2 x 8)
    assert st["sequence-parallel-needs-tp"] == "pass"  # Megatron turns it off at TP 1
    assert st["query-groups-ignored"] == "warn"
    assert st["vocab-padding"] == "warn"  # 32000 -> 32768
    vpp = statuses(BASE + " --pipeline-model-parallel-size 2 --world-size 2 "
                   "--num-layers-per-virtual-pipeline-stage 3")
    assert vpp["layers-divisible-by-virtual-stages"] == "fail"  # 4 layers per stage


@pytest.mark.parametrize(
    ("text", "mib"),
    [("80GiB", 81920.0), ("80", 81920.0), ("141GB", 141e9 / 2**20), ("81559MiB", 81559.0),
     ("0.5T", 524288.0)],
)
def test_capacity_units(text, mib):
    assert parse_capacity(text) == pytest.approx(mib)


@pytest.mark.parametrize("text", ["lots", "80XB", "-1GiB", "0"])
def test_capacity_garbage(text):
    with pytest.raises(ValueError, match="a size"):
        parse_capacity(text)


def test_bad_values_are_usage_errors():
    with pytest.raises(UsageError, match="--num-layers: expected an integer"):
        config_from_args(["--num-layers", "eighty"])
    with pytest.raises(UsageError, match="--hidden-size needs a value"):
        config_from_args(["--hidden-size"])
    with pytest.raises(UsageError, match="at least 1"):
        cfg_of(BASE + " --tensor-model-parallel-size 0")
    for flag in ("--make-vocab-size-divisible-by", "--kv-channels", "--num-query-groups",
                 "--ffn-hidden-size", "--vocab-size"):  # 0 divided by zero or sized nothing
        with pytest.raises(UsageError, match=f"{flag} must be at least 1"):
            cfg_of(f"{BASE} {flag} 0")
    with pytest.raises(UsageError, match="moe-layer-freq"):
        config_from_args(["--moe-layer-freq", "__import__('os')"])
    with pytest.raises(UsageError, match="--moe-layer-freq must be at least 1"):
        config_from_args(["--moe-layer-freq", "0"])  # was a ZeroDivisionError later
    with pytest.raises(UsageError, match="moe-layer-freq"):  # 10^10 items, not built
        config_from_args(["--moe-layer-freq", "([1]*100000)*100000"])


def test_uneven_pipeline_stages():
    text = (BASE + " --num-layers 30 --pipeline-model-parallel-size 4 --world-size 4 "
            "--decoder-first-pipeline-num-layers 6 --decoder-last-pipeline-num-layers 6")
    assert statuses(text)["layers-divisible-by-pp"] == "pass"  # 6 + 9 + 9 + 6
    report = estimate(cfg_of(text), capacity_mib=1e6)
    params = [st.parameters for st in report.stages]
    h = 1024
    # QKV, proj, fc1, fc2 weights and biases; two LayerNorms (weight and bias)
    layer = 4 * h * h + 3 * h + h + 8 * h * h + 4 * h + h + 2 * 2 * h
    assert params[1] == params[2] == 9 * layer
    embedding = 32000 * h + 2048 * h  # words and learned positions (--seq-length 2048)
    assert params[0] == 6 * layer + embedding
    # the last stage: its layers, the final norm and its own copy of the tied embedding
    assert params[3] == 6 * layer + 2 * h + 32000 * h
    assert statuses(text.replace("first-pipeline-num-layers 6",
                                 "first-pipeline-num-layers 5"))["layers-divisible-by-pp"] == "fail"


def test_group_query_attention_defaults_to_one_group():
    """Megatron's --num-query-groups defaults to 1: --group-query-attention alone is MQA."""
    mqa = cfg_of(BASE + " --group-query-attention")
    assert mqa.effective_query_groups == 1
    from trainmedic.memory.model import count_parameters

    h = 1024
    assert count_parameters(mqa).attention == 2 * h * h * (1 + 1 / 16)


def test_batch_rampup_sets_megatrons_first_iteration_microbatches():
    text = ("--num-layers 24 --hidden-size 2048 --num-attention-heads 16 --seq-length 2048 "
            "--pipeline-model-parallel-size 4 --world-size 4 --global-batch-size 64 --bf16 ")
    full = estimate(cfg_of(text), capacity_mib=1e6)
    ramp = estimate(cfg_of(text + "--rampup-batch-size 2 2 1000"), capacity_mib=1e6)
    # Megatron prints at the first iteration: 2 microbatches of 4 stages in flight -> x 0.5
    assert ramp.config.first_num_microbatches == 2
    assert ramp.megatron.activation_mib == pytest.approx(full.megatron.activation_mib / 2)
    # the verdict is about the worst iteration: the full batch
    assert ramp.worst.total_mib == full.worst.total_mib
    with pytest.raises(UsageError, match="three integers"):
        cfg_of(text + "--rampup-batch-size 2 2")
