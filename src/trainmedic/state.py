"""Where walks are saved, written atomically so a dropped SSH connection loses nothing.

Each walk is one JSON file under `$XDG_STATE_HOME/trainmedic/walks/`. A write goes to a
temporary file in the same folder, is fsynced and then renamed over the old one, so a kill in the
middle of a write leaves the previous state whole.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def state_dir() -> Path:
    """`$XDG_STATE_HOME/trainmedic`, or the platform's usual place for per-user state."""
    base = os.environ.get("XDG_STATE_HOME")
    if base:
        return Path(base) / "trainmedic"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "trainmedic"
    if os.name == "nt":
        return Path(os.environ.get("LOCALAPPDATA", Path.home())) / "trainmedic"
    return Path.home() / ".local" / "state" / "trainmedic"


def walks_dir() -> Path:
    return state_dir() / "walks"


def write_json_atomic(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=1, ensure_ascii=False)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def save_walk(data: dict[str, Any]) -> Path:
    """Save a walk's `to_dict()`; its `id` names the file."""
    path = walks_dir() / f"{data['id']}.json"
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
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        return Skipped(path, exc.strerror or str(exc))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        return Skipped(path, f"corrupt or truncated ({exc.__class__.__name__})")
    if not isinstance(data, dict) or not isinstance(data.get("id"), str) \
            or not isinstance(data.get("steps"), list):
        return Skipped(path, "not a saved walk")
    return SavedWalk(path, data)


def list_walks() -> tuple[list[SavedWalk], list[Skipped]]:
    """Saved walks, newest first, and the files that could not be read (never fatal)."""
    folder = walks_dir()
    if not folder.is_dir():
        return [], []
    walks: list[SavedWalk] = []
    skipped: list[Skipped] = []
    for path in folder.glob("*.json"):
        result = _read(path)
        (walks if isinstance(result, SavedWalk) else skipped).append(result)  # type: ignore[arg-type]
    walks.sort(key=lambda w: (str(w.data.get("updated", "")), w.path.stat().st_mtime), reverse=True)
    return walks, skipped


def find_walk(name: str | None) -> tuple[SavedWalk | None, list[Skipped]]:
    """The walk with this id (or id prefix, or file path), or the latest when `name` is None."""
    if name and Path(name).is_file():
        result = _read(Path(name))
        return (result, []) if isinstance(result, SavedWalk) else (None, [result])
    walks, skipped = list_walks()
    if name is None:
        return (walks[0] if walks else None), skipped
    matches = [w for w in walks if w.id == name] or [w for w in walks if w.id.startswith(name)]
    return (matches[0] if matches else None), skipped
