"""The facts a cluster sweep gives tree rules, with their types (the probe registry reads this).

Kept apart from `aggregate.py` so that declaring them costs `trainmedic lint` nothing.
"""

from __future__ import annotations

CLUSTER_FACTS: dict[str, str] = {
    "nodes": "int", "answered": "int", "bad_count": "int", "bad_nodes": "list",
    "verdicts": "list", "unreachable_count": "int", "hardware_nodes": "list",
    "xid_nodes": "list", "gpu_missing_nodes": "list", "ib_down_nodes": "list",
    "software_mismatch": "bool", "env_mismatch": "bool", "stray_process_nodes": "list",
    "split_facts": "list", "age_s": "float",
}
