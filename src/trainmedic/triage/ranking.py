"""Cause over consequence: order findings so the root cause comes first, and say why.

When one rank runs out of memory the others later time out in NCCL; when a node loses a GPU
every collective fails. Order: cause kinds before symptom kinds before context, then the
earliest first occurrence (across ranks, where timestamps exist; file order otherwise), then
the signature's weight. The first cause gets a `why` that ties the later symptoms to it.
"""

from __future__ import annotations

from datetime import datetime

from trainmedic.triage import lineinfo
from trainmedic.triage.loss.model import LossAnalysis
from trainmedic.triage.report import NO_ORDER, Evidence, Finding
from trainmedic.triage.scanner import Hit, Scanner
from trainmedic.triage.signatures import KIND_ORDER, SIGNATURES_BY_ID

OVERFLOW_NOISE = 20  # fewer fp16 overflow skips than this is normal warm-up


def build_findings(scanner: Scanner) -> list[Finding]:
    hits = list(scanner.hits.values())
    year = next((h.first_time.year for h in hits if h.first_time and h.time_has_year), None)
    findings = [f for f in (_finding(h, scanner, year) for h in hits) if f is not None]
    findings += _rank_findings(scanner, year)
    findings += _loss_findings(scanner, year)
    findings.sort(key=_sort_key)
    findings = _merge_same_node(findings)
    _explain(findings)
    return findings


def _merge_same_node(findings: list[Finding]) -> list[Finding]:
    """Two signatures that lead to the same node are one finding (the earlier keeps the lead)."""
    by_link: dict[str, Finding] = {}
    out: list[Finding] = []
    for f in findings:
        lead = by_link.get(f.link)
        if lead is None:
            by_link[f.link] = f
            out.append(f)
            continue
        lead.count += f.count
        lead.ranks = sorted(set(lead.ranks) | set(f.ranks))
        lead.confidence = min(0.99, max(lead.confidence, f.confidence) + 0.05)
        lead.evidence = (lead.evidence + f.evidence)[:8]
        lead.details.setdefault("also", []).append({"signature": f.signature,
                                                    "summary": f.summary})
    return out


def _sort_key(f: Finding) -> tuple:
    t = f.first_time
    return (KIND_ORDER.get(f.kind, 3), t is None, t or datetime.min, -_weight(f), f.first_order)


def _weight(f: Finding) -> float:
    sig = SIGNATURES_BY_ID.get(f.signature)
    return sig.weight if sig else 0.0


def _time(hit: Hit, year: int | None) -> datetime | None:
    t = hit.first_time
    if t is not None and not hit.time_has_year and year is not None:
        try:
            t = t.replace(year=year)
        except ValueError:
            return None
    return t


def _evidence(hit: Hit) -> list[Evidence]:
    return [Evidence(f, line, text, rank) for f, line, text, rank in hit.evidence]


def _finding(hit: Hit, scanner: Scanner, year: int | None) -> Finding | None:
    sig = hit.sig
    loss = scanner.loss.analysis
    details = dict(hit.details)
    confidence = sig.confidence
    summary = sig.title
    if sig.id == "gradient-overflow":
        if hit.count < OVERFLOW_NOISE and not loss.loss_scale_collapsed:
            return None  # normal fp16 warm-up
        summary = f"{hit.count} fp16 gradient overflows (steps skipped)"
    elif sig.id == "cuda-oom":
        summary = _oom_summary(hit)
    elif sig.id == "xid":
        codes = ", ".join(str(c) for c in details.get("codes", []))
        summary = f"Xid {codes} in the kernel log" if codes else sig.title
    ranks = sorted(hit.ranks)
    if ranks:
        summary = f"{_who(ranks)}: {summary}"
    if hit.count > 1:
        summary += f" ({hit.count} lines)"
    if hit.time_inferred:
        details["time_inferred"] = True
    if hit.first_time is not None and not hit.time_has_year and year is None:
        details["time_has_year"] = False
    return Finding(
        signature=sig.id, tree=sig.tree, node=hit.node, confidence=confidence,
        summary=summary, kind=sig.kind, count=hit.count, ranks=ranks,
        first_time=_time(hit, year), evidence=_evidence(hit), details=details,
        first_order=hit.first_order,
    )


def _who(ranks: list[int]) -> str:
    if len(ranks) == 1:
        return f"rank {ranks[0]}"
    if len(ranks) <= 6:
        return "ranks " + ", ".join(map(str, ranks))
    return f"{len(ranks)} ranks ({ranks[0]}..{ranks[-1]})"


