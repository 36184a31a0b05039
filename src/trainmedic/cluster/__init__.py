"""Cluster-wide probes through Slurm (or ssh): find the node that differs.

For trees and the app: `load_last_result()` gives the last saved result (or None) and
`cluster_facts(result)` its flat facts (names and types in `CLUSTER_FACTS`). Both are cheap.
"""

from __future__ import annotations

from trainmedic.cluster.aggregate import CLUSTER_FACTS, cluster_facts
from trainmedic.cluster.store import last_result_path, load_last_result

__all__ = ["CLUSTER_FACTS", "cluster_facts", "last_result_path", "load_last_result"]
