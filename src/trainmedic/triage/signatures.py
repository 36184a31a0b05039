"""Failure signatures: the real messages training stacks print, and the tree node each leads to.

Each signature has cheap *needles* (plain substrings) used by the prefilter, so a multi-GB log is
scanned by one fast pass, and an optional confirming regex run only on the few lines that contain
a needle. `kind` orders findings: a *cause* (OOM, Xid, bad config) outranks a *symptom* (watchdog
timeout, remote error) that other ranks print because of it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Kind = Literal["cause", "symptom", "context"]
KIND_ORDER = {"cause": 0, "symptom": 1, "context": 2}


@dataclass(frozen=True)
class Signature:
    id: str
    tree: str
    node: str | None
    kind: Kind
    weight: float  # decisiveness among findings of the same kind (higher first)
    confidence: float
    title: str
    needles: tuple[str, ...]
    confirm: re.Pattern[str] | None = None  # must match the line (after a needle hit)
    exclude: re.Pattern[str] | None = None  # a match here vetoes the line (known noise)


def _re(pattern: str, flags: int = 0) -> re.Pattern[str]:
    return re.compile(pattern, flags)


SIGNATURES: tuple[Signature, ...] = (
    # --- hardware: the strongest causes; a lost GPU makes every collective fail -------------
    Signature(
        "xid", "hardware", "xid", "cause", 10.0, 0.9, "NVIDIA Xid error in the kernel log",
        ("NVRM: Xid", "NVRM: GPU at"),
        confirm=_re(r"NVRM: Xid \(PCI:[^)]*\):\s*\d+"),
    ),
    Signature(
        "gpu-fallen-off-bus", "hardware", "fallen-off-bus", "cause", 10.5, 0.95,
        "a GPU has fallen off the bus", ("fallen off the bus",),
    ),
    Signature(
        "ecc-uncorrectable", "hardware", "ecc", "cause", 9.5, 0.9,
        "uncorrectable ECC error on a GPU",
        ("uncorrectable ECC error", "ECC_UNCORRECTABLE", "ECCUncorrectable"),
    ),
    # --- launch-time configuration ---------------------------------------------------------
    Signature(
        "batch-size", "startup", "batch-size", "cause", 8.0, 0.85,
        "global batch size arithmetic does not work out",
        ("divisible", "train_batch_size is not equal to", "cannot split evenly into microbatches"),
        confirm=_re(r"batch.size.*divisible|divisible.*batch.size|train_batch_size is not equal|"
                    r"split evenly into microbatches", re.I),
    ),
    Signature(
        "divisibility", "startup", "divisibility", "cause", 8.0, 0.85,
        "model shape is not divisible by the parallel sizes",
        ("divisible",),
        confirm=_re(
            r"(heads|layers|query.groups|num_heads|hidden|attention|experts|is not divisible by|"
            r"must be divisible by)", re.I,
        ),
        exclude=_re(r"batch.size", re.I),
    ),
    Signature(
        "fused-kernels", "startup", "fused-kernels", "cause", 7.5, 0.85,
        "Megatron/apex fused CUDA kernels are missing",
        ("fused_layer_norm_cuda", "fused_mix_prec_layer_norm_cuda", "scaled_masked_softmax_cuda",
         "scaled_upper_triang_masked_softmax_cuda", "fused_weight_gradient_mlp_cuda",
         "No module named 'amp_C'"),
    ),
    Signature(
        "flash-attn", "startup", "flash-attn", "cause", 7.5, 0.85,
        "flash-attn is missing or built against another torch/CUDA",
        ("flash_attn",),
        confirm=_re(r"No module named|ImportError|undefined symbol|not found in your environment|"
                    r"DLL load failed|requires? .*flash_attn", re.I),
    ),
    Signature(
        "transformer-engine", "startup", "transformer-engine", "cause", 7.5, 0.85,
        "TransformerEngine is missing or does not match torch/CUDA",
        ("transformer_engine",),
        confirm=_re(r"No module named|ImportError|undefined symbol|cannot import name|"
                    r"RuntimeError|version", re.I),
    ),
    Signature(
        "import-error", "startup", "import-error", "cause", 6.0, 0.6,
        "a Python import failed at launch",
        ("No module named", "ImportError:", "cannot import name"),
        exclude=_re(r"flash_attn|transformer_engine|fused_layer_norm_cuda|"
                    r"fused_mix_prec_layer_norm_cuda|masked_softmax_cuda|amp_C"),
    ),
    Signature(
        "device-assert", "startup", "device-assert", "cause", 7.0, 0.85,
        "a device-side assert fired (usually an out-of-range index or label)",
        ("device-side assert",),
        exclude=_re(r"TORCH_USE_CUDA_DSA"),  # PyTorch's hint printed under every CUDA error
    ),
    Signature(
        "illegal-memory-access", "startup", "device-assert", "cause", 6.5, 0.6,
        "a CUDA kernel made an illegal memory access",
        ("illegal memory access",),
    ),
    # --- memory ------------------------------------------------------------------------------
    Signature(
        "cuda-oom", "oom", None, "cause", 9.0, 0.9, "CUDA out of memory",
        ("CUDA out of memory", "OutOfMemoryError", "CUDA error: out of memory",
         "Cuda failure 'out of memory'", "CUDA_ERROR_OUT_OF_MEMORY"),
    ),
    # --- numerics ------------------------------------------------------------------------------
    Signature(
        "nan-check", "loss-spike", "nan-loss", "cause", 6.8, 0.85,
        "a NaN/Inf was found in the loss or gradients",
        ("found NaN in", "found Inf in", "Loss is NaN", "loss is nan", "Loss is nan",
         "NaN or Inf found in input tensor", "Spiky loss"),
    ),
    Signature(
        "loss-scale-minimum", "loss-spike", "loss-scale-collapse", "cause", 6.9, 0.9,
        "the fp16 loss scale collapsed to its minimum",
        ("loss scale already at minimum",),
    ),
    Signature(
        "gradient-overflow", "loss-spike", "loss-scale-collapse", "context", 2.0, 0.4,
        "fp16 gradient overflow: steps skipped and the loss scale lowered",
        ("Gradient overflow", "OVERFLOW! Rank"),
    ),
    # --- network / launch --------------------------------------------------------------------
    Signature(
        "address-in-use", "multi-node", "address-in-use", "cause", 7.8, 0.9,
        "the rendezvous port is already in use",
        ("ddress already in use", "EADDRINUSE"),
        # NCCL's own bind retries during startup chatter are not a failure.
        exclude=_re(r"NCCL (INFO|WARN).*Call to bind failed"),
    ),
    Signature(
        "rendezvous", "multi-node", "rendezvous", "cause", 7.2, 0.85,
        "rendezvous / TCPStore connection failed",
        ("RendezvousConnectionError", "RendezvousTimeoutError", "RendezvousClosedError",
         "C10d store has failed", "client socket has timed out", "connect() timed out",
         "DistNetworkError", "Connection reset by peer"),
        exclude=_re(r"ddress already in use|EADDRINUSE"),
    ),
    Signature(
        "nccl-socket", "multi-node", "network-interface", "cause", 6.6, 0.75,
        "NCCL could not connect over the socket network (interface / routing)",
        ("socketStartConnect", "socketPollConnect", "socketProgress", "No interface found in",
         "no socket interface found", "Bootstrap : no socket", "socketFinalizeAccept"),
    ),
    Signature(
        "nccl-ib", "multi-node", "infiniband", "cause", 6.7, 0.8,
        "InfiniBand completion error (link flap, port down or peer gone)",
        # INFO chatter says "NET/IB : Using ..." on every start: only completions and WARNs count
        ("Got completion from peer", "NCCL WARN NET/IB"),
    ),
    Signature(
        "collective-mismatch", "nccl-hang", "collective-mismatch", "cause", 7.0, 0.85,
        "ranks entered different collectives (or different shapes/dtypes)",
        ("mismatch between collectives", "COLLECTIVE_TYPE_MISMATCH", "SIZE_OR_SYNTAX_MISMATCH",
         "COLLECTIVE_DTYPE_MISMATCH", "Input/output mismatch in the collective"),
    ),
    Signature(
        "lagging-ranks", "nccl-hang", "rank-behind", "cause", 6.4, 0.8,
        "the desync report names the lagging ranks",
        ("are the lagging ranks", "lagging/dead/mismatched ranks", "Not all ranks joining",
         "missing ranks:"),
    ),
    Signature(
        "nccl-unhandled-cuda", "nccl-hang", "nccl-error", "symptom", 5.5, 0.7,
        "NCCL: unhandled CUDA error", ("unhandled cuda error", "ncclUnhandledCudaError"),
    ),
    Signature(
        "nccl-system-error", "nccl-hang", "nccl-error", "symptom", 5.4, 0.7,
        "NCCL: unhandled system error (socket, IB or a remote peer)",
        ("unhandled system error", "ncclSystemError"),
    ),
    Signature(
        "nccl-internal-error", "nccl-hang", "nccl-error", "symptom", 5.3, 0.7,
        "NCCL: internal error", ("internal error - please report", "ncclInternalError"),
    ),
    Signature(
        "nccl-invalid-usage", "nccl-hang", "nccl-error", "cause", 5.6, 0.7,
        "NCCL: invalid usage / invalid argument",
        ("ncclInvalidUsage", "ncclInvalidArgument", "invalid usage (run with",
         "invalid argument (run with"),
    ),
    Signature(
        "nccl-remote-error", "nccl-hang", "nccl-error", "symptom", 5.0, 0.6,
        "NCCL: a remote process exited or the network failed",
        ("remote process exited or there was a network error", "ncclRemoteError"),
    ),
    Signature(
        "nccl-watchdog-timeout", "nccl-hang", "watchdog-timeout", "symptom", 4.0, 0.8,
        "NCCL watchdog timeout: a collective never finished",
        ("Watchdog caught collective operation timeout",),
    ),
    Signature(
        "nccl-watchdog-stuck", "nccl-hang", "watchdog-timeout", "symptom", 3.8, 0.6,
        "the NCCL watchdog itself hung (a CUDA/NCCL call blocked it)",
        ("watchdog got stuck", "Heartbeat monitor timed out"),
    ),
    Signature(
        "cuda-launch-failure", "hardware", "xid", "symptom", 3.5, 0.4,
        "CUDA reported an unspecified launch failure / unknown error (often a GPU fault)",
        ("unspecified launch failure", "CUDA error: unknown error"),
    ),
)

SIGNATURES_BY_ID = {sig.id: sig for sig in SIGNATURES}

# Training-progress lines the line readers parse (Megatron family, HF dicts and tqdm bars,
# DeepSpeed, Lightning/NeMo, torchtitan, DLLogger, plain "step N loss X").
PROGRESS_NEEDLES: tuple[str, ...] = (
    " iteration ", "'loss': ", "oss:", "oss =", "oss=", "Loss ", "loss ", "step=", "step:",
    "DLLL", "it/s", "s/it",
)
# Lines read besides the signatures whatever the format: checkpoint saves and intervals (for
# the rollback), framework hints (which flags the recovery may use), the rank comparison, and
# the start of training (an OOM before any progress line then means the config cannot fit).
SIDE_NEEDLES: tuple[str, ...] = (
    "save_interval", "save-interval", "save_steps", "log_interval", "log-interval",
    "logging_steps", "saved checkpoint", "Saving model checkpoint", "saving model to",
    "Saving checkpoint", "eepSpeed", "deepspeed", "megatron.core", "megatron/core",
    "Megatron-Core", "last enqueued", "Timeout at NCCL work", "WorkNCCL(",
    "before the start of training step", "***** Running training *****",
)
SERIES_NEEDLES = PROGRESS_NEEDLES + SIDE_NEEDLES
TRAINING_STARTED = ("before the start of training step", "***** Running training *****")


def all_needles() -> list[str]:
    """Every prefilter needle, longest first (so the alternation prefers the specific one)."""
    needles = {n for sig in SIGNATURES for n in sig.needles} | set(SERIES_NEEDLES)
    return sorted(needles, key=lambda n: (-len(n), n))


def side_needles() -> list[str]:
    """The needles when a block reader takes the progress lines (Megatron-style logs)."""
    needles = {n for sig in SIGNATURES for n in sig.needles} | set(SIDE_NEEDLES)
    return sorted(needles, key=lambda n: (-len(n), n))


def needle_index() -> dict[str, list[Signature]]:
    index: dict[str, list[Signature]] = {}
    for sig in SIGNATURES:
        for needle in sig.needles:
            index.setdefault(needle, []).append(sig)
    return index

# Findings derived from analyses rather than from one message.
DERIVED: tuple[Signature, ...] = (
    Signature("loss-nan", "loss-spike", "nan-loss", "cause", 6.7, 0.85,
              "the loss or gradient norm became NaN/inf", ()),
    Signature("loss-scale-collapse", "loss-spike", "loss-scale-collapse", "cause", 6.9, 0.85,
              "the fp16 loss scale collapsed toward 1", ()),
    Signature("loss-spike", "loss-spike", "spike-recovery", "cause", 6.0, 0.75,
              "the loss spiked far above its rolling baseline", ()),
    Signature("grad-norm-explosion", "loss-spike", "grad-norm-explosion", "cause", 5.8, 0.7,
              "the gradient norm exploded far above its rolling baseline", ()),
    Signature("overflow-burst", "loss-spike", "loss-scale-collapse", "cause", 6.2, 0.7,
              "a burst of fp16 overflows after the start-up search", ()),
    Signature("loss-divergence", "loss-spike", "spike-when", "cause", 5.9, 0.7,
              "the loss climbed steadily (slow divergence)", ()),
    Signature("step-time-regression", "slow-training", "where", "cause", 3.0, 0.6,
              "the time per iteration kept growing", ()),
    Signature("rank-mismatch", "nccl-hang", "collective-mismatch", "cause", 7.1, 0.85,
              "ranks timed out in different collectives", ()),
    Signature("rank-behind", "nccl-hang", "rank-behind", "cause", 5.2, 0.75,
              "a rank fell behind the others in the collective sequence", ()),
    Signature("rank-silent", "nccl-hang", "rank-behind", "cause", 5.1, 0.6,
              "some ranks never reported the watchdog timeout the others hit", ()),
)
SIGNATURES_BY_ID.update({sig.id: sig for sig in DERIVED})
