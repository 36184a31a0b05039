"""`trainmedic walk TREE[#node]`: the TUI, `--plain` prompts, or `--answers 1,3,2`.

Parsing imports nothing heavy: Textual is imported only when the TUI actually starts.
"""

from __future__ import annotations

import argparse
import os
import sys

from trainmedic.errors import UsageError


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
    parser.add_argument("--json", action="store_true",
                        help="with --answers: print the walk as JSON")


def _resume(forest, name: str):
    from trainmedic.state import find_walk
    from trainmedic.walk import WalkSession

    saved, skipped = find_walk(name or None)
    for item in skipped:
        print(f"trainmedic: warning: {item}", file=sys.stderr)
    if saved is None:
        raise UsageError(f"no saved walk '{name}'" if name else "no saved walk to resume")
    return WalkSession.from_dict(forest, saved.data)


def _wants_plain(args: argparse.Namespace) -> bool:
    if args.plain:
        return True
    dumb = os.environ.get("TERM", "") == "dumb"
    return dumb or not (sys.stdin.isatty() and sys.stdout.isatty())


def run(args: argparse.Namespace) -> int:
    from trainmedic.trees import load_forest_or_fail
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
    forest = load_forest_or_fail(args.trees)
    session = (_resume(forest, args.resume) if args.resume is not None
               else WalkSession(forest, args.target))

    if answers is not None:
        from trainmedic.plain import run_answers

        return run_answers(session, answers, sys.stdout, as_json=args.json)
    if _wants_plain(args):
        from trainmedic.plain import load_probe_runner, run_plain

        runner = None if args.no_probes else load_probe_runner()
        return run_plain(session, sys.stdin, sys.stdout, probe_runner=runner)
    from trainmedic.tui.launch import run_walk

    return run_walk(forest, session, probes=not args.no_probes)
