"""Named hooks: the few things about a log line that data in a tree cannot express.

A signature in a tree names a hook (`hook: cuda-oom`); the hook reads numbers from the line
(OOM sizes, Xid codes, the ranks a desync report names), concludes an *outcome* that the
signature's `routes` map to a node (`outcome: fragmented -> fragmentation`), merges what repeated
lines add, and writes the finding's summary. Which node an outcome leads to, the needles, the
weights and every message stay in the YAML; `trainmedic lint` checks each outcome a route names
against the outcomes its hook declares (`Hook.outcomes` in `HOOKS` here).
"""

from __future__ import annotations

import re
import signal
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from trainmedic.textsafe import inert_line
from trainmedic.triage import oom_contexts, optimizer_share, smi_rows

MiB = float


class HitView(Protocol):
    """What a hook may read of the aggregated matches of its signature."""

    count: int
    details: dict[str, Any]
    node: str | None


@dataclass
class LineResult:
    outcome: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    ranks: list[int] = field(default_factory=list)  # ranks the line names (not who printed it)


@dataclass(frozen=True)
class LineContext:
    """What the scanner knows about the source when the line is read."""

    started: bool  # a "training started" line was seen in this source
    progressed: bool  # a progress (iteration/loss) line was seen in this source
    evaluating: bool = False  # an evaluation began and no training progress line came since


@dataclass(frozen=True)
class Hook:
    name: str
    outcomes: frozenset[str]
    read: Callable[[str, LineContext], LineResult]
    merge: Callable[[dict[str, Any], dict[str, Any]], None] | None = None
    summary: Callable[[HitView, Any], str | None] | None = None
    keep: Callable[[HitView, Any], bool] | None = None
    # A message a terminal or a paste may have broken over several lines: the phrases its
    # continuation lines hold (so the prefilter keeps them), and whether the text read so far
    # may go on. The scanner joins the next lines that hold one and reads the whole again.
    wraps: tuple[str, ...] = ()
    unfinished: Callable[[str], bool] | None = None


# ---- cuda-oom: the caching allocator's message and its numbers ------------------------------

# A size starts where a number starts (not inside a run of digits) and is bounded: `\d+` tried
# from every digit of a long run made one line quadratic (seconds on 8 KB).
_SIZE = r"(?<![\d.])(\d{1,15}(?:\.\d{1,6})?) ?(bytes|KiB|MiB|GiB|TiB)"
_UNITS = {"bytes": 1 / 2**20, "KiB": 1 / 1024, "MiB": 1.0, "GiB": 1024.0, "TiB": 1024.0**2}
_OOM_FIELDS = {
    "tried_mib": re.compile(r"Tried to allocate " + _SIZE),
    "total_mib": re.compile(r"total capaci?ty of " + _SIZE + r"|" + _SIZE + r" total capacity"),
    "free_mib": re.compile(r"of which " + _SIZE + r" is free|" + _SIZE + r" free\b"),
    "unallocated_mib": re.compile(_SIZE + r" is reserved by PyTorch but unallocated"),
    "allocated_mib": re.compile(_SIZE + r" is allocated by PyTorch|" + _SIZE
                                + r" already allocated"),
    "reserved_mib": re.compile(_SIZE + r" reserved in total by PyTorch"),
}
_OOM_OTHER = re.compile(r"Process (\d{1,9}) has " + _SIZE + r" memory in use")
_OOM_GPU = re.compile(r"\bGPU (\d{1,9})\b")


def _mib(groups: tuple[str | None, ...]) -> MiB | None:
    vals = [g for g in groups if g is not None]
    if len(vals) < 2:
        return None
    return round(float(vals[0]) * _UNITS[vals[1]], 2)


