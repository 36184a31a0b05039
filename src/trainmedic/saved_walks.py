"""Saved walks: one JSON file each, saved after every step, listed newest first.

The files live in `state.walks_dir()` and are written atomically (`state.write_json_atomic`), so
a dropped SSH connection loses nothing. Reading never fails: a file that is not a walk, or one a
newer trainmedic wrote, is skipped with the reason.
"""

from __future__ import annotations

import errno
import json
import re
import time
from dataclasses import dataclass
from pathlib import Path

from trainmedic.state import TEMP_SUFFIX, walks_dir, write_json_atomic
from trainmedic.walk import VERSION, WalkRecord

STALE_TEMP_S = 3600.0  # a temporary file this old was left by a killed writer
# A walk id names its file: no separators, no leading dot, nothing a shell or Windows dislikes.
WALK_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$")


def save_walk(record: WalkRecord) -> Path:
    """Save a walk; its `id` names the file."""
    if not WALK_ID_RE.match(record.id):
        # An OSError, so front ends that already survive a full or read-only disk survive this.
        raise OSError(errno.EINVAL, f"walk id {record.id!r} cannot name a file")
    path = walks_dir() / f"{record.id}.json"
    write_json_atomic(path, record.to_dict())
    return path


@dataclass
class SavedWalk:
    path: Path
    record: WalkRecord

    @property
    def id(self) -> str:
        return self.record.id


@dataclass
class Skipped:
    path: Path
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: skipped: {self.reason}"


def read_walk(path: Path) -> SavedWalk | Skipped:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        return Skipped(path, exc.strerror or str(exc))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        return Skipped(path, f"corrupt or truncated ({exc.__class__.__name__})")
    if not isinstance(data, dict) or not isinstance(data.get("id"), str) \
            or not isinstance(data.get("steps"), list):
        return Skipped(path, "not a saved walk")
    if data.get("version", VERSION) != VERSION:
        return Skipped(path, f"saved by another trainmedic version ({data.get('version')!r})")
    return SavedWalk(path, WalkRecord.from_dict(data))


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
    if not folder.is_dir():
        return [], []
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
        result = read_walk(path)
        if isinstance(result, SavedWalk):
            walks.append(result)
        else:
            skipped.append(result)
    walks.sort(key=lambda w: (w.record.updated, _mtime(w.path), w.id), reverse=True)
    return walks, skipped


def find_walk(name: str | None) -> tuple[SavedWalk | None, list[Skipped]]:
    """The walk with this id (or id prefix, or file path), or the latest when `name` is None."""
    if name and Path(name).is_file():
        result = read_walk(Path(name))
        return (result, []) if isinstance(result, SavedWalk) else (None, [result])
    walks, skipped = list_walks()
    if name is None:
        return (walks[0] if walks else None), skipped
    matches = [w for w in walks if w.id == name] or [w for w in walks if w.id.startswith(name)]
    return (matches[0] if matches else None), skipped