def _gib(mib: float | None) -> str:
    if mib is None:
        return "?"
    return f"{mib / 1024:.2f} GiB" if mib >= 1024 else f"{mib:.2f} MiB"


def _oom_summary(hit: Hit) -> str:
    d = hit.details
    parts = []
    if "tried_mib" in d:
        parts.append(f"tried {_gib(d['tried_mib'])}")
    if "total_mib" in d:
        parts.append(f"of {_gib(d['total_mib'])}")
    if "free_mib" in d:
        parts.append(f"{_gib(d['free_mib'])} free")
    if "unallocated_mib" in d:
        parts.append(f"{_gib(d['unallocated_mib'])} reserved but unallocated")
    text = "CUDA out of memory" + (f" ({', '.join(parts)})" if parts else "")
    if hit.node == "fragmentation":
        text += ": the cache is fragmented, try expandable_segments:True"
    elif hit.node == "first-iteration":
        text += ": training started but no step finished, the configuration does not fit"
    elif hit.node == "other-process":
        pids = ", ".join(str(o["pid"]) for o in d.get("other_processes", []))
        text += f": another process (pid {pids}) holds GPU memory"
    return text


def _loss_findings(scanner: Scanner, year: int | None) -> list[Finding]:
    """Findings every loss run derives (spikes, NaN runs, scale, trends), with evidence."""
    runs = scanner.loss.runs
    out = []
    for loss, evidence in runs:
        found = _run_findings(scanner, loss, evidence, year)
        if len(runs) > 1:
            name = next((n.removeprefix("read from ") for n in loss.notes
                         if n.startswith("read from ")), "text logs")
            for f in found:
                f.summary = f"{name}: {f.summary}"
        out += found
    return out


def _run_findings(scanner: Scanner, loss: LossAnalysis, evidence: dict,
                  year: int | None) -> list[Finding]:
    files = {name: i for i, name in enumerate(scanner.files)}
    made: list[tuple[str, str, int, dict]] = []
    if loss.spikes:
        made.append(("loss-spike", *_spike_summary(loss)))
    if loss.nan_runs or loss.grad_norm_nan_count:
        made.append(("loss-nan", _nan_summary(loss), max(1, len(loss.nan_runs)),
                     {"nan_iterations": loss.nan_iterations, "nan_points": loss.nan_points}))
    if loss.grad_explosions:
        g = loss.grad_explosions[0]
        ratio = f", {g.value / g.baseline:.0f}x its recent level {g.baseline:g}" if g.baseline \
            else ""
        made.append(("grad-norm-explosion",
                     f"gradient norm {g.value:g} at step {g.step}{ratio}"
                     + (f" ({len(loss.grad_explosions)} such steps)"
                        if len(loss.grad_explosions) > 1 else ""), len(loss.grad_explosions),
                     {"step": g.step}))
    collapse = [e for e in loss.scale_events if e.kind == "scale-collapse"]
    bursts = [e for e in loss.scale_events if e.kind == "overflow-burst"]
    if collapse:
        made.append(("loss-scale-collapse", _scale_summary(loss, collapse), len(collapse),
                     {"recovery": loss.recoveries[0].to_dict()} if loss.recoveries else {}))
    if bursts:
        b = bursts[0]
        made.append(("overflow-burst",
                     f"{sum(e.overflows for e in bursts)} fp16 overflows in {len(bursts)} "
                     f"burst(s) after the start-up search (first at step {b.start}: loss "
                     f"scale {b.scale_from:g} -> {b.scale_to:g})", len(bursts), {}))
    if loss.divergence is not None:
        made.append(("loss-divergence", _divergence_summary(loss), 1, {}))
    if loss.step_time is not None:
        t = loss.step_time
        made.append(("step-time-regression",
                     f"time per iteration grew from {t.before:.0f} ms to {t.after:.0f} ms "
                     f"({t.ratio:.1f}x) from step {t.start} to {t.end} (trend z={t.z:.1f})",
                     1, {}))
    out = []
    for sig_id, summary, count, details in made:
        sig = SIGNATURES_BY_ID[sig_id]
        ev = evidence.get(sig_id, [])
        first_time = None
        has_year = True
        if ev:
            first_time, has_year = lineinfo.line_time_year(ev[0][2])
        if first_time is not None and not has_year and year is not None:
            try:
                first_time = first_time.replace(year=year)
            except ValueError:
                first_time = None
        out.append(Finding(
            signature=sig.id, tree=sig.tree, node=sig.node, confidence=sig.confidence,
            summary=summary, kind=sig.kind, count=count, ranks=[], first_time=first_time,
            evidence=[Evidence(f, line, scanner.redact(text.strip())[:2000], None)
                      for f, line, text in ev[:5]],
            details=dict(details),
            first_order=(files.get(ev[0][0], NO_ORDER[0]), ev[0][1]) if ev else NO_ORDER,
        ))
    return out


