"""`trainmedic lint [PATH ...]`: prove trees sound; `FILE:LINE: severity: message` per problem."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="*", metavar="PATH",
                        help="tree files or folders (default: the built-in trees and --trees)")
    parser.add_argument("--json", action="store_true", help="problems as JSON")
    parser.add_argument("--strict", action="store_true", help="treat warnings as errors")


def run(args: argparse.Namespace) -> int:
    from trainmedic.probes.registry import declared_facts
    from trainmedic.trees.forest import load_forest, shown_path
    from trainmedic.trees.lint import lint_forest, only_files
    from trainmedic.trees.paths import builtin_tree_dir, tree_files

    if args.paths:
        files = list(tree_files(Path(p) for p in args.paths + list(args.trees)))
        forest = load_forest(files)
        problems = only_files(lint_forest(forest, declared_facts()),
                              {shown_path(f) for f in files})
        checked = len(files)
    else:
        forest = load_forest(args.trees)
        problems = lint_forest(forest, declared_facts())
        checked = sum(1 for _ in tree_files([builtin_tree_dir()])) + sum(
            1 for _ in tree_files(Path(p) for p in args.trees))
    errors = sum(p.severity == "error" for p in problems)
    warnings = len(problems) - errors
    failed = errors > 0 or (args.strict and warnings > 0)
    if args.json:
        from trainmedic.commands.outputs import stamped

        json.dump(stamped("lint", {"files": checked, "errors": errors, "warnings": warnings,
                                   "problems": [p.to_dict() for p in problems]}),
                  sys.stdout, indent=2)
        print()
    else:
        for problem in problems:
            print(problem)
        nodes = sum(len(t.nodes) for t in forest.trees.values())
        print(f"{checked} file(s), {len(forest.trees)} tree(s), {nodes} node(s): "
              f"{errors} error(s), {warnings} warning(s)", file=sys.stderr)
    return 1 if failed else 0