def oom_numbers(text: str) -> dict[str, Any]:
    """The sizes a CUDA OOM message states (MiB), the GPU and the other processes it lists."""
    d: dict[str, Any] = {}
    for key, rx in _OOM_FIELDS.items():
        m = rx.search(text)
        if m:
            val = _mib(m.groups())
            if val is not None:
                d[key] = val
    if "unallocated_mib" not in d and "reserved_mib" in d and "allocated_mib" in d:
        d["unallocated_mib"] = round(d["reserved_mib"] - d["allocated_mib"], 2)
    gpu = _OOM_GPU.search(text)
    if gpu:
        d["gpu"] = int(gpu.group(1))
    others = [(int(m.group(1)), _mib(m.groups()[1:])) for m in _OOM_OTHER.finditer(text)]
    if others:
        d["other_processes"] = [{"pid": pid, "mib": mib} for pid, mib in others]
    return d


FRAGMENTED_SHARE = 0.05  # reserved but unallocated: below this share of the GPU it is slack


def oom_outcome(text: str, d: dict[str, Any]) -> str | None:
    """What the numbers say: another process holds the GPU, the cache is fragmented, or the
    request cannot fit even in all free and cached memory (then it is not fragmentation)."""
    total = d.get("total_mib") or 0.0
    unalloc = d.get("unallocated_mib") or 0.0
    tried = d.get("tried_mib") or 0.0
    free = d.get("free_mib")
    others = [(o["pid"], o["mib"]) for o in d.get("other_processes", [])]
    own = d.get("allocated_mib") or 0.0
    if "this process has" not in text and others:
        # Before PyTorch 2.2 the process itself is listed as "Process PID" too: drop the largest.
        others = sorted(others, key=lambda o: o[1] or 0.0)[:-1]
    foreign = sum(o[1] or 0.0 for o in others)
    if oom_contexts.rank_contexts([o[1] or 0.0 for o in others]):
        return "rank-contexts"
    if oom_contexts.unsized_rank_contexts([o[1] or 0.0 for o in others],
                                          "this process has 0 bytes memory in use" in text, own):
        return "rank-contexts"
    if others and foreign >= max(1024.0, 0.1 * total) and not _same_process(own, others):
        return "other-process"
    if tried and free is not None and free + unalloc < tried:
        return "does-not-fit"  # even a perfectly defragmented cache could not serve it
    # the tree's "large": more than the allocator's normal slack of a few percent of the GPU
    # (without the capacity in the message: a GiB); the request fits in free + unallocated,
    # but not in the free memory alone (then the cache is not what stood in the way)
    fits_free = bool(tried) and free is not None and free >= tried
    if not fits_free and unalloc >= (FRAGMENTED_SHARE * total if total else 1024.0):
        return "fragmented"
    return None


def _same_process(own: float, others: list[tuple[int, float | None]]) -> bool:
    """In a container the process may be listed under another PID namespace's number: one
    "other" process holding about what PyTorch itself allocated is this process."""
    if len(others) != 1 or not own:
        return False
    mib = others[0][1] or 0.0
    return own <= mib <= own * 1.15 + 1024.0


def _read_oom(text: str, ctx: LineContext) -> LineResult:
    d = oom_numbers(text)
    outcome = oom_outcome(text, d)
    if outcome in (None, "does-not-fit") and ctx.evaluating:
        outcome = "evaluating"  # the oom tree's "when": during evaluation
    elif outcome is None and ctx.started and not ctx.progressed:
        outcome = "no-step-finished"  # training began but no step finished: it cannot fit
    return LineResult(outcome, d)


# The fields of the allocator's message after "Tried to allocate", old form and new: a message
# hard-wrapped at 80 columns (a tmux pane, a notebook, a paste) carries its sizes on the lines
# below (https://github.com/deepspeedai/DeepSpeedExamples/issues/389).
OOM_WRAPS = ("total capacity", "already allocated", "reserved in total by PyTorch",
             "memory in use", "allocated by PyTorch", "but unallocated")
# what only the end of the message holds: the sizes that decide fragmentation, or the advice
_OOM_ENDS = ("reserved in total by PyTorch", "but unallocated", "max_split_size_mb",
             "PYTORCH_CUDA_ALLOC_CONF")


def _oom_unfinished(text: str) -> bool:
    # (or the exception's name alone, its message on the next line: a logger or a paste that
    # breaks after the colon, https://github.com/huggingface/trl/issues/3172)
    return ("Tried to allocate" in text and not any(end in text for end in _OOM_ENDS)) or (
        text.rstrip().endswith("OutOfMemoryError:"))


