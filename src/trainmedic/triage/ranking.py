"""Cause over consequence: order findings so the root cause comes first, and say why.

When one rank runs out of memory the others later time out in NCCL; when a node loses a GPU
every collective fails. Order: cause kinds before symptom kinds, then a guess, then context;
within a kind the earliest first occurrence (across ranks, where timestamps exist; file order
otherwise), then the signature's weight. The first cause gets a `why` that ties the later
symptoms to it. A log that holds an error no signature knows gets a finding marked as a guess.
"""

from __future__ import annotations

from datetime import datetime

from trainmedic.redact import redact_text
from trainmedic.textsafe import inert_line
from trainmedic.triage import lineinfo
from trainmedic.triage.analyses import RANK_ANALYSES, WHOLE_LOG, loss_outcome, whole_log
from trainmedic.triage.loss.model import LossAnalysis
from trainmedic.triage.report import NO_ORDER, Evidence, Finding
from trainmedic.triage.scanner import Hit, Scanner
from trainmedic.triage.signatures import KIND_ORDER
from trainmedic.triage.unmatched import ErrorLine

GUESS_CONFIDENCE = 0.25


def build_findings(scanner: Scanner) -> list[Finding]:
    hits = list(scanner.hits.values())
    year = next((h.first_time.year for h in hits if h.first_time and h.time_has_year), None)
    findings = [f for f in (_finding(h, scanner, year) for h in hits) if f is not None]
    findings += _rank_findings(scanner)
    findings += _loss_findings(scanner, year)
    findings += _whole_log_findings(scanner)
    guess = _guess(scanner, findings)
    if guess is not None:
        findings.append(guess)
    weights = {s.id: s.weight for s in scanner.signatures.signatures}
    findings.sort(key=lambda f: _sort_key(f, weights))
    findings = _merge_same_node(findings)
    _explain(findings, scanner)
    return findings


def _merge_same_node(findings: list[Finding]) -> list[Finding]:
    """Two signatures that lead to the same node are one finding (the earlier keeps the lead)."""
    by_link: dict[str, Finding] = {}
    out: list[Finding] = []
    for f in findings:
        lead = by_link.get(f.link)
        if lead is None or f.guess or lead.guess:
            by_link.setdefault(f.link, f)
            out.append(f)
            continue
        lead.count += f.count
        lead.ranks = sorted(set(lead.ranks) | set(f.ranks))
        lead.hosts = sorted(set(lead.hosts) | set(f.hosts))
        lead.confidence = min(0.99, max(lead.confidence, f.confidence) + 0.05)
        lead.evidence = (lead.evidence + f.evidence)[:8]
        lead.details.setdefault("also", []).append({"signature": f.signature,
                                                    "summary": f.summary})
    return out


def _sort_key(f: Finding, weights: dict[str, float]) -> tuple:
    t = f.first_time
    return (KIND_ORDER.get(f.kind, 3), t is None, t or datetime.min,
            -weights.get(f.signature, 0.0), f.first_order)


def _time(hit: Hit, year: int | None) -> datetime | None:
    t = hit.first_time
    if t is not None and not hit.time_has_year and year is not None:
        try:
            t = t.replace(year=year)
        except ValueError:
            return None
    return t


def _evidence(hit: Hit) -> list[Evidence]:
    return [Evidence(f, line, text, rank, host) for f, line, text, rank, host in hit.evidence]


def _finding(hit: Hit, scanner: Scanner, year: int | None) -> Finding | None:
    sig = hit.sig
    hook = sig.hook
    if hook is not None and hook.keep is not None and not hook.keep(hit, scanner):
        return None  # e.g. a few fp16 overflows: the scaler's normal start-up search
    details = dict(hit.details)
    summary = sig.title
    if hook is not None and hook.summary is not None:
        summary = hook.summary(hit, scanner) or summary
    ranks = sorted(hit.ranks)
    if ranks:
        summary = f"{_who(ranks)}{' and more' if hit.more_ranks else ''}: {summary}"
    if hit.count > 1:
        summary += f" ({hit.count} lines)"
    if hit.time_inferred:
        details["time_inferred"] = True
    if hit.first_time is not None and not hit.time_has_year and year is None:
        details["time_has_year"] = False
    return Finding(
        signature=sig.id, tree=hit.tree, node=hit.node, confidence=sig.confidence,
        summary=summary, kind=sig.kind, count=hit.count, ranks=ranks,
        first_time=_time(hit, year), evidence=_evidence(hit), details=details,
        first_order=hit.first_order, hosts=sorted(hit.hosts),
    )