def _spike_summary(loss: LossAnalysis) -> tuple[str, int, dict]:
    from trainmedic.triage.loss.recovery import for_spike

    sp = loss.spikes[0]
    ratio = sp.peak_value / sp.baseline if sp.baseline else float("inf")
    state = f"recovered at {sp.end}" if sp.end is not None else "never recovered"
    covers = (f" (the line averages steps {sp.first_bad}-{sp.start})"
              if loss.log_interval > 1 and sp.first_bad is not None and sp.first_bad < sp.start
              else "")
    more = f"; {len(loss.spikes)} spikes in all" if len(loss.spikes) > 1 else ""
    rec = for_spike(loss, sp)
    how = rec.text + (f": {rec.command}" if rec.command else "")
    summary = (f"loss spiked at step {sp.start}{covers} to {sp.peak_value:.4g} "
               f"({ratio:.1f}x the recent level {sp.baseline:.4g}), {state}{more}: {how}")
    return summary, len(loss.spikes), {"recovery": rec.to_dict(), "spike": sp.to_dict()}


def _scale_summary(loss: LossAnalysis, collapse: list) -> str:
    e = collapse[0]
    steps = f" between steps {e.start} and {e.end}" if e.end else ""
    text = (f"fp16 loss scale fell from {e.scale_from:g} to {e.scale_to:g}{steps} "
            f"({e.overflows} overflows after the start-up search): gradients keep overflowing")
    if loss.divergence is not None or any(s.end is None for s in loss.spikes):
        text += "; the loss rose meanwhile: a loss-scaler fault, not a data problem"
    rec = next((r for r in loss.recoveries if r.action == "fix-scaler"), None)
    if rec is not None and rec.command:
        text += f" ({rec.command})"
    return text


def _divergence_summary(loss: LossAnalysis) -> str:
    d = loss.divergence
    assert d is not None
    text = (f"the loss climbed steadily from {d.before:.4g} at step {d.start} to {d.after:.4g} "
            f"by step {d.end} (+{(d.ratio - 1) * 100:.0f}%, trend z={d.z:.1f}) with no single "
            "jump")
    rec = loss.recoveries[0] if loss.recoveries else None
    if rec is not None and rec.action == "fix-scaler":
        text += ": the fp16 loss scale fell at the same time, a loss-scaler fault"
    else:
        ckpt = loss.checkpoint_before(d.start)
        text += (f": roll back to the checkpoint of step {ckpt} and lower the learning rate"
                 if ckpt is not None else ": lower the learning rate and check the data")
    return text


def _nan_summary(loss: LossAnalysis) -> str:
    parts = []
    runs = loss.nan_runs
    if runs:
        first = runs[0]
        exact = all(r.exact for r in runs)
        iters = (f"{loss.nan_iterations} NaN/inf iterations" if exact else
                 f"NaN/inf in {loss.nan_iterations} iterations or fewer")
        parts.append(f"{iters} at {sum(r.points for r in runs)} logged points in {len(runs)} "
                     f"run(s), first at step {first.start}")
    vanished = loss.missing_loss_steps
    if vanished:
        parts.append(f"{vanished} Megatron iteration lines lost their loss field (Megatron "
                     "omits a NaN average)")
    if loss.grad_norm_nan_count:
        parts.append(f"grad norm NaN/inf at {loss.grad_norm_nan_count} logged points")
        if loss.last_zero_loss_with_nan_grad:
            parts.append("loss logged as 0.0 with a NaN grad norm: the weights are already NaN "
                         "(HF Trainer's logging_nan_inf_filter hides the NaN loss)")
    return "; ".join(parts) or "the loss became NaN/inf"


