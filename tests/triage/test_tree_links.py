"""Every tree#node triage can point to exists in the built-in trees (contract §4 anchors)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from trainmedic.triage.scanner import XID_NODES
from trainmedic.triage.signatures import DERIVED, SIGNATURES

TREES = Path(__file__).resolve().parents[2] / "trees"
# nodes chosen at scan time from the message's numbers (OOM sizes, Xid code)
DYNAMIC = [("oom", "fragmentation"), ("oom", "other-process"), ("oom", "first-iteration"),
           ("triage", None)] + [("hardware", node) for node in sorted(set(XID_NODES.values()))]


def emitted_links() -> set[tuple[str, str | None]]:
    return {(s.tree, s.node) for s in SIGNATURES + DERIVED} | set(DYNAMIC)


@pytest.mark.skipif(not TREES.is_dir(), reason="built-in trees not present")
def test_every_link_resolves():
    forest = {}
    for path in TREES.glob("*.yaml"):
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        forest[doc["id"]] = set(doc.get("nodes", {}))
    missing = [f"{t}#{n}" if n else t for t, n in sorted(emitted_links(), key=str)
               if t not in forest or (n is not None and n not in forest[t])]
    assert missing == []


@pytest.mark.parametrize(("code", "node"), [(79, "fallen-off-bus"), (48, "ecc"), (74, "nvlink"),
                                            (119, "gsp"), (13, "app-fault"), (61, "gpu-reset"),
                                            (999, "xid")])
def test_xid_code_picks_the_hardware_node(code: int, node: str) -> None:
    from trainmedic.triage import triage_text

    line = f"[Mon Nov 30 03:12:44 2026] NVRM: Xid (PCI:0000:2b:00): {code}, pid=4242, name=python"
    finding = triage_text(line).findings[0]
    assert (finding.tree, finding.node) == ("hardware", node)
