"""Every tree#node triage can point to exists in the built-in trees (contract §4 anchors)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from trainmedic.triage.signatures import DERIVED, SIGNATURES

TREES = Path(__file__).resolve().parents[2] / "trees"
# nodes chosen at scan time from the message's numbers (OOM sizes, Xid code)
DYNAMIC = [("oom", "fragmentation"), ("oom", "other-process"), ("hardware", "fallen-off-bus"),
           ("hardware", "ecc"), ("oom", "first-iteration"), ("triage", None)]


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
