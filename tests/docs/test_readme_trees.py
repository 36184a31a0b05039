"""The README's tree table lists every built-in tree with its real question and fix counts (it
went stale once as trees grew)."""

from __future__ import annotations

import re
from pathlib import Path

from trainmedic.trees.forest import load_forest

README = Path(__file__).resolve().parents[2] / "README.md"
ROW = re.compile(r"^\| \[`([a-z0-9-]+)`\]\(docs/runbooks/\1\.md\) \| .+? \| (\d+) \| (\d+) \|$",
                 re.M)


def test_the_tree_table_is_current():
    forest = load_forest()
    rows = {m.group(1): (int(m.group(2)), int(m.group(3)))
            for m in ROW.finditer(README.read_text(encoding="utf-8"))}
    assert set(rows) == set(forest.trees)
    for tree_id, counted in rows.items():
        assert counted == forest.counts(tree_id), tree_id
