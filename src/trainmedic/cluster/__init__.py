"""Cluster-wide probes through Slurm (or ssh): find the node that differs.

For trees and the app: `load_last_result()` gives the last saved result (or None) and
`cluster_facts(result)` its flat facts (names and types in `CLUSTER_FACTS`). Names load on first
use, so that declaring the facts (the probe registry, at every lint) does not import the rest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainmedic.lazy import lazy_attributes

_WHERE = {
    "CLUSTER_FACTS": "facts",
    "cluster_facts": "aggregate",
    "last_result_path": "store",
    "load_last_result": "store",
}

__all__ = ["CLUSTER_FACTS", "cluster_facts", "last_result_path", "load_last_result"]

if TYPE_CHECKING:
    from trainmedic.cluster.aggregate import cluster_facts
    from trainmedic.cluster.facts import CLUSTER_FACTS
    from trainmedic.cluster.store import last_result_path, load_last_result


__getattr__ = lazy_attributes(__name__, _WHERE)
