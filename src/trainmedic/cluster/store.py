"""The last cluster result on disk, so trees and the app can use it after the command ended.

Written atomically (temporary file in the same folder, then rename): a reader never sees half a
file, even when two fan-outs finish together.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

LAST_RESULT_NAME = "cluster-last.json"


def state_dir() -> Path:
    """`$XDG_STATE_HOME/trainmedic`, default `~/.local/state/trainmedic`."""
    base = os.environ.get("XDG_STATE_HOME", "").strip()
    root = Path(base) if base and Path(base).is_absolute() else Path.home() / ".local" / "state"
    return root / "trainmedic"


def last_result_path() -> Path:
    return state_dir() / LAST_RESULT_NAME


def save_last_result(result: dict) -> Path:
    """Write the result atomically; returns its path. Raises OSError when the folder is unusable."""
    path = last_result_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".cluster-last.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(result, handle, separators=(",", ":"))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def load_last_result() -> dict | None:
    """The last saved cluster result, or None when there is none or it is unreadable."""
    try:
        with last_result_path().open(encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and "bad_nodes" in data else None
