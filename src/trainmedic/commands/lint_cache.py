"""`trainmedic lint`'s result, remembered for exactly the tree files and code it came from.

Lint re-run on unchanged trees (a pre-commit hook, CI run again, an editor linting on save) prints
the remembered problems without loading YAML, networkx or the checks, as ruff does with its own
cache. The key holds everything the result depends on: the format of this cache, trainmedic's
version and every one of its source and data files (path, size, modification time: the checks,
the probes' facts, the API lists), the Python that ran it, the working folder (messages show
paths relative to it), what was asked (the paths and `--trees`), and every tree file lint reads,
built-in ones included (path, real path, size, modification time and a SHA-256 of its bytes). Any
change to any of them misses, and a miss runs lint in full. The key is taken before linting, so a
file edited meanwhile misses next time.

The results live in one small JSON file in the cache folder (`state.lint_results_path()`), the
newest MAX_ENTRIES of them, written atomically (without fsync: a file a power cut empties is
only a miss). It is only read when it, its folder and the folder above belong to this user and
nobody else can write them (`safefile.read_private`): a planted result would make lint pass a
broken tree. `TRAINMEDIC_NO_CACHE=1` neither reads nor writes it; set it too where a process
patches lint's code or data in memory (the key sees only the files).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from trainmedic import __version__
from trainmedic.safefile import read_bounded, read_private
from trainmedic.trees.problems import Problem

_FORMAT = 1
MAX_ENTRIES = 16  # results of different folders and arguments kept side by side
MAX_BYTES = 4 << 20  # of the results file: a larger one is neither read nor written
_TREE_BYTES = 8 << 20  # a tree file larger than this (the loader refuses it) is never remembered
_CODE_SUFFIXES = (".py", ".json")


@dataclass
class LintResult:
    """What `trainmedic lint` prints: the problems and what was checked."""

    problems: list[Problem]
    files: int
    trees: int
    nodes: int

    def to_dict(self) -> dict[str, object]:
        return {"problems": [p.to_dict() for p in self.problems], "files": self.files,
                "trees": self.trees, "nodes": self.nodes}

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> LintResult:
        """The result `to_dict` wrote. Strict (ValueError): only the cache reads it back, and a
        malformed entry there is a miss."""
        problems = data.get("problems")
        files, trees, nodes = data.get("files"), data.get("trees"), data.get("nodes")
        if not (isinstance(problems, list) and all(isinstance(p, dict) for p in problems)
                and type(files) is int and type(trees) is int and type(nodes) is int):
            raise ValueError("not a lint result")
        return cls([Problem.from_dict(p) for p in problems], files, trees, nodes)


def cache_off() -> bool:
    return bool(os.environ.get("TRAINMEDIC_NO_CACHE"))


def result_key(asked: list[str], tree_files: Iterable[Path]) -> str | None:
    """The key of linting `tree_files` (every file lint reads, in its order) for the command
    line `asked`; None when nothing may be remembered (the cache is off, a file is unreadable:
    lint then runs in full and says why)."""
    if cache_off():
        return None
    material: list[object] = [_FORMAT, __version__, sys.version, sys.executable, os.getcwd(),
                              asked, _code_stamp()]
    try:
        for path in tree_files:
            info = os.stat(path)
            digest = hashlib.sha256(read_bounded(path, _TREE_BYTES)).hexdigest()
            material.append([str(path), os.path.realpath(path), info.st_size, info.st_mtime_ns,
                             digest])
    except OSError:
        return None
    return hashlib.sha256(json.dumps(material).encode()).hexdigest()


def _code_stamp(folder: Path | None = None, prefix: str = "") -> list[list[object]]:
    """(path, size, mtime) of every source and data file of the installed trainmedic (or of
    `folder`), in a stable order."""
    folder = folder or Path(__file__).resolve().parent.parent
    stamp: list[list[object]] = []
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        if entry.is_dir(follow_symlinks=False):
            if entry.name != "__pycache__":
                stamp += _code_stamp(Path(entry.path), f"{prefix}{entry.name}/")
        elif entry.name.endswith(_CODE_SUFFIXES):
            info = entry.stat()
            stamp.append([prefix + entry.name, info.st_size, info.st_mtime_ns])
    return stamp


def lookup(key: str | None) -> LintResult | None:
    """The result remembered under `key`, or None (not there, unreadable, untrusted)."""
    if key is None:
        return None
    try:
        entry = _entries().get(key)
        return LintResult.from_dict(entry) if isinstance(entry, dict) else None
    except (OSError, ValueError):
        return None


def remember(key: str | None, result: LintResult) -> None:
    """Keep `result` under `key` with the newest others; a disk that refuses is ignored."""
    if key is None:
        return
    from trainmedic.safefile import private_folder, write_json
    from trainmedic.state import lint_results_path

    path = lint_results_path()
    try:
        entries = _entries()
    except (OSError, ValueError):
        entries = {}
    entries.pop(key, None)
    entries[key] = result.to_dict()
    kept = dict(list(entries.items())[-MAX_ENTRIES:])
    while kept and len(json.dumps(kept)) > MAX_BYTES:
        kept.pop(next(iter(kept)))  # the oldest first (the new one last: too large alone)
    if not kept:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if private_folder(path.parent.parent) and private_folder(path.parent):
            write_json(path, {"format": _FORMAT, "results": kept}, target="state",
                       durable=False)  # a cache: lost or empty after a power cut is a miss
    except OSError:
        pass


def _entries() -> dict[str, object]:
    """key -> stored result, oldest first. OSError or ValueError when there is nothing to
    trust: no file, someone else's, too large, not ours in shape."""
    from trainmedic.state import lint_results_path

    data = json.loads(read_private(lint_results_path(), MAX_BYTES))
    if not isinstance(data, dict) or data.get("format") != _FORMAT \
            or not isinstance(data.get("results"), dict):
        raise ValueError("not lint's results")
    return dict(data["results"])
