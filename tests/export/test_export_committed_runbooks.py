"""docs/runbooks/ holds the exported built-in trees; this fails as soon as they are stale."""

from __future__ import annotations

from pathlib import Path

from trainmedic.commands.export import export_all
from trainmedic.trees import load_forest_or_fail

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = ROOT / "docs" / "runbooks"
REGENERATE = "cd {root} && .venv/bin/trainmedic export --all -o docs/runbooks"


def test_committed_runbooks_match_the_built_in_trees(tmp_path):
    written = export_all(load_forest_or_fail([]), tmp_path, "markdown")
    fresh = {p.name: p.read_bytes() for p in written}
    committed = {p.name: p.read_bytes() for p in COMMITTED.glob("*.md")}
    stale = sorted(name for name in fresh.keys() | committed.keys()
                   if fresh.get(name) != committed.get(name))
    orphans = sorted(committed.keys() - fresh.keys())
    assert not stale, (f"docs/runbooks is stale ({', '.join(stale)}); regenerate with:\n  "
                       + REGENERATE.format(root=ROOT)
                       + (f"\nand delete the pages no tree produces: {', '.join(orphans)}"
                          if orphans else ""))
