"""`trainmedic export TREE [--format markdown|mermaid|json] [-o FILE]`, or `--all -o DIR`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from trainmedic.errors import UsageError

SUFFIX = {"markdown": ".md", "mermaid": ".mmd", "json": ".json"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("tree", nargs="?", metavar="TREE", help="tree id (see `trainmedic lint`)")
    parser.add_argument("--format", choices=tuple(SUFFIX), default="markdown",
                        help="markdown runbook (default), the Mermaid diagram alone, or JSON")
    parser.add_argument("--json", action="store_true", help="same as --format json")
    parser.add_argument("-o", "--output", metavar="PATH",
                        help="file to write (default: standard output); a folder with --all")
    parser.add_argument("--all", action="store_true",
                        help="export every tree into the folder given by -o, plus README.md")


def render(forest, tree_id: str, fmt: str) -> str:
    tree = forest.tree(tree_id)
    if fmt == "markdown":
        from trainmedic.export.markdown import tree_markdown

        return tree_markdown(forest, tree)
    if fmt == "mermaid":
        from trainmedic.export.mermaid import tree_diagram

        return tree_diagram(forest, tree)
    from trainmedic.commands.outputs import stamped
    from trainmedic.export.jsonout import tree_json

    return json.dumps(stamped("export", tree_json(forest, tree)), indent=2,
                      ensure_ascii=False) + "\n"


def export_all(forest, folder: Path, fmt: str) -> list[Path]:
    """Write every tree and the index; returns the files written, in order."""
    from trainmedic.export.markdown import index_markdown

    if folder.exists() and not folder.is_dir():
        raise UsageError(f"{folder}: not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"{folder}: cannot create: {exc.strerror or exc}") from None
    files = {tree_id: f"{tree_id}{SUFFIX[fmt]}" for tree_id in sorted(forest.trees)}
    written = []
    for tree_id, name in files.items():
        written.append(_write(folder / name, render(forest, tree_id, fmt)))
    written.append(_write(folder / "README.md", index_markdown(forest, files)))
    return written


def _write(path: Path, content: str) -> Path:
    try:
        path.write_text(content, encoding="utf-8", newline="\n")
    except OSError as exc:
        raise UsageError(f"{path}: cannot write: {exc.strerror or exc}") from None
    return path


def run(args: argparse.Namespace) -> int:
    from trainmedic.trees import load_forest_or_fail

    fmt = "json" if args.json else args.format
    forest = load_forest_or_fail(args.trees)
    if args.all:
        if args.tree:
            raise UsageError("give either TREE or --all, not both")
        if not args.output:
            raise UsageError("--all needs -o DIR")
        written = export_all(forest, Path(args.output), fmt)
        print(f"wrote {len(written)} file(s) to {args.output}", file=sys.stderr)
        return 0
    if not args.tree:
        raise UsageError("name a tree to export, or use --all -o DIR")
    text = render(forest, args.tree, fmt)
    if args.output:
        _write(Path(args.output), text)
    else:
        sys.stdout.write(text)
    return 0