def _who(ranks: list[int]) -> str:
    if len(ranks) == 1:
        return f"rank {ranks[0]}"
    if len(ranks) <= 6:
        return "ranks " + ", ".join(map(str, ranks))
    return f"{len(ranks)} ranks ({ranks[0]}..{ranks[-1]})"


def stuck_ranks(scanner: Scanner) -> set[int]:
    """Ranks whose own watchdog reported being blocked in a NCCL/CUDA call (the signatures of
    nccl-hang#watchdog-stuck): part of the hang, never "silent"."""
    return {r for hit in scanner.hits.values()
            if (hit.tree, hit.node) == ("nccl-hang", "watchdog-stuck") for r in hit.ranks}


def _rank_findings(scanner: Scanner) -> list[Finding]:
    out = []
    for v in scanner.ranks.verdicts(scanner.known_ranks, stuck_ranks(scanner)):
        sig = scanner.signatures.derived.get(RANK_ANALYSES.get(v.kind, ""))
        if sig is None:
            continue
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
    for name, summary, count, details in made:
        sig = scanner.signatures.derived.get(name)
        if sig is None:
            continue  # no tree declares this analysis (a user tree replaced it)
        tree, node = _by_outcome(sig, loss_outcome(name, loss), (sig.tree, sig.node))
        ev = evidence.get(name, [])
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
            signature=sig.id, tree=tree, node=node, confidence=sig.confidence,
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


def _by_outcome(sig, outcome: str | None,
                default: tuple[str, str | None]) -> tuple[str, str | None]:
    """Where an analysis' conclusion leads, by the signature's `outcome` routes."""
    if outcome is not None:
        for route in sig.routes:
            if route.outcome == outcome:
                return route.tree, route.node
    return default


def _whole_log_findings(scanner: Scanner) -> list[Finding]:
    out = []
    for name in WHOLE_LOG:
        sig = scanner.signatures.derived.get(name)
        if sig is None:
            continue
        found = whole_log(name, scanner)
        if found is None:
            continue
        summary, outcome, details, lines = found
        tree, node = _by_outcome(sig, outcome, (sig.tree, sig.node))
        out.append(Finding(
            signature=sig.id, tree=tree, node=node, confidence=sig.confidence,
            summary=summary, kind=sig.kind, count=1, first_time=None,
            evidence=[Evidence(f, line, scanner.redact(text)[:2000]) for f, line, text in lines],
            details=dict(details),
        ))
    return out


# ---- an error no signature knows --------------------------------------------------------

def _guess(scanner: Scanner, findings: list[Finding]) -> Finding | None:
    """When no cause explains the log but it holds an error, say so: the last exception and
    where it was raised, who printed it, and the tree its words point to, as a guess."""
    if any(f.kind == "cause" for f in findings):
        return None
    errors = scanner.errors.uncovered
    if not errors and not findings and scanner.errors.last_covered is not None:
        errors = [scanner.errors.last_covered]
    if not errors:
        return None
    root = scanner.launcher.root_cause
    chosen = _pick(errors, root.rank if root else None)
    rank = chosen.rank if chosen.rank is not None else (root.rank if root else None)
    host = chosen.host or (root.host if root and root.rank == rank else None)
    who = " on ".join(x for x in (f"rank {rank}" if rank is not None else "", host or "") if x)
    tree: str = "triage"
    node: str | None = "died"
    score = 0.0
    worded = False
    if chosen.kind in ("exception", "nccl", "cuda", "crash", "logged"):
        # an exit code or a kill has no words to go by; a message does
        words = f"{chosen.text} {chosen.frame or ''}"
        guessed, score = scanner.signatures.guess_tree(words)
        if guessed is not None:
            tree, node, worded = guessed, scanner.signatures.guess_node(words, guessed), True
    frame = inert_line(redact_text(chosen.frame)) if chosen.frame else None
    if chosen.kind == "exit" and root is not None:
        from trainmedic.triage.hooks import exit_meaning

        code = ("its exit code is cut off" if root.exitcode is None else
                f"exitcode {root.exitcode}: {exit_meaning(root.exitcode)}")
        summary = (f"guess: the launcher says {who or 'a worker'} failed first ({code}), and "
                   "no message in these logs says why: read that rank's own output")
    else:
        # The summary quotes the log: secrets redacted before the cut (no half secret is left),
        # control characters shown as escapes (`!r` escapes every unprintable character).
        text = redact_text(chosen.text)
        text = text if len(text) <= 200 else text[:197] + "..."
        where = f" (raised at {frame})" if frame else ""
        summary = (f"guess: no known signature for {text!r}{where}"
                   + (f", printed by {who}" if who else "")
                   + (f"; its words point to the {tree} tree" if worded and node is None
                      else f"; its words point to {tree}#{node}, as in past incidents with "
                      "these words" if worded else
                      "; read the last lines of the rank that failed first"))
    evidence = [Evidence(e.file, e.line, scanner.redact(e.text)[:2000], e.rank, e.host)
                for e in [chosen, *[e for e in errors if e is not chosen][:3]]]
    return Finding(
        signature="unrecognised-error", tree=tree, node=node,
        confidence=GUESS_CONFIDENCE if score < 1.0 else GUESS_CONFIDENCE + 0.1,
        summary=summary, kind="guess", count=len(errors),
        ranks=[rank] if rank is not None else [], evidence=evidence,
        details={"error_kind": chosen.kind, "raised_at": frame},
        hosts=[host] if host else [],
    )


