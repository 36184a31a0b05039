"""`trainmedic __complete KIND [PREFIX]`: what the shell completion scripts offer at a Tab.

It runs at every Tab, so it imports almost nothing: tree and node ids come from a small index
(one JSON file in the user's cache) keyed by each tree file's path, size and modification time,
and only a changed file is read again with the real loader; saved walk ids are the names of the
files in the walks folder; probe names come from the probe registry, which is data only. It
never prints an error: a file it cannot read offers nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from trainmedic.trees.paths import TREE_SUFFIXES, builtin_tree_dir

KINDS = ("trees", "targets", "probes", "walks")
INDEX_FORMAT = 1


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("kind", choices=KINDS,
                        help="trees; targets (tree or tree#node); probes; walks (saved walk ids)")
    parser.add_argument("prefix", nargs="?", default="", help="what is typed so far")


def run(args: argparse.Namespace) -> int:
    for candidate in candidates(args.kind, args.prefix, args.trees):
        print(candidate)
    return 0


def candidates(kind: str, prefix: str, trees: Iterable[str] = ()) -> list[str]:
    if kind == "probes":
        from trainmedic.probes.registry import PROBES

        names: Iterable[str] = PROBES
    elif kind == "walks":
        names = saved_walk_ids()
    else:
        index = tree_index(trees)
        tree_id, hash_, _node = prefix.partition("#")
        if kind == "targets" and hash_:
            names = [f"{tree_id}#{node}" for node in index.get(tree_id, [])]
        else:
            names = index
    return sorted({name for name in names if name.startswith(prefix)})


# -- saved walks ----------------------------------------------------------------------------------
def saved_walk_ids() -> list[str]:
    """A saved walk's id names its file (`saved_walks.save_walk`); temporary files start with a
    dot. Listing the folder is enough: no file is read."""
    from trainmedic.state import walks_dir

    try:
        return [entry.name[:-5] for entry in os.scandir(walks_dir())
                if entry.name.endswith(".json") and not entry.name.startswith(".")]
    except OSError:
        return []


# -- trees ----------------------------------------------------------------------------------------
def index_path() -> Path:
    from trainmedic.state import cache_dir

    return cache_dir() / "completion-index.json"


def tree_files(folders: Iterable[str | Path]) -> Iterator[tuple[str, int, int]]:
    """(absolute path, mtime in ns, size) of every tree file in the folders (or files) named."""
    for folder in folders:
        try:
            if os.path.isfile(folder):
                stat = os.stat(folder)
                yield os.path.abspath(folder), stat.st_mtime_ns, stat.st_size
                continue
            for root, dirs, files in os.walk(folder):
                dirs.sort()
                for name in sorted(files):
                    if name.endswith(TREE_SUFFIXES):
                        path = os.path.join(root, name)
                        stat = os.stat(path)
                        yield os.path.abspath(path), stat.st_mtime_ns, stat.st_size
        except OSError:
            continue


def read_ids(path: str) -> tuple[str | None, list[str]]:
    """The tree id and node ids of one file, through the real loader (and its parse cache)."""
    try:
        from trainmedic.trees.cache import load_cached

        tree, _problems = load_cached(Path(path), path)
    except Exception:  # a broken file offers nothing; lint is where it is reported
        return None, []
    if tree is None:
        return None, []
    return tree.id, list(tree.nodes)


def tree_index(extra: Iterable[str] = ()) -> dict[str, list[str]]:
    """Tree id -> node ids over the built-in trees and `extra`, from the index where the
    files are unchanged; the index is rewritten when any entry changed."""
    from trainmedic import __version__

    path = index_path()
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
        if stored.get("format") != INDEX_FORMAT or stored.get("version") != __version__:
            stored = {}
    except (OSError, ValueError, AttributeError):
        stored = {}
    old = stored.get("files", {}) if isinstance(stored.get("files"), dict) else {}
    files: dict[str, list[Any]] = {}
    changed = False
    for file, mtime, size in tree_files([builtin_tree_dir(), *extra]):
        entry = old.get(file)
        if not (isinstance(entry, list) and len(entry) == 4 and entry[:2] == [mtime, size]):
            entry = [mtime, size, *read_ids(file)]
            changed = True
        files[file] = entry
    if changed:  # entries of other --trees folders stay, those of deleted files go
        kept = {file: entry for file, entry in old.items() if os.path.exists(file)}
        _save({"format": INDEX_FORMAT, "version": __version__, "files": {**kept, **files}}, path)
    index: dict[str, list[str]] = {}
    for _mtime, _size, tree_id, nodes in files.values():
        if isinstance(tree_id, str):
            index.setdefault(tree_id, []).extend(str(node) for node in nodes)
    return index


def _save(data: dict[str, Any], path: Path) -> None:
    """Best effort: a read-only or full cache folder just leaves the index cold."""
    from trainmedic.state import write_json_atomic

    with contextlib.suppress(OSError):
        write_json_atomic(path, data)
