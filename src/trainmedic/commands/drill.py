"""`trainmedic drill [--tree T] [--case NAME] [--seed N] [--plain] | --progress [--json]`.

Parsing imports nothing heavy: the cases, the trees and triage load when a drill starts, Textual
only when the app opens.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from trainmedic.commands import interactive_terminal
from trainmedic.errors import UsageError
from trainmedic.textsafe import inert_line

if TYPE_CHECKING:
    from trainmedic.drills.cases import DrillCase
    from trainmedic.drills.progress import DrillProgress


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tree", metavar="TREE",
                        help="drills of one area: a tree id, or 'healthy' (nothing is wrong)")
    parser.add_argument("--case", metavar="NAME",
                        help="one drill by name, e.g. oom/<file name> (for a class or a retry)")
    parser.add_argument("--seed", type=int, metavar="N",
                        help="choose the drill reproducibly (the same N, the same drill)")
    parser.add_argument("--plain", action="store_true",
                        help="numbered prompts on stdin/stdout instead of the app")
    parser.add_argument("--progress", action="store_true",
                        help="drills done and the score by area")
    parser.add_argument("--json", action="store_true", help="with --progress: print JSON")


def _warn(text: str) -> None:
    print(f"trainmedic: warning: {inert_line(text)}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    if args.json and not args.progress:
        raise UsageError("--json goes with --progress")
    from trainmedic.drills.cases import choose, load_cases
    from trainmedic.drills.progress import load_progress

    cases, skipped = load_cases()
    for item in skipped:
        _warn(f"{item}; skipped")
    progress, problem = load_progress()
    if problem:
        _warn(problem)
    if args.progress:
        return _print_progress(progress, cases, as_json=args.json)

    from trainmedic.drills.run import playable
    from trainmedic.trees import load_forest_or_fail

    forest = load_forest_or_fail(args.trees)
    case = choose(playable(forest, cases), area=args.tree, name=args.case, seed=args.seed,
                  done=progress.done())
    if args.plain or not interactive_terminal():
        from trainmedic.commands.drill_plain import run_plain_drill

        return run_plain_drill(forest, case, sys.stdin, sys.stdout, area=args.tree)
    from trainmedic.tui.drill_start import run_drill_app

    return run_drill_app(forest, case, area=args.tree)


def _print_progress(progress: DrillProgress, cases: list[DrillCase], *, as_json: bool) -> int:
    """By area: cases drilled of those available, drills finished, how they ended, the score."""
    from trainmedic.drills.progress import ALL

    available: dict[str, int] = {ALL: len(cases)}
    for case in cases:
        available[case.area] = available.get(case.area, 0) + 1
    seen: dict[str, set[str]] = {ALL: progress.done()}
    for result in progress.results:
        seen.setdefault(result.area, set()).add(result.case)
    rows = [(row, available.get(row.area, 0), len(seen.get(row.area, ())))
            for row in progress.by_area()]
    if as_json:
        from trainmedic.commands.outputs import stamped

        print(json.dumps(stamped("drill", {
            "generated_by": "trainmedic drill --progress",
            "areas": [{**row.to_dict(), "cases": total, "cases_done": done}
                      for row, total, done in rows],
            "available": {area: n for area, n in sorted(available.items()) if area != ALL},
        }), indent=2))
        return 0
    if not progress.results:
        print(f"No drills done yet; {len(cases)} waiting in {len(available) - 1} areas. "
              "Start one: trainmedic drill (or --tree oom).")
        return 0
    print(f"{'area':<15} {'drills':>7} {'done':>5} {'node':>5} {'tree':>5} {'else':>5} "
          f"{'score':>6}  moves/expert")
    for row, total, done in rows:
        moves = f"{row.moves}/{row.expert_moves}" if row.expert_moves or row.moves else "-"
        print(inert_line(f"{row.area:<15} {f'{done}/{total}':>7} {row.done:>5} {row.node:>5} "
                         f"{row.tree:>5} {row.elsewhere:>5} {row.score:>6.2f}  {moves}"))
    print("drills: cases drilled/available · done: drills finished · node/tree/else: how they "
          "ended · score: 1 = the expected node (or the tree, when the thread pins no node)")
    return 0
