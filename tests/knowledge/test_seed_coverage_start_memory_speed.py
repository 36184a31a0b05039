"""Every seed row about starting, memory and speed (triage, oom, startup, slow-training,
preflight) ends at a fix.

The list below was written from the seed documents (the project's Chinese source notes), not
from the trees:
one entry per table row, flowchart action, checklist item or numbered case, with the tree it
belongs to. A row counts as covered when its canonical tag appears in the `source` of at least
one FIX node of that tree (a question that only mentions it does not count).
"""

from __future__ import annotations

import re

import pytest

from trainmedic.trees import Fix, load_forest

# (source tag, tree, what the seed says)
COVERAGE = [
    # seed 000, chapter 11 (Megatron OOM / hang / spike guide)
    ("seed000 §11.1", "oom", "run tools/report_theoretical_memory.py before training"),
    ("seed000 §11.1", "preflight", "theoretical memory self-check before launch"),
    (
        "seed000 §11.2 row 1",
        "oom",
        "OOM at step 1: selective recompute, more TP/PP, dist optimizer, smaller micro batch",
    ),
    (
        "seed000 §11.2 row 2",
        "oom",
        "OOM at step 50-200: long samples; packing, lower --seq-length, filter",
    ),
    ("seed000 §11.2 row 3", "oom", "OOM in save_checkpoint: torch_dist format or --async-save"),
    (
        "seed000 §11.2 row 4",
        "oom",
        "backward OOM, forward fine: distributed optimizer + overlap grad reduce",
    ),
    ("seed000 §11.2 row 5", "oom", "one PP stage OOMs: uneven layer layout"),
    ("seed000 §11.2 row 6", "oom", "fp8 + flash-attn sudden OOM: TE cache, NVTE_FUSED_ATTN=0"),
    ("seed000 §11.2 row 7", "oom", "long context OOM: context parallelism"),
    ("seed000 §11.2 row 8", "oom", "VPP OOM: interleaving holds more activations"),
    ("seed000 §11.2 toolbox", "oom", "nvidia-smi -l 1, memory snapshot, --profile"),
    (
        "seed000 §11.6",
        "slow-training",
        "wall-clock timers: --log-throughput --log-progress --log-timers-to-tensorboard",
    ),
    ("seed000 §11.6 row 1", "slow-training", "timer forward-compute"),
    ("seed000 §11.6 row 2", "slow-training", "timer backward-compute"),
    ("seed000 §11.6 row 3", "slow-training", "timer forward-send-backward-recv (PP communication)"),
    ("seed000 §11.6 row 4", "slow-training", "timer backward-params-all-reduce (DP gradient sync)"),
    ("seed000 §11.6 row 5", "slow-training", "timer optimizer"),
    (
        "seed000 §11.7 row 1",
        "startup",
        "NCCL error 5 invalid usage / CUDA_DEVICE_MAX_CONNECTIONS=1",
    ),
    ("seed000 §11.7 row 2", "startup", "num_attention_heads must be divisible by TP"),
    (
        "seed000 §11.7 row 3",
        "startup",
        "cannot find megatron.core._C: compiled helpers / fused kernels",
    ),
    ("seed000 §11.7 row 4", "startup", "flash_attn import error"),
    ("seed000 §11.7 row 5", "startup", "TransformerEngine not found"),
    ("seed000 §11.7 row 6", "startup", "data path .bin not found"),
    ("seed000 §11.9", "triage", "minimum information for an issue report"),
    ("seed000 §11.10 step 1", "preflight", "use the NGC container"),
    ("seed000 §11.10 step 2", "preflight", "run report_theoretical_memory first"),
    ("seed000 §11.10 step 3", "preflight", "three layers of verbose logs"),
    # seed 002 (memory interruptions: symptoms, flowchart, parameters, rank balance, DeepSpeed)
    ("seed002 §1", "oom", "sudden exit / OOM / NCCL errors caused by one card's OOM"),
    ("seed002 flow C", "oom", "OOM reported: check nvidia-smi memory"),
    ("seed002 flow D", "oom", "no OOM message: check the NCCL logs"),
    ("seed002 flow E", "oom", "single card over its limit?"),
    ("seed002 flow F", "oom", "adjust batch size / sequence length"),
    ("seed002 flow G", "oom", "not over the limit: check distributed load balance"),
    ("seed002 flow H", "oom", "is there a rank timeout?"),
    ("seed002 flow I", "oom", "check memory skew of one rank"),
    ("seed002 flow J", "oom", "gradient accumulation or ZeRO"),
    ("seed002 flow K", "oom", "verify mixed-precision configuration"),
    ("seed002 params row 1", "oom", "batch size: lower it, gradient accumulation"),
    ("seed002 params row 2", "oom", "sequence length: O(s^2) attention"),
    ("seed002 params row 3", "oom", "mixed precision (AMP)"),
    ("seed002 params row 4", "oom", "optimizer states: ZeRO-2/3 or offload"),
    ("seed002 params row 5", "oom", "gradient checkpointing"),
    ("seed002 params row 6", "oom", "model parallelism (tensor / pipeline)"),
    ("seed002 params row 7", "oom", "distributed strategy: FSDP / DeepSpeed"),
    ("seed002 params row 8", "triage", "data loader prefetch and workers (host memory)"),
    ("seed002 params row 9", "oom", "LoRA fine-tuning"),
    ("seed002 params row 10", "oom", "checkpoint save frequency / async writes"),
    (
        "seed002 §4",
        "oom",
        "rank imbalance: data, branches, peak timing, init; per-rank memory_summary; zero.Init",
    ),
    ("seed002 §5", "oom", "DeepSpeed ZeRO-3 + CPU offload + activation checkpointing config"),
    # seed 003 (Megatron 8-GPU walkthrough)
    ("seed003 §1", "startup", "container, version matrix, APEX, TORCH_CUDA_ARCH_LIST, import test"),
    ("seed003 §1", "preflight", "environment variables and connectivity test before training"),
    ("seed003 §2", "startup", "preprocessing, parallel-size divisibility, batch-size arithmetic"),
    (
        "seed003 §3",
        "oom",
        "CUDA OOM: other processes, micro batch, recompute, seq length, comm buffers",
    ),
    (
        "seed003 §5",
        "slow-training",
        "recompute cost, bf16, comm overlap, microbatches, monitoring tools",
    ),
    # seed 004 (30 cases)
    ("seed004 case 3", "oom", "CUDA out of memory: memory_allocated prints, remedies by priority"),
    ("seed004 case 4", "oom", "memory leak: undetached tensors, loss without .item(), loaders"),
    ("seed004 case 7", "slow-training", "slow data loading, GPU utilisation < 50%"),
    ("seed004 case 8", "slow-training", "uneven data: sort by length or bucket"),
    ("seed004 §6 item 1", "preflight", "GPU state normal (nvidia-smi)"),
    ("seed004 §6 item 2", "preflight", "nccl-tests pass"),
    ("seed004 §6 item 3", "preflight", "enough GPU memory"),
    ("seed004 §6 item 4", "preflight", "data accessible"),
    ("seed004 §6 item 5", "preflight", "random seeds set"),
    (
        "seed004 §6",
        "slow-training",
        "during training: utilisation > 80%, memory stable, loss, grad norm 0.1-10",
    ),
    (
        "seed004 §6",
        "triage",
        "on failure: last error line, NCCL_DEBUG=INFO, monitoring, minimal repro",
    ),
]

