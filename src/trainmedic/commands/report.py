"""`trainmedic report [SESSION] [-o FILE] [--repo PATH] [--probe] [--json] [--list]`."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from trainmedic.errors import UsageError
from trainmedic.textsafe import inert_line

if TYPE_CHECKING:
    from trainmedic.probes.base import ProbeResult
    from trainmedic.saved_walks import Skipped


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("session", nargs="?", metavar="SESSION",
                        help="walk id, id prefix or saved file (default: the latest walk that "
                             "reached a fix)")
    parser.add_argument("-o", "--output", metavar="FILE", help="write the report to FILE")
    parser.add_argument("--repo", metavar="PATH",
                        help="framework checkout whose commit and dirty flag go in the report")
    parser.add_argument("--probe", action="store_true",
                        help="run the probes now and report their results (replacing saved ones)")
    parser.add_argument("--json", action="store_true", help="the report's data as JSON")
    parser.add_argument("--list", action="store_true", help="list saved walks, newest first")
    parser.add_argument("--force", action="store_true",
                        help="with -o or --bundle: replace an existing file that trainmedic did "
                             "not write")
    parser.add_argument("--bundle", metavar="FILE",
                        help="write a redacted support bundle (.tar.gz): report, probes, "
                             "nvidia-smi -q, environment, versions, kernel Xid/AER, triage")
    parser.add_argument("--log", action="append", metavar="PATH",
                        help="with --bundle: triage these logs into it (repeatable)")


def _warn_skipped(skipped: Iterable[Skipped]) -> None:
    for item in skipped:
        print(f"trainmedic: warning: {inert_line(str(item))}", file=sys.stderr)


def _unreadable(skipped: list[Skipped]) -> None:
    """The walks folder itself cannot be read (a state folder made by `sudo trainmedic`): that
    is the whole answer, one line, not a warning followed by "no saved walks"."""
    from trainmedic.saved_walks import unreadable_folder

    folder = unreadable_folder(skipped)
    if folder is not None:
        raise UsageError(folder.error())


def _list(as_json: bool) -> int:
    from trainmedic.saved_walks import list_walks

    walks, skipped = list_walks()
    _unreadable(skipped)
    _warn_skipped(skipped)
    rows = [{"id": w.id, "tree": w.record.tree, "updated": w.record.updated,
             "finished": w.record.finished, "steps": len(w.record.steps), "path": str(w.path)}
            for w in walks]
    if as_json:
        from trainmedic.commands.outputs import stamped

        json.dump(stamped("report", {"walks": rows, "skipped": [
            {"path": str(s.path), "reason": s.reason} for s in skipped]}), sys.stdout, indent=2)
        print()
    elif not rows:
        print("no saved walks", file=sys.stderr)
    for row in [] if as_json else rows:  # saved files are data: a crafted one holds anything
        done = "fix reached" if row["finished"] else "unfinished"
        print(inert_line(f"{row['id']}  {row['tree']}  {row['updated']}  ")
              + f"{row['steps']} step(s), {done}")
    return 0


def run(args: argparse.Namespace) -> int:
    if args.bundle:
        from trainmedic.commands.report_bundle import run_bundle

        return run_bundle(args)
    if args.log:
        raise UsageError("--log goes with --bundle")
    if args.list:
        return _list(args.json)
    from trainmedic.export.report import build_report, render_report
    from trainmedic.saved_walks import find_walk
    from trainmedic.trees import load_forest

    saved, skipped = find_walk(args.session, prefer_finished=True)
    if saved is None:
        _unreadable(skipped)
    _warn_skipped(skipped)
    if saved is None:
        if args.session:
            raise UsageError(f"no saved walk {inert_line(repr(args.session))} (see "
                             "`trainmedic report --list`)")
        raise UsageError("no saved walks yet: run `trainmedic walk TREE` first")
    repo = None
    if args.repo:
        from trainmedic.export.repoinfo import repo_info

        repo = repo_info(args.repo)
    fresh: list[ProbeResult] = []
    if args.probe:  # with what the walk knows: its launch command, for the memory estimate
        from trainmedic.probes.runner import run_probes

        fresh = run_probes(None, saved.record.probe_context())
    forest = load_forest(args.trees)  # a report must work even while some tree has errors
    if args.json:
        from trainmedic.commands.outputs import stamped

        data = stamped("report", {"generated_by": "trainmedic report",
                                  **build_report(saved.record, forest, repo=repo,
                                                 fresh_probes=fresh)})
        text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    else:
        text = render_report(saved.record, forest, repo=repo, fresh_probes=fresh)
    if args.output:
        from trainmedic.safefile import write_output

        # 0600: a report holds host names, the launch command and log lines
        write_output(Path(args.output), text, force=args.force, private=True)
        print(f"wrote {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    if not args.session:  # say which walk, at 3 a.m. the newest is not always the one meant
        which = "the latest that reached a fix" if saved.record.finished else \
            "the latest; none reached a fix"
        print(f"trainmedic: report of walk {saved.id} ({which}; see --list)", file=sys.stderr)
    return 0
