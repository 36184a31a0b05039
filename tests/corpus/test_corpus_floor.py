"""The accuracy floor on the public corpus, over every case whose expected tree is loaded
(tune and holdout; new trees bring their cases in as soon as they load):
>= 80% node-level and no false alarm on a healthy log (held), >= 95% tree-level (the target).

The tree-level target is not reached yet: the cases left are a hang with no error that reads
exactly like a healthy NCCL set-up log, loss and timer formats the loss readers do not know yet,
and throughput judgements (see the final report of issue 15). The held line below is today's
level, so it can only rise; the target test is an expected failure that turns into a failure
(strict) the day it passes, so its mark is removed then. The tune split (the cases signatures
were written against) holds its own, higher level; the holdout split is only ever reported (in
the failure message), never tuned. `benchmarks/triage_accuracy.py` prints the numbers by area.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import Score, judge, load_cases

FLOOR_TREE, FLOOR_NODE = 0.95, 0.80
HELD_TREE = 0.86  # today's tree-level (all 17 trees), a ratchet until FLOOR_TREE holds
HELD_TUNE_TREE, HELD_TUNE_NODE = 0.93, 0.89  # today's level on the tune split


@pytest.fixture(scope="module")
def splits() -> dict[str, Score]:
    from trainmedic.trees.forest import load_forest
    from trainmedic.triage import triage_text

    trees = {tid: set(t.nodes) for tid, t in load_forest().trees.items()}
    by_split: dict[str, Score] = {"all": Score(), "tune": Score(), "holdout": Score()}
    for case in load_cases():
        if not case.healthy and case.tree not in trees:
            continue
        links = [f.link for f in triage_text(case.excerpt, name=case.name).findings]
        score = judge(case, links, trees)
        assert score is not None
        by_split["all"].add(score)
        by_split.setdefault(case.split, Score()).add(score)
    return by_split


@pytest.fixture(scope="module")
def total(splits) -> Score:
    return splits["all"]


def _summary(total: Score) -> str:
    return (f"tree {total.tree_hits}/{total.cases} = {total.tree_rate:.1%}, node "
            f"{total.node_hits}/{total.node_cases} = {total.node_rate:.1%}")


def test_floor_node_level_and_no_false_alarm(total):
    assert total.cases >= 150
    assert total.false_alarms == 0, [m for m in total.misses if "false alarm" in m]
    assert total.node_rate >= FLOOR_NODE, _summary(total)
    assert total.tree_rate >= HELD_TREE, _summary(total)


def test_tune_split_holds_its_level(splits):
    tune, holdout = splits["tune"], splits["holdout"]
    report = f"tune: {_summary(tune)}; holdout (reported only): {_summary(holdout)}"
    assert tune.cases >= 100, report
    assert tune.false_alarms == 0, report
    assert tune.tree_rate >= HELD_TUNE_TREE, report
    assert tune.node_rate >= HELD_TUNE_NODE, report


@pytest.mark.xfail(strict=True, reason="tree-level is below 95% (silent hangs, unread formats)")
def test_floor_tree_level(total):
    assert total.tree_rate >= FLOOR_TREE, _summary(total)