def _keep_oom(hit: HitView, view: Any) -> bool:
    """The exception's name alone (routed to the tree's first question, `message`) is left out
    when the allocator's own message is in the log too: that answers the question."""
    return hit.node != "message" or not any(
        other is not hit and getattr(other, "sig", None) is getattr(hit, "sig", None)
        for other in view.hits.values())


def _merge_oom(old: dict[str, Any], new: dict[str, Any]) -> None:
    if not old.get("tried_mib") and new:
        old.clear()
        old.update(new)


def gib(mib: float | None) -> str:
    if mib is None:
        return "?"
    return f"{mib / 1024:.2f} GiB" if mib >= 1024 else f"{mib:.2f} MiB"


_OOM_ENDINGS = {
    "fragmentation": ": the cache is fragmented, try expandable_segments:True",
    "first-iteration": ": training started but no step finished, the configuration does not fit",
    "checkpoint-save": ": while saving a checkpoint (gathering the full state on one GPU)",
    "eval-oom": ": during evaluation",
    "device-zero": (": several processes of one small size share this GPU,"
                    " the other ranks' CUDA contexts"),
}


def _oom_summary(hit: HitView, _view: Any) -> str:
    d = hit.details
    parts = []
    if "tried_mib" in d:
        parts.append(f"tried {gib(d['tried_mib'])}")
    if "total_mib" in d:
        parts.append(f"of {gib(d['total_mib'])}")
    if "free_mib" in d:
        parts.append(f"{gib(d['free_mib'])} free")
    if "unallocated_mib" in d:
        parts.append(f"{gib(d['unallocated_mib'])} reserved but unallocated")
    text = "CUDA out of memory" + (f" ({', '.join(parts)})" if parts else "")
    if hit.node == "other-process":
        pids = ", ".join(str(o["pid"]) for o in d.get("other_processes", []))
        return text + f": another process (pid {pids}) holds GPU memory"
    if d.get("tried_mib") and d.get("free_mib") is not None and hit.node != "fragmentation" and (
            d["free_mib"] + (d.get("unallocated_mib") or 0.0) < d["tried_mib"]):
        text += ": free plus cached memory is less than the request, so it does not fit"
    return text + _OOM_ENDINGS.get(hit.node or "", "")


# ---- xid: the code and the GPU of a kernel Xid line -----------------------------------------

_XID = re.compile(r"NVRM: Xid \(PCI:([^)]{0,64})\):\s*(\d{1,9})(?!\d)")


def _read_xid(text: str, _ctx: LineContext) -> LineResult:
    m = _XID.search(text)
    if m is None:
        return LineResult(None, {"codes": [], "pci": []})
    return LineResult(None, {"codes": [int(m.group(2))], "pci": [inert_line(m.group(1))]})


def _merge_lists(old: dict[str, Any], new: dict[str, Any]) -> None:
    for key, values in new.items():
        bucket = old.setdefault(key, [])
        for value in values:
            if value not in bucket and len(bucket) < 32:
                bucket.append(value)


def _xid_summary(hit: HitView, _view: Any) -> str | None:
    codes = ", ".join(str(c) for c in hit.details.get("codes", []))
    return f"Xid {codes} in the kernel log" if codes else None


# ---- named-ranks: ranks a desync report or flight-recorder analysis names --------------------

_NAMED_RANKS = re.compile(r"missing ranks: \{([\d, ]+)\}|ranks \[([\d, ]+)\] are the lagging")


def _read_named_ranks(text: str, _ctx: LineContext) -> LineResult:
    m = _NAMED_RANKS.search(text)
    if m is None:
        return LineResult()
    # a rank has at most 9 digits: int() of a longer run raises (and is no rank anyway)
    named = [int(r) for r in re.findall(r"\d+", m.group(1) or m.group(2)) if len(r) <= 9]
    return LineResult(None, {"named_ranks": named}, named)


# ---- overflow-burst: fp16 overflow lines are warm-up noise unless they keep coming -----------

OVERFLOW_NOISE = 20  # fewer fp16 overflow skips than this is the scaler's normal start-up search