# Seed advice that is wrong or outdated: the tree must name it in a fix's `myth` (correct over
# faithful). (tree, text the myth must mention, what the seed says)
MYTHS = [
    ("oom", "--checkpoint-activations", "seed003 §3/§5: renamed to --recompute-*"),
    ("oom", "--reduce-scatter-buffer-size", "seed003 §3: no such Megatron flag"),
    ("oom", "--standalone-embedding-stage", "seed000 §11.2 row 5: removed from Megatron"),
    ("oom", "--num-microbatches", "seed000 §11.2 row 8: not a flag, derived"),
    ("oom", "empty_cache", "seed004 case 4: gc.collect + empty_cache does not fix a leak"),
    ("oom", "CUDA_LAUNCH_BLOCKING=0", "seed002 §4: the default, no memory effect"),
    ("startup", "--world-size", "seed003 §2: comes from the launcher"),
    ("startup", "--dataset-impl", "seed003 §2: removed from preprocess_data.py"),
    ("startup", "--global-option", "seed003 §1: old APEX pip syntax"),
    ("startup", "--num-microbatches", "seed003 §2/§5: batch arithmetic"),
    ("slow-training", "--async-tensor-model-parallel-allreduce", "seed003 §5: default, deprecated"),
    ("slow-training", "CUDA_LAUNCH_BLOCKING=1", "seed003 §1: debugging only"),
    ("preflight", "NCCL_TIMEOUT", "seed000 §11.3 / seed004 case 1: read by nothing"),
]

MY_TREES = ("triage", "oom", "startup", "slow-training", "preflight")
CANONICAL = re.compile(
    r"seed00[0-4] (§\d+(\.\d+)?( (row|step|item) \d+| toolbox)?|flow [A-K]|params row \d+|case \d+)"
    r"|research §\d+[a-z]?"
    r"|knowledge review §\d+( G\d+| [A-D]\d+)?|issue \d+"  # the expert review, the issue that asked
)


@pytest.fixture(scope="module")
def forest():
    return load_forest()


def _covers(tag: str, source: str) -> bool:
    """`seed000 §11.2 row 1` covers itself, not `... row 10`: a tag matches up to a word end."""
    return re.fullmatch(re.escape(tag) + r"(\s.*)?", source) is not None


def test_coverage_list_has_no_duplicates():
    pairs = [(tag, tree) for tag, tree, _ in COVERAGE]
    assert len(pairs) == len(set(pairs))


def test_matcher_respects_row_boundaries():
    assert _covers("seed000 §11.2 row 1", "seed000 §11.2 row 1")
    assert not _covers("seed000 §11.2 row 1", "seed000 §11.2 row 10")
    assert not _covers("seed000 §11.1", "seed000 §11.10 step 1")


@pytest.mark.parametrize(
    ("tag", "tree_id", "what"), COVERAGE, ids=[f"{t}@{tr}" for t, tr, _ in COVERAGE]
)
def test_seed_row_ends_at_a_fix(forest, tag, tree_id, what):
    fixes = [n for n in forest.trees[tree_id].nodes.values() if isinstance(n, Fix)]
    hits = [f.id for f in fixes if any(_covers(tag, s) for s in f.source)]
    assert hits, f"{tag} ({what}) is not the source of any fix in tree '{tree_id}'"


@pytest.mark.parametrize("tree_id", MY_TREES)
def test_sources_use_the_canonical_form(forest, tree_id):
    for node_id, node in forest.trees[tree_id].nodes.items():
        for source in node.source:
            assert CANONICAL.fullmatch(source), f"{tree_id}#{node_id}: source {source!r}"


@pytest.mark.parametrize(("tree_id", "text", "what"), MYTHS, ids=[m[1] for m in MYTHS])
def test_seed_myth_is_corrected(forest, tree_id, text, what):
    myths = [str(n.myth) for n in forest.trees[tree_id].nodes.values() if isinstance(n, Fix)]
    assert any(text in myth for myth in myths), f"{tree_id}: no myth mentions {text} ({what})"
