"""Where walks are saved, written atomically so a dropped SSH connection loses nothing.

Each walk is one JSON file under `$XDG_STATE_HOME/trainmedic/walks/`. A write goes to a
temporary file in the same folder, is fsynced and then renamed over the old one, so a kill in the
middle of a write leaves the previous state whole.
"""

from __future__ import annotations

import errno
import json
import os
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainmedic.safefile import TEMP_SUFFIX, read_bounded, write_json


def state_dir() -> Path:
    """`$XDG_STATE_HOME/trainmedic`, or the platform's usual place for per-user state."""
    base = os.environ.get("XDG_STATE_HOME", "").strip()
    if base and Path(base).is_absolute():  # the XDG spec says to ignore relative paths
        return Path(base) / "trainmedic"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "trainmedic"
    if os.name == "nt":
        return Path(os.environ.get("LOCALAPPDATA", Path.home())) / "trainmedic"
    return Path.home() / ".local" / "state" / "trainmedic"


def walks_dir() -> Path:
    return state_dir() / "walks"


STALE_TEMP_S = 3600.0  # a temporary file this old was left by a killed writer
MAX_WALK_BYTES = 16 << 20  # a walk is a few KB; a bigger file is not one of ours
# A walk id names its file: no separators, no leading dot, nothing a shell or Windows dislikes.
WALK_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$")


def write_json_atomic(path: Path, data: Any) -> None:
    """Serialise first, then write a temporary file, fsync it and rename it over `path` (0600).

    Serialising before opening means unserialisable data never touches the disk; the rename is
    atomic on POSIX and Windows, so readers see the old file or the new one, never a mix.
    """
    write_json(path, data, target="state")


def save_walk(data: dict[str, Any]) -> Path:
    """Save a walk's `to_dict()`; its `id` names the file."""
    walk_id = data.get("id")
    if not isinstance(walk_id, str) or not WALK_ID_RE.match(walk_id):
        # An OSError, so front ends that already survive a full or read-only disk survive this.
        raise OSError(errno.EINVAL, f"walk id {walk_id!r} cannot name a file")
    path = walks_dir() / f"{walk_id}.json"
    write_json_atomic(path, data)
    return path


@dataclass
class SavedWalk:
    path: Path
    data: dict[str, Any]

    @property
    def id(self) -> str:
        return str(self.data.get("id", self.path.stem))


@dataclass
class Skipped:
    path: Path
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: skipped: {self.reason}"


def _read(path: Path) -> SavedWalk | Skipped:
    try:
        data = json.loads(read_bounded(path, MAX_WALK_BYTES).decode("utf-8"))
    except OSError as exc:
        return Skipped(path, exc.strerror or str(exc))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        return Skipped(path, f"corrupt or truncated ({exc.__class__.__name__})")
    if not isinstance(data, dict) or not isinstance(data.get("id"), str) \
            or not isinstance(data.get("steps"), list):
        return Skipped(path, "not a saved walk")
    if data.get("version", 1) != 1:
        return Skipped(path, f"saved by another trainmedic version ({data.get('version')!r})")
    return SavedWalk(path, data)


def _sweep_stale_temps(folder: Path) -> None:
    """Remove temporary files that killed writers left behind (never a live writer's)."""
    cutoff = time.time() - STALE_TEMP_S
    for path in folder.glob(f".*{TEMP_SUFFIX}"):
        try:
            if path.stat().st_mtime < cutoff:
                path.unlink()
        except OSError:
            pass


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:  # removed since it was read
        return 0.0


def list_walks(limit: int | None = None) -> tuple[list[SavedWalk], list[Skipped]]:
    """Saved walks, newest first, and the files that could not be read (never fatal).

    With `limit`, only the newest files (by modification time) are read until that many walks
    are found, so the home screen stays fast however many walks pile up.
    """
    folder = walks_dir()
    try:
        if not folder.is_dir():
            return [], []
    except OSError as exc:  # a state folder made by `sudo trainmedic`: Python 3.11 raises here
        return [], [Skipped(folder, exc.strerror or str(exc))]
    walks: list[SavedWalk] = []
    skipped: list[Skipped] = []
    try:
        paths = sorted((p for p in folder.iterdir()
                        if p.suffix == ".json" and not p.name.startswith(".")),
                       key=lambda p: (-_mtime(p), p.name))
    except OSError as exc:
        return [], [Skipped(folder, exc.strerror or str(exc))]
    _sweep_stale_temps(folder)
    for path in paths:
        if limit is not None and len(walks) >= limit:
            break
        result = _read(path)
        if isinstance(result, SavedWalk):
            walks.append(result)
        else:
            skipped.append(result)
    walks.sort(key=lambda w: (str(w.data.get("updated", "")), _mtime(w.path), w.id), reverse=True)
    return walks, skipped


def find_walk(name: str | None) -> tuple[SavedWalk | None, list[Skipped]]:
    """The walk with this id (or id prefix, or file path), or the latest when `name` is None."""
    if name and _is_file(Path(name)):
        result = _read(Path(name))
        return (result, []) if isinstance(result, SavedWalk) else (None, [result])
    walks, skipped = list_walks()
    if name is None:
        return (walks[0] if walks else None), skipped
    matches = [w for w in walks if w.id == name] or [w for w in walks if w.id.startswith(name)]
    return (matches[0] if matches else None), skipped


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:
        return False
