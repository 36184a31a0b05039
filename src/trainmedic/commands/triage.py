"""`trainmedic triage LOG ... [--json]`: name what went wrong and the tree node to continue from.

Exit status: 1 when it reports a finding that `--fail-on` counts (by default any finding;
`--fail-on cause` only a cause, `--fail-on symptom` a cause, symptom or guess), 0 when it reports
none that counts (so a log with symptoms only exits 0 under `--fail-on cause`), 2 when nothing in
the input was readable as a log; with no finding, one line says how to tell triage what the user
saw. A log with an error no signature knows is never called clean: it gets a finding marked as a
guess. The signatures come from the trees, user trees under `--trees`
included. Sources read only in part (binary data, a decompression bomb) and user-tree signatures
left out (an unsafe regex) are warned about, and a run that found nothing but had such a warning
exits 2. `--symptom` is what the user saw (the entry tree's first question): findings that fit
it rank first, a clear cause in the log still leads, and when nothing in the log fits, the answer
gives the finding (marked as such); one line says how it was used. Never imports Textual; rich
only when printing for a human.
"""

from __future__ import annotations

import argparse
import json
import sys

from trainmedic.triage.symptom import NAMES as SYMPTOMS  # what the user saw: hang, crash, ...

MAX_SHOWN = 8
FAIL_ON = ("cause", "symptom", "any")

# which finding kinds make the exit status 1, per --fail-on
_FAILING = {"cause": {"cause"}, "symptom": {"cause", "symptom", "guess"},
            "any": {"cause", "symptom", "guess", "context"}}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("logs", nargs="+", metavar="LOG",
                        help="log files, folders of per-rank logs (recursive), .gz, or - for stdin")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument("--all", action="store_true", help="show every finding and evidence line")
    parser.add_argument("--no-grep", action="store_true",
                        help="use the pure-Python prefilter even where grep is available")
    parser.add_argument("--fail-on", choices=FAIL_ON, default="any",
                        help="exit 1 only for a cause; for a cause, symptom or guess; or for any "
                             "finding, context included (default: any)")
    parser.add_argument("--symptom", choices=SYMPTOMS,
                        help="what you saw: the job froze (hang), died (crash), crawls (slow), "
                             "its loss blew up (diverged) or does not learn (not-learning); "
                             "findings that fit rank first, and it leads where the log is silent")


def run(args: argparse.Namespace) -> int:
    from trainmedic.triage import triage_paths

    report = triage_paths(list(args.logs), use_grep=not args.no_grep,
                          trees=list(getattr(args, "trees", []) or []),
                          symptom=getattr(args, "symptom", None))
    if args.json:
        from trainmedic.commands.outputs import stamped

        json.dump(stamped("triage", report.to_dict()), sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    else:
        _print_human(report, show_all=args.all)
    for note in report.notes:  # made inert by the scanner
        print(f"trainmedic: warning: {note}", file=sys.stderr)
    failing = _FAILING[getattr(args, "fail_on", "any")]
    if any(f.kind in failing for f in report.findings):
        return 1
    return 2 if report.notes and not report.findings else 0


def _print_human(report, *, show_all: bool) -> None:
    from rich.console import Console
    from rich.markup import escape

    console = Console(highlight=False, soft_wrap=True)
    files = len(report.files)
    for name, why in report.skipped:
        console.print(f"[dim]skipped {escape(name)}: {escape(why)}[/]")
    if report.symptom is not None:
        console.print(f"[dim]{escape(report.symptom.summary)}[/]")
    if not report.findings:
        console.print(f"[green]No known failure signature[/] in {files} file(s) "
                      f"({report.candidate_lines} candidate lines read).")
        _print_loss(console, report, escape)
        # a quiet hang or a slow run reads like a healthy log: only the user can tell (with a
        # symptom given there is always a finding, the answer's own)
        console.print("[dim]A quiet hang or a slow run reads like a healthy log: if the job "
                      "froze, crawled or stopped learning, say so with --symptom "
                      f"{'|'.join(n for n in SYMPTOMS if n != 'crash')}[/]")
        console.print("Continue with: [bold]trainmedic walk triage[/]")
        return
    shown = report.findings if show_all else report.findings[:MAX_SHOWN]
    for i, f in enumerate(shown, 1):
        style = "bold red" if i == 1 else ("yellow" if f.kind == "symptom" else "bold")
        fmt = "%m-%d %H:%M:%S" if f.details.get("time_has_year") is False else "%Y-%m-%d %H:%M:%S"
        when = f"  [dim]{f.first_time.strftime(fmt)}[/]" if f.first_time else ""
        style = "yellow" if f.guess else style  # its summary starts "guess:"
        console.print(f"[{style}]{i}. {escape(f.summary)}[/]{when}")
        hosts = f"  [dim]host {escape(', '.join(f.hosts[:4]))}[/]" if f.hosts else ""
        console.print(f"   [cyan]{f.link}[/]  confidence {f.confidence:.0%}  "
                      f"[dim]{f.kind}[/]{hosts}")
        if f.why:
            console.print(f"   [dim]why:[/] {escape(f.why)}")
        for ev in f.evidence if show_all else f.evidence[:2]:
            text = ev.text if len(ev.text) <= 160 else ev.text[:157] + "..."
            console.print(f"   [dim]{escape(ev.file)}:{ev.line}:[/] {escape(text)}")
    if len(report.findings) > len(shown):
        console.print(f"[dim]... {len(report.findings) - len(shown)} more (--all)[/]")
    root = report.root_cause
    if root:
        who = " ".join(x for x in (f"rank {root['rank']}" if root.get("rank") is not None else "",
                                   f"on {root['host']}" if root.get("host") else "") if x)
        console.print(f"[dim]launcher: first failure {escape(who or 'of a worker')}, "
                      f"exitcode {root.get('exitcode')} ({escape(root['file'])}:{root['line']})[/]")
    _print_loss(console, report, escape)
    console.print(f"Continue with: [bold]{report.findings[0].walk_command}[/]")


def _print_loss(console, report, escape) -> None:
    loss = report.loss
    if not loss.count:
        return
    from trainmedic.triage.sparkline import sparkline

    line = sparkline([v for _s, v in loss.points], width=60)
    what = ", ".join(x for x in (loss.source, loss.framework if loss.framework != loss.source
                                 else None) if x)
    every = f", every {loss.log_interval} steps" if loss.log_interval > 1 else ""
    console.print(f"loss ({what}, {loss.count} points{every}, steps {loss.first_step}.."
                  f"{loss.last_step}): {escape(line)}")
    if loss.recoveries:
        rec = loss.recoveries[0]
        how = f"{rec.text}: {rec.command}" if rec.command else rec.text
        console.print(f"way back ({rec.framework}): {escape(how)}")
        for note in rec.notes:
            console.print(f"  [dim]{escape(note)}[/]")
