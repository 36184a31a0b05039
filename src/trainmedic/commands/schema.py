"""`trainmedic schema`: print a JSON Schema - the tree format's (for editors, the default) or
that of a command's `--json` output (`--output triage|memory|probe|preflight`)."""

from __future__ import annotations

import argparse
import json
import sys

OUTPUTS = ("triage", "memory", "probe", "preflight")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--output", choices=OUTPUTS, metavar="COMMAND",
                        help="the schema of that command's --json output: "
                             + ", ".join(OUTPUTS) + " (default: the tree format)")
    parser.add_argument("--json", action="store_true", help="accepted for symmetry; output is JSON")


def run(args: argparse.Namespace) -> int:
    if args.output:
        from trainmedic.commands.outputs import SCHEMAS

        schema = SCHEMAS[args.output]
    else:
        from trainmedic.trees.schema import tree_schema

        schema = tree_schema()
    json.dump(schema, sys.stdout, indent=2)
    print()
    return 0