def _keep_overflow(hit: HitView, view: Any) -> bool:
    return hit.count >= OVERFLOW_NOISE or bool(view.loss.analysis.loss_scale_collapsed)


def _keep_overflow_companion(hit: HitView, view: Any) -> bool:
    """A NaN/Inf logged no more often than the fp16 scaler skipped a step, while those skips are
    only its start-up search (the overflow finding itself is left out), is that search."""
    skips = [other for other in view.hits.values()
             if getattr(getattr(other, "sig", None), "hook", None) is HOOKS["overflow-burst"]]
    if not skips:
        return True
    count = sum(other.count for other in skips)
    return hit.count > count or any(_keep_overflow(other, view) for other in skips)


def _overflow_summary(hit: HitView, _view: Any) -> str:
    return f"{hit.count} fp16 gradient overflows (steps skipped)"


# ---- nan-line: a NaN on a progress line, unless it was an fp16 scaler's first overflow -----

def _keep_nan_line(hit: HitView, view: Any) -> bool:
    """One NaN grad norm on the first logged point, finite after it (the loss analysis calls
    it the scaler's start-up: the step was skipped) is no finding; anything more is."""
    return not (hit.count == 1 and view.loss.analysis.startup_grad_overflow)


# ---- in-trouble: a warning that is the cause only when the run is in trouble ---------------

def _keep_in_trouble(hit: HitView, view: Any) -> bool:
    """A warning a healthy run also prints (ZeRO-3's "Invalidate trace cache": dense models with
    data-dependent control flow print it and go on) leads only next to a failure: another
    cause or symptom, an error no signature knows, or a user who says the job froze."""
    if view.reported == "hang" or view.errors.uncovered:
        return True
    return any(other is not hit and other.sig.kind in ("cause", "symptom")
               for other in view.hits.values())


def _keep_slow_or_trouble(hit: HitView, view: Any) -> bool:
    """A transport notice (NCCL falling back to TCP sockets) costs only cross-node bandwidth: a
    single-node run prints it and is fine. It leads when the user says the run is slow, and
    where `in-trouble` would let it."""
    return view.reported == "slow" or _keep_in_trouble(hit, view)


# ---- when-slow: a performance hint that is the cause only of a run reported slow ------------

def _keep_when_slow(_hit: HitView, view: Any) -> bool:
    """A hint a healthy run also prints (Lightning's "does not have many workers which may be a
    bottleneck") answers the slow-training tree only for a user who says the run is slow."""
    return view.reported == "slow"


# ---- child-failed: torchrun's "Root Cause (first observed failure)" block --------------------

def exit_meaning(code: int | None) -> str:
    """What a worker's exit code says, in words (negative: killed by that signal)."""
    if code is None:
        return "exit code unknown"
    if code == -9:
        return "SIGKILL: the host's OOM killer or the scheduler ended it"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        extra = {-6: " (an abort: C++ exception, NCCL watchdog, failed assert)",
                 -7: " (a bus error: often /dev/shm too small)",
                 -11: " (a segmentation fault in native code)",
                 -15: " (stopped from outside: scancel, a time limit, another rank's failure)"}
        return f"killed by {name}{extra.get(code, '')}"
    return "a Python exception: its traceback is above the summary" if code == 1 else (
        f"exit code {code}")


def _child_summary(_hit: HitView, view: Any) -> str | None:
    cause = view.launcher.root_cause
    if cause is None:
        return None
    where = []
    if cause.rank is not None:
        where.append(f"rank {cause.rank}" + (f" (local {cause.local_rank})"
                                             if cause.local_rank is not None else ""))
    if cause.host:
        where.append(f"on {cause.host}")
    who = " ".join(where) or "a worker"
    if cause.exitcode is None:
        return f"the launcher's summary: {who} failed first (its exit code is cut off)"
    return (f"the launcher's summary: {who} failed first, exitcode {cause.exitcode} "
            f"({exit_meaning(cause.exitcode)})")


