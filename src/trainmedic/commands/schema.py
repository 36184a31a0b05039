"""`trainmedic schema`: print the tree format's JSON Schema for editors (yaml-language-server)."""

from __future__ import annotations

import argparse
import json
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="accepted for symmetry; output is JSON")


def run(args: argparse.Namespace) -> int:
    from trainmedic.trees.schema import tree_schema

    json.dump(tree_schema(), sys.stdout, indent=2)
    print()
    return 0
