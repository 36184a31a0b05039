"""`trainmedic walk TREE[#node]`: the TUI, `--plain` prompts, or `--answers 1,3,2`.

Parsing imports nothing heavy: Textual is imported only when the TUI actually starts.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from trainmedic.commands import NO_TERMINAL_NOTE, add_job_arguments, interactive_terminal
from trainmedic.errors import UsageError

if TYPE_CHECKING:
    from trainmedic.trees import Forest
    from trainmedic.walk import WalkSession


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", nargs="?", metavar="TREE[#NODE]",
                        help="tree id, or tree#node to start at a node")
    parser.add_argument("--plain", action="store_true",
                        help="numbered prompts on stdin/stdout instead of the TUI")
    parser.add_argument("--answers", metavar="N,N,...",
                        help="walk without prompting (1-based answer numbers); print path and fix")
    parser.add_argument("--resume", nargs="?", const="", default=None, metavar="ID",
                        help="continue the last saved walk, or the one named")
    parser.add_argument("--no-probes", action="store_true",
                        help="do not run probes to suggest answers")
    add_job_arguments(parser)
    parser.add_argument("--json", action="store_true",
                        help="with --answers: print the walk as JSON")


def _resume(forest: Forest, name: str) -> WalkSession:
    from trainmedic.saved_walks import find_walk, unreadable_folder
    from trainmedic.textsafe import inert_line
    from trainmedic.walk import resume

    saved, skipped = find_walk(name or None)
    folder = unreadable_folder(skipped)
    if saved is None and folder is not None:
        raise UsageError(folder.error())
    for item in skipped:
        print(f"trainmedic: warning: {item}", file=sys.stderr)
    if saved is None:
        raise UsageError(f"no saved walk {inert_line(repr(name))}" if name
                         else "no saved walk to resume")
    session, note = resume(forest, saved.record)
    if note:
        print(f"trainmedic: warning: {note}", file=sys.stderr)
    return session


def _job_hints(args: argparse.Namespace) -> None:
    """--python/--pid reach the probes as the variables every front end reads."""
    import os

    if args.python:
        os.environ["TRAINMEDIC_PYTHON"] = args.python
    if args.pid:
        os.environ["TRAINMEDIC_JOB_PID"] = args.pid


def run(args: argparse.Namespace) -> int:
    from trainmedic.trees import load_forest_skipping
    from trainmedic.walk import WalkSession

    if args.resume is not None and args.target:
        raise UsageError("give either a TREE or --resume, not both")
    if args.resume is None and not args.target:
        raise UsageError("name a tree to walk (e.g. `trainmedic walk oom`) or use --resume")
    answers = None
    if args.answers is not None:
        from trainmedic.plain import parse_answers

        answers = parse_answers(args.answers)
    if args.json and answers is None:
        raise UsageError("--json goes with --answers")
    forest, warnings = load_forest_skipping(args.trees)
    for line in warnings:  # a broken user tree must not stop a walk during an incident
        print(f"trainmedic: warning: {line}", file=sys.stderr)
    session = (_resume(forest, args.resume) if args.resume is not None
               else WalkSession(forest, args.target))

    from trainmedic.walk import default_probe_runner

    _job_hints(args)
    runner = None if args.no_probes else default_probe_runner()
    if answers is not None:
        from trainmedic.commands.outputs import stamped
        from trainmedic.plain import run_answers

        return run_answers(session, answers, sys.stdout, as_json=args.json, probe_runner=runner,
                           stamp=lambda data: stamped("walk", data))
    if args.plain or not interactive_terminal():
        from trainmedic.plain import run_plain

        if not args.plain:
            print(NO_TERMINAL_NOTE, file=sys.stderr)
        return run_plain(session, sys.stdin, sys.stdout, probe_runner=runner)
    from trainmedic.tui.start import run_walk

    return run_walk(forest, session, probes=not args.no_probes)
