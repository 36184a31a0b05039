"""`trainmedic lint [PATH ...]`: prove trees sound; `FILE:LINE: severity: message` per problem.

The result of unchanged trees and code is remembered (`commands.lint_cache`): only a miss
imports the loader, the graph and the checks.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from trainmedic.commands.lint_cache import LintResult


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="*", metavar="PATH",
                        help="tree files or folders (default: the built-in trees and --trees)")
    parser.add_argument("--json", action="store_true", help="problems as JSON")
    parser.add_argument("--strict", action="store_true", help="treat warnings as errors")


def run(args: argparse.Namespace) -> int:
    from trainmedic.commands.lint_cache import lookup, remember, result_key
    from trainmedic.trees.paths import builtin_tree_dir, tree_files

    builtin = list(tree_files([builtin_tree_dir()]))
    user = list(tree_files(Path(p) for p in args.paths + list(args.trees)))
    asked = ["paths" if args.paths else "built-in", *args.paths, "--trees", *args.trees]
    key = result_key(asked, builtin + user)  # before linting: an edit meanwhile misses later
    result = lookup(key)
    if result is None:
        checked = len(user) if args.paths else len(builtin) + len(user)
        result = _lint(args, user if args.paths else None, checked)
        remember(key, result)
    problems = result.problems
    errors = sum(p.severity == "error" for p in problems)
    warnings = len(problems) - errors
    failed = errors > 0 or (args.strict and warnings > 0)
    if args.json:
        from trainmedic.commands.outputs import stamped

        json.dump(stamped("lint", {"files": result.files, "errors": errors, "warnings": warnings,
                                   "problems": [p.to_dict() for p in problems]}),
                  sys.stdout, indent=2)
        print()
    else:
        for problem in problems:
            print(problem)
        print(f"{result.files} file(s), {result.trees} tree(s), {result.nodes} node(s): "
              f"{errors} error(s), {warnings} warning(s)", file=sys.stderr)
    return 1 if failed else 0


def _lint(args: argparse.Namespace, files: list[Path] | None, checked: int) -> LintResult:
    """Load and check `files` (with the trees they may link to), or, given None, the built-in
    trees and `--trees`; `checked` is how many files that is."""
    from trainmedic.commands.lint_cache import LintResult
    from trainmedic.probes.registry import declared_facts
    from trainmedic.trees.forest import load_forest, shown_path
    from trainmedic.trees.lint import lint_forest, only_files
    from trainmedic.triage.signatures import lint_hooks

    hooks = lint_hooks()  # the triage program's hooks and analyses, which signatures name
    if files is not None:
        forest = load_forest(files)
        problems = only_files(lint_forest(forest, declared_facts(), hooks=hooks),
                              {shown_path(f) for f in files})
    else:
        forest = load_forest(args.trees)
        problems = lint_forest(forest, declared_facts(), hooks=hooks)
    nodes = sum(len(t.nodes) for t in forest.trees.values())
    return LintResult(problems, checked, len(forest.trees), nodes)
