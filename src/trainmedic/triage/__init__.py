"""Log triage: from training logs to the tree and node to continue from.

Public API (used by the CLI, the TUI paste box and incident reports):
- `triage_paths(paths)`: files, folders of per-rank logs (recursive), `-` for stdin, `.gz`;
- `triage_text(text, name="<pasted>")`: one error line or a whole traceback;
both return a `TriageReport` (`findings` most decisive first, `loss`, `ranks`, `to_dict()`).
The signatures come from the trees: the built-in ones, plus the folders in `trees`.
`symptom` (one of `SYMPTOMS`: hang, crash, slow, diverged, not-learning) is what the user saw:
findings that fit it rank first, and it gives the finding when nothing in the log does
(`trainmedic.triage.symptom`); without it the result is what the log alone says.
Raises `trainmedic.errors.UsageError` for unreadable input, an unknown symptom, or when no input
was readable as a log.
"""

from __future__ import annotations

from collections.abc import Sequence

from trainmedic.triage.report import Evidence, Finding, TriageReport


def _finish(scanner, skipped: list[tuple[str, str]] | None = None, *, symptom=None,
            sources=()) -> TriageReport:
    from trainmedic.textsafe import inert_line
    from trainmedic.triage.ranking import build_findings, stuck_ranks

    scanner.finish()
    root = scanner.launcher.root_cause
    loss = scanner.loss.finish()
    scanner.reported = symptom.name if symptom is not None else None
    findings = build_findings(scanner)
    use = None
    if symptom is not None:
        from trainmedic.triage import symptom as reported

        tails = reported.tails_of(sources, scanner.redact)
        findings, use = reported.apply(findings, symptom, tails, errors=scanner.errors.count)
    return TriageReport(
        findings=findings,
        loss=loss,
        ranks=scanner.ranks.to_dict(scanner.known_ranks, stuck_ranks(scanner)),
        files=scanner.files,
        candidate_lines=scanner.candidate_lines,
        # names from os.walk and the reasons (which may quote them): shown, so made inert
        skipped=[(inert_line(name), inert_line(why)) for name, why in skipped or []],
        root_cause=root.to_dict() if root else None,
        errors=scanner.errors.count,
        notes=list(scanner.notes),
        symptom=use,
    )


def _signatures(trees: Sequence[str]):
    from trainmedic.triage.signatures import forest_signatures

    return forest_signatures(tuple(str(t) for t in trees))


def _symptom(name: str | None):
    if name is None:
        return None
    from trainmedic.triage.symptom import check

    return check(name)


def triage_paths(paths: list[str], *, use_grep: bool = True,
                 trees: Sequence[str] = (), symptom: str | None = None) -> TriageReport:
    from trainmedic.errors import UsageError
    from trainmedic.triage.scanner import Scanner
    from trainmedic.triage.sources import expand_paths, unreadable_reason

    if not paths:
        raise UsageError("no log given (a file, a folder, or - for stdin)")
    reported = _symptom(symptom)
    skipped: list[tuple[str, str]] = []
    sources = expand_paths(paths, skipped)
    scanner = Scanner(use_grep=use_grep, signatures=_signatures(trees))
    given = set(paths)
    read = []
    for source in sources:
        why = unreadable_reason(source)
        if why is not None:
            if source.name in given and len(sources) == 1:
                raise UsageError(f"{source.name}: {why}")
            skipped.append((source.name, why))
            continue
        scanner.scan(source)
        read.append(source)
    if not scanner.files:
        listed = "; ".join(f"{name}: {why}" for name, why in skipped[:5])
        raise UsageError(f"nothing readable as a log ({listed})")
    return _finish(scanner, skipped, symptom=reported, sources=read)


def triage_text(text: str, name: str = "<pasted>", *, trees: Sequence[str] = (),
                symptom: str | None = None) -> TriageReport:
    from trainmedic.triage.scanner import Scanner
    from trainmedic.triage.sources import Source

    reported = _symptom(symptom)
    scanner = Scanner(use_grep=False, signatures=_signatures(trees))
    source = Source(name=name, data=text.encode("utf-8", "replace"))
    scanner.scan(source)
    return _finish(scanner, symptom=reported, sources=[source])


__all__ = ["Evidence", "Finding", "TriageReport", "triage_paths", "triage_text"]
