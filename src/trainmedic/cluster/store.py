"""The last cluster result on disk, so trees and the app can use it after the sweep ended.

Written atomically (temporary file in the same folder, then rename): a reader never sees half a
file, even when two fan-outs finish together.
"""

from __future__ import annotations

import json
from pathlib import Path

from trainmedic.cluster.result import ClusterResult
from trainmedic.safefile import read_bounded
from trainmedic.state import cluster_result_path, write_json_atomic


def last_result_path() -> Path:
    return cluster_result_path()


def save_last_result(result: ClusterResult) -> Path:
    """Write the result atomically; returns its path. Raises OSError when the folder is unusable."""
    path = last_result_path()
    write_json_atomic(path, result.to_dict())
    return path


MAX_RESULT_BYTES = 256 << 20  # 65,536 nodes of a few KB each; a bigger file is not ours


def load_last_result() -> ClusterResult | None:
    """The last saved cluster result, or None when there is none or it is unreadable (a
    regular file of at most MAX_RESULT_BYTES: a FIFO or a device never blocks the app)."""
    try:
        data = json.loads(read_bounded(last_result_path(), MAX_RESULT_BYTES))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or "bad_nodes" not in data:
        return None
    return ClusterResult.from_dict(data)
