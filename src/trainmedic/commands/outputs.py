"""What every `--json` output starts with: its schema version and the trainmedic version.

One helper for every command, so a script reading any output can tell which shape it reads
(`schema_version`, which changes when a field is removed or changes meaning) and which release
wrote it (`trainmedic_version`, the same string `trainmedic --version` prints).
"""

from __future__ import annotations

from typing import Any

from trainmedic import __version__

VERSIONS = {"triage": 1, "memory": 1, "probe": 1, "preflight": 1, "lint": 1, "export": 1,
            "cluster": 1, "report": 1, "walk": 1}


def stamped(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    """`payload` with its schema version and the trainmedic version first."""
    return {"schema_version": VERSIONS[kind], "trainmedic_version": __version__, **payload}
