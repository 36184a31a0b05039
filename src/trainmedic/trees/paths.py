"""Where tree files are: the built-in folder and the files under a folder. Imports no YAML, so
the home screen can fingerprint the tree files before deciding whether to load them."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from trainmedic.errors import UsageError

TREE_SUFFIXES = (".yaml", ".yml")


def builtin_tree_dir() -> Path:
    """`trees/` inside the installed wheel, or at the top of a source checkout."""
    here = Path(__file__).resolve().parent.parent
    packaged = here / "_builtin_trees"
    if packaged.is_dir():
        return packaged
    return here.parent.parent / "trees"


def tree_files(paths: Iterable[Path]) -> Iterator[Path]:
    """The tree files named, or found (sorted, recursively) in the folders named."""
    for path in paths:
        if path.is_dir():
            yield from sorted(
                p for p in path.rglob("*") if p.suffix in TREE_SUFFIXES and p.is_file()
            )
        elif path.exists():
            yield path
        else:
            raise UsageError(f"{path}: no such file or folder")