def _keep_sigkill(_hit: HitView, view: Any) -> bool:
    """A -9 is the cause unless the launcher names another first failure and lists the -9s
    as the workers it stopped afterwards (torchrun escalates SIGTERM to SIGKILL)."""
    root = view.launcher.root_cause
    killed = view.launcher.killed_ranks
    return root is None or root.exitcode == -9 or not killed or root.rank in killed


# ---- global-shape: a distributed checkpoint's "loaded" vs "expected" global shape -----------

_SHAPES = re.compile(r"for loaded \(+(?:torch\.Size\(\[)?([\d, ]+)\]?\)+ and expected "
                     r"\(+(?:torch\.Size\(\[)?([\d, ]+)")


def _read_global_shape(text: str, _ctx: LineContext) -> LineResult:
    """`sliced` when the shapes differ in one dimension by a whole factor (a tensor-parallel
    slice of the same tensor), not in the model's dimensions."""
    m = _SHAPES.search(text)
    if m is None:
        return LineResult()
    loaded = _dims(m.group(1))
    expected = _dims(m.group(2))
    if loaded is None or expected is None:
        return LineResult()
    details = {"loaded": loaded, "expected": expected}
    if len(loaded) != len(expected):
        return LineResult(None, details)
    diff = [(a, b) for a, b in zip(loaded, expected, strict=True) if a != b]
    if len(diff) == 1:
        small, big = sorted(diff[0])
        if small and big % small == 0:
            return LineResult("sliced", details)
    return LineResult(None, details)


def _dims(text: str) -> list[int] | None:
    """A shape's dimensions; None when one is too long to be a dimension (int() would raise)."""
    parts = [x for x in text.replace(" ", "").split(",") if x]
    if any(len(x) > 15 for x in parts):
        return None
    return [int(x) for x in parts]


def _read_nothing(_text: str, _ctx: LineContext) -> LineResult:
    return LineResult()


# ---- gpu-process-rows: nvidia-smi's process table (smi_rows) --------------------------------

def _read_smi_row(text: str, _ctx: LineContext) -> LineResult:
    return LineResult(None, smi_rows.read_row(text))


# ---- optimizer-share: the optimizer step's share of a timer line (optimizer_share) -----------

def _read_optimizer_share(text: str, _ctx: LineContext) -> LineResult:
    return LineResult(None, optimizer_share.read_line(text))


HOOKS: dict[str, Hook] = {h.name: h for h in (
    Hook("cuda-oom", frozenset({"other-process", "rank-contexts", "fragmented", "does-not-fit",
                                "no-step-finished", "evaluating"}),
         _read_oom, _merge_oom, _oom_summary, _keep_oom, wraps=OOM_WRAPS,
         unfinished=_oom_unfinished),
    Hook("xid", frozenset(), _read_xid, _merge_lists, _xid_summary),
    Hook("named-ranks", frozenset(), _read_named_ranks, _merge_lists),
    Hook("overflow-burst", frozenset(), _read_nothing, None, _overflow_summary, _keep_overflow),
    Hook("overflow-companion", frozenset(), _read_nothing, None, None,
         _keep_overflow_companion),
    Hook("child-failed", frozenset(), _read_nothing, None, _child_summary),
    Hook("sigkill", frozenset(), _read_nothing, None, None, _keep_sigkill),
    Hook("nan-line", frozenset(), _read_nothing, None, None, _keep_nan_line),
    Hook("in-trouble", frozenset(), _read_nothing, None, None, _keep_in_trouble),
    Hook("slow-or-trouble", frozenset(), _read_nothing, None, None, _keep_slow_or_trouble),
    Hook("when-slow", frozenset(), _read_nothing, None, None, _keep_when_slow),
    Hook("global-shape", frozenset({"sliced"}), _read_global_shape),
    Hook("gpu-process-rows", frozenset(), _read_smi_row, _merge_lists,
         lambda hit, _view: smi_rows.summary(hit.details),
         lambda hit, _view: smi_rows.keep(hit.details)),
    Hook("optimizer-share", frozenset(), _read_optimizer_share, _merge_lists,
         lambda hit, _view: optimizer_share.summary(hit.details),
         lambda hit, _view: optimizer_share.keep(hit.details)),
)}
