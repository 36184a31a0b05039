"""Cluster-wide probes through Slurm (or ssh): find the node that differs.

`sweep()` runs one sweep and returns a `ClusterResult`; `load_last_result()` gives the last saved
one (or None). Names load on first use, so that reading a saved result does not import the
fan-out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainmedic.lazy import lazy_attributes

_WHERE = {
    "ClusterResult": "result",
    "last_result_path": "store",
    "load_last_result": "store",
    "save_last_result": "store",
    "sweep": "sweep",
}

__all__ = ["ClusterResult", "last_result_path", "load_last_result", "save_last_result", "sweep"]

if TYPE_CHECKING:
    from trainmedic.cluster.result import ClusterResult
    from trainmedic.cluster.store import last_result_path, load_last_result, save_last_result
    from trainmedic.cluster.sweep import sweep


__getattr__ = lazy_attributes(__name__, _WHERE)
