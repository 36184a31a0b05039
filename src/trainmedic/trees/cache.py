"""A per-user cache of parsed tree files, so every start does not re-parse unchanged YAML.

An entry is used only when the file's path, size, modification time and bytes (a SHA-1), the
path shown in messages, and the loader's own source files are all unchanged; anything else (a
corrupt entry, a read-only home, `TRAINMEDIC_NO_CACHE=1`) falls back to parsing. Parsing is the
truth: the cache only remembers its result.

Entries are pickles, and unpickling runs code: an entry is only read when it, its folder and the
folder above are owned by this user and writable by nobody else (a shared or planted
`XDG_CACHE_HOME` is simply not used). Pickle rather than JSON because the model holds `Text`
subclasses, rules and source lines that JSON would need a second, drifting serializer for.

The folder is pruned when an entry is written (a miss, so never on the fast path): entries not
rewritten for PRUNE_AFTER_S (trees from a scratch folder long gone), temporary files a killed
writer left, and the oldest entries beyond MAX_CACHE_BYTES.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import tempfile
import time
from pathlib import Path

from trainmedic.safefile import private_folder, private_stat, read_bounded
from trainmedic.state import tree_cache_dir
from trainmedic.trees.model import Tree
from trainmedic.trees.problems import Problem

_FORMAT = 1
PRUNE_AFTER_S = 30 * 86400.0  # an entry of a tree still in use is re-read, not re-written:
# pruning it costs one parse a month
MAX_CACHE_BYTES = 64 << 20
_STALE_TEMP_S = 3600.0
_MAX_HASHED = 8 << 20  # a larger file (the loader refuses it) is parsed, never cached
_pruned: set[Path] = set()  # folders pruned by this process (once is enough)
_CODE = ("model.py", "loader.py", "spec.py", "yamlsafe.py", "problems.py", "cache.py")


def _code_stamp() -> tuple[int, ...]:
    here = Path(__file__).parent
    return tuple(os.stat(here / name).st_mtime_ns for name in _CODE)


def load_tree_file(path: Path, shown: str) -> tuple[Tree | None, list[Problem]]:
    """The loader, imported only when an entry must be made: a start that finds every tree in
    the cache (triage's, the app's) does not pay for YAML."""
    from trainmedic.trees.loader import load_tree_file as load

    return load(path, shown)


def load_cached(path: Path, shown: str) -> tuple[Tree | None, list[Problem]]:
    if os.environ.get("TRAINMEDIC_NO_CACHE"):
        return load_tree_file(path, shown)
    try:
        info = path.stat()
        real = str(path.resolve())
        # the bytes too: an edit can keep the size and the time (two saves within the file
        # system's clock tick, `cp -p`, a checkout that restores times)
        digest = hashlib.sha1(read_bounded(path, _MAX_HASHED)).hexdigest()
        key = (_FORMAT, _code_stamp(), real, shown, info.st_mtime_ns, info.st_size, digest)
    except OSError:
        return load_tree_file(path, shown)
    entry = tree_cache_dir() / (hashlib.sha1(f"{real}\0{shown}".encode()).hexdigest() + ".pickle")
    try:
        if private_folder(entry.parent.parent) and private_folder(entry.parent):
            fd = os.open(entry, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
            with os.fdopen(fd, "rb") as handle:
                if private_stat(os.fstat(handle.fileno())):
                    stored_key, result = pickle.load(handle)
                    if stored_key == key:
                        return result
    except Exception:  # a missing, stale or corrupt entry is simply re-made
        pass
    result = load_tree_file(path, shown)
    try:
        entry.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if not (private_folder(entry.parent.parent) and private_folder(entry.parent)):
            return result  # never write where others could swap the entry
        fd, tmp = tempfile.mkstemp(dir=entry.parent, suffix=".tmp")
        with os.fdopen(fd, "wb") as handle:
            pickle.dump((key, result), handle, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, entry)
    except OSError:
        pass
    prune(entry.parent, keep=entry)
    return result


def prune(folder: Path, *, keep: Path | None = None, now: float | None = None) -> None:
    """Remove old entries and leftovers, then the oldest entries beyond MAX_CACHE_BYTES (never
    `keep`, the entry just written)."""
    if folder in _pruned:
        return
    _pruned.add(folder)
    now = time.time() if now is None else now
    kept: list[tuple[float, int, Path]] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for item in entries:
        try:
            info = item.stat(follow_symlinks=False)
        except OSError:
            continue
        stale = _STALE_TEMP_S if item.name.endswith(".tmp") else PRUNE_AFTER_S
        if item.name.endswith((".pickle", ".tmp")) and now - info.st_mtime > stale:
            with contextlib.suppress(OSError):
                os.unlink(item.path)
        elif item.name.endswith(".pickle") and Path(item.path) != keep:
            kept.append((info.st_mtime, info.st_size, Path(item.path)))
    total = sum(size for _, size, _ in kept)
    for _, size, path in sorted(kept):  # oldest first
        if total <= MAX_CACHE_BYTES:
            break
        with contextlib.suppress(OSError):
            path.unlink()
        total -= size
