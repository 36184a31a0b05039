"""The accuracy floor on the public corpus: >= 95% tree-level, >= 80% node-level, no false
alarm on a healthy log, over every case whose expected tree is loaded (tune and holdout).

New trees bring their cases in as soon as they load; the numbers per area are printed by
`benchmarks/triage_accuracy.py`.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import Score, judge, load_cases

FLOOR_TREE, FLOOR_NODE = 0.95, 0.80


def test_floor():
    from trainmedic.trees.forest import load_forest
    from trainmedic.triage import triage_text

    trees = {tid: set(t.nodes) for tid, t in load_forest().trees.items()}
    total = Score()
    for case in load_cases():
        if not case.healthy and case.tree not in trees:
            continue
        links = [f.link for f in triage_text(case.excerpt, name=case.name).findings]
        score = judge(case, links, trees)
        assert score is not None
        total.add(score)
    assert total.cases >= 150
    assert total.false_alarms == 0, [m for m in total.misses if "false alarm" in m]
    summary = (f"tree {total.tree_hits}/{total.cases} = {total.tree_rate:.1%}, node "
               f"{total.node_hits}/{total.node_cases} = {total.node_rate:.1%}")
    assert total.tree_rate >= FLOOR_TREE, summary
    assert total.node_rate >= FLOOR_NODE, summary
