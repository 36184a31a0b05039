"""The last cluster result on disk, so trees and the app can use it after the command ended.

Written atomically (temporary file in the same folder, then rename): a reader never sees half a
file, even when two fan-outs finish together.
"""

from __future__ import annotations

import json
from pathlib import Path

from trainmedic.state import state_dir, write_json_atomic

LAST_RESULT_NAME = "cluster-last.json"


def last_result_path() -> Path:
    return state_dir() / LAST_RESULT_NAME


def save_last_result(result: dict) -> Path:
    """Write the result atomically; returns its path. Raises OSError when the folder is unusable."""
    path = last_result_path()
    write_json_atomic(path, result)
    return path


def load_last_result() -> dict | None:
    """The last saved cluster result, or None when there is none or it is unreadable."""
    try:
        with last_result_path().open(encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and "bad_nodes" in data else None