def _pick(errors: list[ErrorLine], root_rank: int | None) -> ErrorLine:
    """The root-cause rank's error if the launcher named one; else an exception before a bare
    exit or kill; else the first source's."""
    if root_rank is not None:
        for e in errors:
            if e.rank == root_rank:
                return e
    for e in errors:
        if e.kind == "exception":
            return e
    return errors[0]


# ---- why ---------------------------------------------------------------------------------

def _file(f: Finding) -> str | None:
    return f.evidence[0].file if f.evidence else None


def _cause_of(symptom: Finding, causes: list[Finding]) -> Finding:
    """The cause a symptom most likely follows: same log file first, then the earliest cause
    that precedes it in time, else the overall first cause."""
    # rank verdicts quote the symptoms' own lines: they never count as "same file"
    same = [c for c in causes if _file(c) == _file(symptom) and "verdict" not in c.details]
    if same:
        return same[0]
    if symptom.first_time:
        before = [c for c in causes if c.first_time and c.first_time <= symptom.first_time]
        if before:
            return before[0]
    shared = [c for c in causes if set(c.ranks) & set(symptom.ranks)]
    return shared[0] if shared else causes[0]


def _explain(findings: list[Finding], scanner: Scanner) -> None:
    """Fill `why`: each cause explains the symptoms that follow it; each symptom points back."""
    if not findings:
        return
    titles = {s.id: s.title for s in scanner.signatures.signatures}
    shorts = {s.id: s.short or s.title for s in scanner.signatures.signatures}
    top = findings[0]
    for f in findings:
        if f.kind == "context":
            f.why = "context: the launcher's or the run's summary, not a cause by itself"
        elif f.guess:
            f.why = ("no signature knows this error; the tree is a guess from its words — "
                     "read the traceback it points to, then walk from there")
    if top.kind != "cause":
        if top.kind == "symptom":
            top.why = ("no cause-type message was found; this is the earliest symptom — look "
                       "for the rank or node that printed nothing (or crashed) just before it")
        return
    causes = [f for f in findings if f.kind == "cause"]
    linked: dict[int, list[Finding]] = {}
    for f in findings:
        if f.kind == "symptom":
            cause = _cause_of(f, causes)
            linked.setdefault(id(cause), []).append(f)
            f.why = f"likely a consequence of {cause.signature} ({cause.link}), which came first"
    for i, c in enumerate(causes):
        c.why = _cause_why(c, linked.get(id(c), []), titles, shorts, first=(i == 0))
    for f in findings:
        if f.details.get("verdict") == "silent" and set(f.ranks) & set(top.ranks):
            f.why = (f"{_who(sorted(set(f.ranks) & set(top.ranks)))} is where "
                     f"{titles.get(top.signature, top.summary)} happened: it never reached the "
                     "collective the others waited in")


def _cause_why(c: Finding, symptoms: list[Finding], titles: dict[str, str],
               shorts: dict[str, str], *, first: bool) -> str:
    when = _clock(c.first_time)
    reason = (f"{_who(c.ranks) if c.ranks else 'the log'} shows "
              f"{titles.get(c.signature, c.summary)}" + (f" at {when}" if when else ""))
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
    what = shorts.get(s.signature, s.summary)
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
