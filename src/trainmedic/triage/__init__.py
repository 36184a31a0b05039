"""Log triage: from training logs to the tree and node to continue from.

Public API (used by the CLI, the TUI paste box and incident reports):
- `triage_paths(paths)`: files, folders of per-rank logs (recursive), `-` for stdin, `.gz`;
- `triage_text(text, name="<pasted>")`: one error line or a whole traceback;
both return a `TriageReport` (`findings` most decisive first, `loss`, `ranks`, `to_dict()`).
Raises `trainmedic.errors.UsageError` for unreadable input.
"""

from __future__ import annotations

from trainmedic.triage.report import Evidence, Finding, TriageReport


def _finish(scanner) -> TriageReport:
    from trainmedic.triage.ranking import build_findings

    loss = scanner.loss.finish()
    return TriageReport(
        findings=build_findings(scanner),
        loss=loss,
        ranks=scanner.ranks.to_dict(scanner.known_ranks),
        files=scanner.files,
        candidate_lines=scanner.candidate_lines,
        notes=list(scanner.notes),
    )


def triage_paths(paths: list[str], *, use_grep: bool = True) -> TriageReport:
    from trainmedic.errors import UsageError
    from trainmedic.triage.scanner import Scanner
    from trainmedic.triage.sources import expand_paths

    if not paths:
        raise UsageError("no log given (a file, a folder, or - for stdin)")
    scanner = Scanner(use_grep=use_grep)
    for source in expand_paths(paths):
        scanner.scan(source)
    return _finish(scanner)


def triage_text(text: str, name: str = "<pasted>") -> TriageReport:
    from trainmedic.triage.scanner import Scanner
    from trainmedic.triage.sources import Source

    scanner = Scanner(use_grep=False)
    scanner.scan(Source(name=name, data=text.encode("utf-8", "replace")))
    return _finish(scanner)


__all__ = ["Evidence", "Finding", "TriageReport", "triage_paths", "triage_text"]
