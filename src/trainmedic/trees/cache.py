"""A per-user cache of parsed tree files, so every start does not re-parse unchanged YAML.

An entry is used only when the file's path, size and modification time, the path shown in
messages, and the loader's own source files are all unchanged; anything else (a corrupt entry, a
read-only home, `TRAINMEDIC_NO_CACHE=1`) falls back to parsing. Parsing is the truth: the cache
only remembers its result.

The entries are pickles, which can run code when loaded; that is safe here only because the
folder is the user's own (created 0700 under their cache folder) and holds nothing anyone else
writes: the same trust as the Python files trainmedic itself runs from.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from pathlib import Path

from trainmedic.state import tree_cache_dir
from trainmedic.trees.loader import load_tree_file
from trainmedic.trees.model import Tree
from trainmedic.trees.problems import Problem

_FORMAT = 1
_CODE = ("model.py", "loader.py", "spec.py", "yamlsafe.py", "problems.py", "cache.py")


def _code_stamp() -> tuple[int, ...]:
    here = Path(__file__).parent
    return tuple(os.stat(here / name).st_mtime_ns for name in _CODE)


def load_cached(path: Path, shown: str) -> tuple[Tree | None, list[Problem]]:
    if os.environ.get("TRAINMEDIC_NO_CACHE"):
        return load_tree_file(path, shown)
    try:
        stat = path.stat()
        real = str(path.resolve())
        key = (_FORMAT, _code_stamp(), real, shown, stat.st_mtime_ns, stat.st_size)
    except OSError:
        return load_tree_file(path, shown)
    entry = tree_cache_dir() / (hashlib.sha1(f"{real}\0{shown}".encode()).hexdigest() + ".pickle")
    try:
        with entry.open("rb") as handle:
            stored_key, result = pickle.load(handle)
        if stored_key == key:
            return result
    except Exception:  # a missing, stale or corrupt entry is simply re-made
        pass
    result = load_tree_file(path, shown)
    try:
        entry.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(dir=entry.parent, suffix=".tmp")
        with os.fdopen(fd, "wb") as handle:
            pickle.dump((key, result), handle, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, entry)
    except OSError:
        pass
    return result