def _rank_findings(scanner: Scanner, year: int | None) -> list[Finding]:
    out = []
    ids = {"mismatch": "rank-mismatch", "behind": "rank-behind", "silent": "rank-silent"}
    for v in scanner.ranks.verdicts(scanner.known_ranks):
        if v.kind not in ids:
            continue
        sig = SIGNATURES_BY_ID[ids[v.kind]]
        out.append(Finding(
            signature=sig.id, tree=sig.tree, node=sig.node, confidence=sig.confidence,
            summary=v.summary, kind=sig.kind, count=len(v.ranks),
            # derived from the symptoms' lines: no time of its own, so a timed cause stays first
            ranks=v.ranks, first_time=None,
            evidence=[Evidence(f, line, scanner.redact(text), None)
                      for f, line, text in v.evidence],
            details={"verdict": v.kind},
        ))
    return out


SHORT = {
    "nccl-watchdog-timeout": "NCCL watchdog timeouts", "nccl-watchdog-stuck": "watchdog hangs",
    "nccl-system-error": "NCCL system errors", "nccl-internal-error": "NCCL internal errors",
    "nccl-unhandled-cuda": "NCCL CUDA errors", "nccl-remote-error": "NCCL remote errors",
    "cuda-launch-failure": "CUDA launch failures",
}


def _file(f: Finding) -> str | None:
    return f.evidence[0].file if f.evidence else None


def _cause_of(symptom: Finding, causes: list[Finding]) -> Finding:
    """The cause a symptom most likely follows: same log file first, then the earliest cause
    that precedes it in time, else the overall first cause."""
    # rank verdicts quote the symptoms' own lines: they never count as "same file"
    same = [c for c in causes if _file(c) == _file(symptom) and not c.signature.startswith("rank-")]
    if same:
        return same[0]
    if symptom.first_time:
        before = [c for c in causes if c.first_time and c.first_time <= symptom.first_time]
        if before:
            return before[0]
    shared = [c for c in causes if set(c.ranks) & set(symptom.ranks)]
    return shared[0] if shared else causes[0]


def _explain(findings: list[Finding]) -> None:
    """Fill `why`: each cause explains the symptoms that follow it; each symptom points back."""
    if not findings:
        return
    top = findings[0]
    if top.kind != "cause":
        top.why = ("no cause-type message was found; this is the earliest symptom — look for the "
                   "rank or node that printed nothing (or crashed) just before it")
        return
    causes = [f for f in findings if f.kind == "cause"]
    linked: dict[int, list[Finding]] = {}
    for f in findings:
        if f.kind == "symptom":
            cause = _cause_of(f, causes)
            linked.setdefault(id(cause), []).append(f)
            f.why = f"likely a consequence of {cause.signature} ({cause.link}), which came first"
    for i, c in enumerate(causes):
        c.why = _cause_why(c, linked.get(id(c), []), first=(i == 0))
    for f in findings:
        if f.kind == "context":
            f.why = "context: often harmless on its own"
        if f.signature == "rank-silent" and set(f.ranks) & set(top.ranks):
            f.why = (f"{_who(sorted(set(f.ranks) & set(top.ranks)))} is where "
                     f"{SIGNATURES_BY_ID[top.signature].title} happened: it never reached the "
                     "collective the others waited in")


def _cause_why(c: Finding, symptoms: list[Finding], *, first: bool) -> str:
    when = _clock(c.first_time)
    reason = (f"{_who(c.ranks) if c.ranks else 'the log'} shows "
              f"{SIGNATURES_BY_ID[c.signature].title}" + (f" at {when}" if when else ""))
    if not symptoms:
        return reason + ("; cause-type messages rank before symptoms, earliest first" if first
                         else "; another cause-type message, after the first")
    s = symptoms[0]
    others = [r for r in s.ranks if r not in c.ranks]
    gap = "before"
    if c.first_time and s.first_time and s.first_time >= c.first_time:
        gap = f"{_span(s.first_time - c.first_time)} before"
    elif c.first_time and s.first_time:
        return reason + "; the symptoms below are most likely its consequence"
    on = ""
    if others:
        on = f" on {'the other ' if c.ranks else ''}{len(others)} rank" + (
            "s" if len(others) != 1 else "")
    what = SHORT.get(s.signature, SIGNATURES_BY_ID[s.signature].title)
    return f"{reason}, {gap} the {what}{on}: those are its consequence"


def _clock(t: datetime | None) -> str:
    return t.strftime("%H:%M:%S") if t else ""


def _span(delta) -> str:
    s = int(delta.total_seconds())
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min"
    return f"{s // 3600} h {s % 3600 // 60} min"
