"""The accuracy floor on the public corpus, over every incident whose expected tree is loaded
(healthy logs count apart: a false alarm on one fails).

Batch 1 (tune and holdout) holds >= 80% node-level and no false alarm on a healthy log, and a
tree-level ratchet; the tune split (the cases signatures were written against) holds its own,
higher level; its holdout split is only reported (in the failure message), never tuned.
Batches 2, 3 and 4 (all held out when collected) hold their own, lower levels and no false
alarm. The target, >= 95% tree-level over all cases, is not reached: the cases left are hangs
with no error that read like a healthy NCCL set-up log, loss and timer formats the readers do
not know, and messages whose words name no tree; the target test is an expected failure that
turns into a failure (strict) the day it passes, so its mark is removed then.
`benchmarks/triage_accuracy.py` prints the numbers by area and group.

With the reported symptom (`triage --symptom`, each case's `reported:` from its thread title;
`unknown` runs log-only, healthy logs always do) the tune and batch-1 holdout groups hold their
own levels, apart from the log-only floors above, which they never replace. A later blind batch
(`holdout-10`, ...) holds the level measured when it came and stays silent on its healthy logs.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import Score, judge, load_cases

FLOOR_TREE, FLOOR_NODE = 0.95, 0.80
# Every level below is over incidents only: healthy logs count apart, as false alarms or not.
# (Until 2026-11-30 a silent healthy log also counted as a tree and a node hit, which lifted
# every rate by the share of healthy logs; the levels were lowered to the same measure without
# healthy logs then, not because triage got worse.)
HELD_TREE = 0.89  # batch 1's tree-level (tune and holdout: 314/352), a ratchet until FLOOR_TREE
# the tune split (the cases signatures were written against): 246/265 tree, 240/263 node; the
# misses left are hangs whose excerpt is only NCCL set-up and labels the message alone cannot
# decide
HELD_TUNE_TREE, HELD_TUNE_NODE = 0.92, 0.91
# Batch 2 was collected after the signatures were written and run blind once (66/103 tree,
# 52/103 node over incidents; 67.5% / 55.3% as first reported, healthy logs as hits); the
# classes of its misses then guided signature work, so it was no longer blind and became tune
# data (group `tune-2`) at 77/103 tree, 65/103 node; a tuning round on it then reached 91/103,
# 87/103, and a reader of verl's step lines 89/103 node. Held so that it can only rise.
HELD_BATCH2_TREE, HELD_BATCH2_NODE = 0.89, 0.87  # 92/103, 90/103 (2026-12-01)
# Batch 3 (101 incidents, 14 healthy logs) was collected and reviewed by people who never saw
# the signatures, and run blind first at 75/101 tree, 59/100 node, no false alarm (with the
# reported symptom 77/101, 59/100). The tuning round on tune and tune-2 that followed (tune-2
# 77 -> 91/103) left it exactly there, as it left the batch-1 holdout (65/87, 57/86): the misses
# of tuned data do not predict those of unseen data. A stop later, after the work on the guess,
# source-mined signatures and silent-log trends, it was at the same 75/101, 59/100; it was then
# opened for a tuning round on node precision (group `tune-3`), batch 4 taking its place as the
# blind measure: 76/101, 60/100 when opened -> 89/101, 84/100 (7 labels set to the node the
# message leads to, not the fix the thread chose: +6 node; general rules and signatures: +13
# tree, +18 node). That round moved the blind groups by one node hit each.
# On 2026-12-01 the rounds on tune-6 and tune-7 took it to 93/101, 89/100 (a Megatron-DeepSpeed
# index-cache case went to the guess's tree when the learned words were relearned with batch 7,
# and came back with a rule).
HELD_BATCH3_TREE, HELD_BATCH3_NODE = 0.92, 0.89
# Batch 4 (87 incidents, 12 healthy logs after review) was collected and reviewed blind like
# batch 3 and run once on the code of the stop before (72/87 tree, 49/79 node, one false alarm:
# ZeRO-3's trace-cache warning in a healthy dense-model run), then on this stop's code (74/87,
# 51/79, the same false alarm). Fixing that false alarm (the warning leads only when the run is
# in trouble) silenced one batch-4 and one batch-3 incident whose excerpt is that warning alone:
# 73/87, 50/79, 0 false alarms; after the tuning round on batch 3, 73/87, 51/79. Nobody has
# tuned on it (one signature title was reworded when this test's batch-4 ratchet failed) until
# it was opened for a tuning round (group `tune-4`), batch 5 taking its place as the blind
# measure. Its two tuning rounds (node precision, following the trees' own questions; 3 labels
# moved to the node the tree routes the message to) took it from 74/87, 55/79 (the learned words
# relearned with it) to 83/87, 74/80, and moved the blind groups by -1 node each.
# 2026-12-01: 83/87, 75/80 (an OOM inside Adam's update is the optimizer state's node).
HELD_BATCH4_TREE, HELD_BATCH4_NODE = 0.95, 0.93
# Batch 5 (91 incidents, 12 healthy logs after review; a second blind labeller agrees with the
# first on 86/91 trees and 82/91 nodes) was collected and reviewed blind, and run once on the
# code of the stop before (62/91 tree, 49/91 node, one false alarm: NCCL's socket fall-back on a
# healthy single-GPU run). Two fixes it showed (that false alarm; a log whose only error is a
# logger's ERROR line was called clean) and this stop's tuning rounds on batch 4: 64/91, 49/91,
# 0 false alarms (with the reported symptom 69/91, 49/91). It was then opened for a tuning round
# (group `tune-5`), batch 6 taking its place as the blind measure: 64/91, 53/91 once the learned
# words knew it; its two tuning rounds reached 80/91, 72/91 (with the symptom 84/91, 74/91) and
# moved batch 6 by +1 tree, +1 node.
# 2026-12-01: 80/91, 74/91 (detectron2#1563's backward OOM with 5.5 GiB cached but unusable is
# fragmentation, by the tree's order; two tune labels that said otherwise were moved with it).
HELD_BATCH5_TREE, HELD_BATCH5_NODE = 0.87, 0.81
# Batch 6 (90 incidents, 12 healthy logs after review; a third person's blind labels agree with
# the first on 81/90 trees and 73/90 nodes) was collected and reviewed blind, and run once on the
# code of the stop before (58/90 tree, 47/90 node, no false alarm; with the reported symptom
# 65/90, 47/90), then on this stop's code before the rounds on batch 5 (59/90, 46/90), after them
# (60/90, 47/90) and after two duplicate fixes were merged into one node each (61/90, 48/90; with
# the symptom 68/90, 48/90). Nobody had tuned on it until it was opened for a tuning round
# (group `tune-6`) on 2026-12-01, batch 7 taking its place as the blind measure: 63/90, 53/90
# once the learned words knew it; its two tuning rounds (infra and model trees) reached 73/90,
# 66/90 (with the symptom 80/90, 67/90) and moved batch 7, then blind, by nothing.
HELD_BATCH6_TREE, HELD_BATCH6_NODE = 0.81, 0.73
# Batch 7 (89 cases collected blind by three people on 2026-12-01; the blind review removed one
# duplicate incident: 78 incidents, 21 of them with the tree only (TREE#?), 10 healthy logs; a
# fourth person's blind labels agree with the first on 69/78 trees and 50/54 nodes) was run
# once on the code of the stop before (50/78 tree, 28/57 node, no false alarm; with the reported
# symptom 54/78, 28/57) and on this stop's code after the rounds on tune-6: the same. Nobody had
# tuned on it until it was opened for a tuning round (group `tune-7`) the same day, batch 8
# taking its place as the blind measure: 51/78, 29/57 once the learned words knew it; the guess's
# reweighting (below) and its two tuning rounds reached 65/78, 41/57 (with the symptom 68/78,
# 41/57).
HELD_BATCH7_TREE, HELD_BATCH7_NODE = 0.87, 0.80  # 68/78, 46/57 after the tune-8/9 rounds
# Batch 8 (47 cases collected blind by three people on 2026-12-01, when the public threads the
# search reaches were mostly in the corpus already; the blind review dropped a repeat of a batch-1
# thread: 39 incidents, 9 with the tree only, 7 healthy logs; a fifth person's blind labels agree
# with the first on 37/39 trees and 27/29 nodes) was run once on the code of the stop before and
# on this stop's code after the rounds on tune-6: 23/39 tree, 16/30 node both times (with the
# reported symptom 26/39, 16/30), then after the guess's reweighting (chosen by cross-validation
# on tune data only) and the rounds on tune-7: 24/39, 16/30 (with the symptom 27/39, 16/30).
# Then opened for tuning rounds (group `tune-8`) on 2026-12-01, batch 9 being collected blind
# as the next measure.
# After its two rounds: 31/39, 25/30 (with the symptom 34/39, 25/30).
HELD_BATCH8_TREE, HELD_BATCH8_NODE = 0.79, 0.83
# Batch 9 (48 cases collected blind by three people on 2026-12-01, reviewed blind: 42 incidents,
# 4 with the tree only, 6 healthy logs; a sixth person's blind labels agree with the first on
# 41/42 trees and 35/37 nodes) was run once on the code of the stop before and once on this
# stop's code before its tuning rounds were merged: 29/42 tree, 19/38 node both times (with the
# reported symptom 31/42, 19/38); 20/38 node after the first round on tune-8, the second moving
# nothing. Then opened for tuning rounds (group `tune-9`), batches 10 and 11 the blind measures.
# After its two rounds: 40/42, 32/38 (with the symptom 41/42, 32/38).
HELD_BATCH9_TREE, HELD_BATCH9_NODE = 0.95, 0.84
# Batch 10 (50 cases collected blind by three people on 2026-12-01, reviewed blind: 44
# incidents, 6 with the tree only, 4 healthy logs; a seventh person's blind labels, given the
# corpus's settled labelling rules, agree with the first on 42/44 trees and 34/34 nodes) was run
# once on the code of the stop before and once on this stop's code after the first tuning round
# on tune-8: 28/44 tree, 18/38 node both times (with the reported symptom 34/44, 18/38). Nobody
# has tuned on it.
HELD_BATCH10_TREE, HELD_BATCH10_NODE = 0.63, 0.47
# Batch 11 (49 cases collected blind by three people on 2026-12-01, reviewed blind: 45
# incidents, 5 with the tree only, 4 healthy logs; an eighth person's blind labels agree with the
# first on 42/45 trees and 27/32 nodes) was run once on the code of the stop before (30/45 tree,
# 23/40 node) and once on this stop's code after both rounds on tune-8 (30/45, 24/40; with the
# reported symptom 36/45, 24/40). Both runs raised one false alarm, on a healthy fp16 run whose
# first two skipped steps logged an inf loss (tensorboardX's "NaN or Inf found in input tensor"
# beside the scaler's start-up search); that rule was then made (test_logged_nonfinite.py), the
# only change made from a holdout case. Nobody has tuned on the rest. One label named the moe
# tree's question (moe#slow), not a fix: set to moe#? afterwards (node 24/39).
HELD_BATCH11_TREE, HELD_BATCH11_NODE = 0.66, 0.61
# With the reported symptom: the tune split was the only one looked at while the symptom's rules
# were written; today 259/265 tree, 250/263 node; the holdout groups were run with it once, at
# the end (see the benchmark's second table). Ratchets: they can only rise.
HELD_SAID_TUNE_TREE, HELD_SAID_TUNE_NODE = 0.97, 0.95
# batch-1 holdout 70/87 tree, 60/86 node (log only 66/87, 59/86); batch 2 94/103, 91/103
# (log only 91/103, 89/103); batch 3 91/101, 84/100 (log only 89/101, 84/100); batch 4
# 76/87, 51/79 (log only 73/87, 51/79). The batch-1 holdout's node level with the symptom went
# from 60/86 to 59/86 when Megatron's "found NaN in local grad norm" check moved from
# loss-spike#nan-source to the nan-loss question it leads to (the message does not say when the
# NaN began; decided on tune cases, and two tune labels already said nan-loss): 0.69 -> 0.68.
# 2026-12-01: 71/87, 62/86 (log only 67/87, 61/86), the guess's reweighting and an OOM rule.
# 2026-12-01, second session: 72/87, 62/86 (log only 68/87, 61/86: one blind case moved with
# the tune-9 rounds).
HELD_SAID_HOLDOUT_TREE, HELD_SAID_HOLDOUT_NODE = 0.82, 0.72
HELD_SAID_BATCH2_TREE, HELD_SAID_BATCH2_NODE = 0.92, 0.89
HELD_SAID_BATCH3_TREE, HELD_SAID_BATCH3_NODE = 0.94, 0.90
HELD_SAID_BATCH4_TREE, HELD_SAID_BATCH4_NODE = 0.98, 0.93
HELD_SAID_BATCH5_TREE, HELD_SAID_BATCH5_NODE = 0.92, 0.83
HELD_SAID_BATCH6_TREE, HELD_SAID_BATCH6_NODE = 0.88, 0.74
HELD_SAID_BATCH7_TREE, HELD_SAID_BATCH7_NODE = 0.89, 0.80
HELD_SAID_BATCH8_TREE, HELD_SAID_BATCH8_NODE = 0.87, 0.83
HELD_SAID_BATCH9_TREE, HELD_SAID_BATCH9_NODE = 0.97, 0.84
HELD_SAID_BATCH10_TREE, HELD_SAID_BATCH10_NODE = 0.77, 0.47
HELD_SAID_BATCH11_TREE, HELD_SAID_BATCH11_NODE = 0.80, 0.61
NEW_TREES = ("checkpoint", "scheduler", "compile", "sharding", "moe", "containers",
             "data-pipeline")


@pytest.fixture(scope="module")
def routed() -> list[tuple[object, list[str]]]:
    """Every case whose tree is loaded, with the links of triage's findings on its excerpt."""
    from trainmedic.trees.forest import load_forest
    from trainmedic.triage import triage_text

    trees = {tid: set(t.nodes) for tid, t in load_forest().trees.items()}
    out = []
    for case in load_cases():
        if not case.healthy and case.tree not in trees:
            continue
        out.append((case, [f.link for f in triage_text(case.excerpt, name=case.name).findings]))
    return out


@pytest.fixture(scope="module")
def routed_with_symptom(routed) -> list[tuple[object, list[str]]]:
    """The same cases, each run with the symptom its thread's author reported (log only where
    that is unknown, and for healthy logs)."""
    from trainmedic.triage import triage_text

    out = []
    for case, links in routed:
        if not case.healthy and case.reported != "unknown":
            links = [f.link for f in triage_text(case.excerpt, name=case.name,
                                                 symptom=case.reported).findings]
        out.append((case, links))
    return out


def _groups(routed) -> dict[str, Score]:
    from trainmedic.trees.forest import load_forest

    trees = {tid: set(t.nodes) for tid, t in load_forest().trees.items()}
    groups: dict[str, Score] = {"batch 1": Score(), "all": Score(), "tune": Score(),
                                "holdout": Score(), "tune-2": Score()}
    for case, links in routed:
        score = judge(case, links, trees)
        assert score is not None
        groups["all"].add(score)
        groups.setdefault(case.group, Score()).add(score)
        if case.batch == "1":
            groups["batch 1"].add(score)
    return groups


@pytest.fixture(scope="module")
def splits(routed) -> dict[str, Score]:
    return _groups(routed)


@pytest.fixture(scope="module")
def said(routed_with_symptom) -> dict[str, Score]:
    return _groups(routed_with_symptom)


@pytest.fixture(scope="module")
def total(splits) -> Score:
    return splits["batch 1"]


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


@pytest.mark.parametrize(("group", "tree", "node"), [
    ("tune-2", HELD_BATCH2_TREE, HELD_BATCH2_NODE),
    ("tune-3", HELD_BATCH3_TREE, HELD_BATCH3_NODE),
    ("tune-4", HELD_BATCH4_TREE, HELD_BATCH4_NODE),
    ("tune-5", HELD_BATCH5_TREE, HELD_BATCH5_NODE),
    ("tune-6", HELD_BATCH6_TREE, HELD_BATCH6_NODE),
    ("tune-7", HELD_BATCH7_TREE, HELD_BATCH7_NODE),
    ("tune-8", HELD_BATCH8_TREE, HELD_BATCH8_NODE),
    ("tune-9", HELD_BATCH9_TREE, HELD_BATCH9_NODE),
    ("holdout-10", HELD_BATCH10_TREE, HELD_BATCH10_NODE),
    ("holdout-11", HELD_BATCH11_TREE, HELD_BATCH11_NODE),
])
def test_later_batches_hold_their_level_and_stay_silent_on_healthy_logs(splits, group, tree,
                                                                        node):
    batch = splits[group]
    # batch 8 is the smallest (39 incidents); batch 10 has the fewest healthy logs (4)
    assert batch.cases >= 35 and batch.healthy >= 4, _summary(batch)
    assert batch.false_alarms == 0, [m for m in batch.misses if "false alarm" in m]
    assert batch.tree_rate >= tree, _summary(batch)
    assert batch.node_rate >= node, _summary(batch)


def test_with_the_reported_symptom_tune_holds_its_level(said, splits):
    tune = said["tune"]
    report = f"with the symptom: {_summary(tune)}; log only: {_summary(splits['tune'])}"
    assert tune.cases >= 100 and tune.false_alarms == 0, report
    assert tune.tree_rate >= HELD_SAID_TUNE_TREE, report
    assert tune.node_rate >= HELD_SAID_TUNE_NODE, report


@pytest.mark.parametrize(("group", "tree", "node"), [
    ("holdout", HELD_SAID_HOLDOUT_TREE, HELD_SAID_HOLDOUT_NODE),
    ("tune-2", HELD_SAID_BATCH2_TREE, HELD_SAID_BATCH2_NODE),
    ("tune-3", HELD_SAID_BATCH3_TREE, HELD_SAID_BATCH3_NODE),
    ("tune-4", HELD_SAID_BATCH4_TREE, HELD_SAID_BATCH4_NODE),
    ("tune-5", HELD_SAID_BATCH5_TREE, HELD_SAID_BATCH5_NODE),
    ("tune-6", HELD_SAID_BATCH6_TREE, HELD_SAID_BATCH6_NODE),
    ("tune-7", HELD_SAID_BATCH7_TREE, HELD_SAID_BATCH7_NODE),
    ("tune-8", HELD_SAID_BATCH8_TREE, HELD_SAID_BATCH8_NODE),
    ("tune-9", HELD_SAID_BATCH9_TREE, HELD_SAID_BATCH9_NODE),
    ("holdout-10", HELD_SAID_BATCH10_TREE, HELD_SAID_BATCH10_NODE),
    ("holdout-11", HELD_SAID_BATCH11_TREE, HELD_SAID_BATCH11_NODE),
])
def test_with_the_reported_symptom_the_holdout_groups_hold_their_level(said, splits, group,
                                                                       tree, node):
    held = said[group]
    report = f"with the symptom: {_summary(held)}; log only: {_summary(splits[group])}"
    assert held.cases >= 35 and held.false_alarms == 0, report
    assert held.tree_rate >= tree, report
    assert held.node_rate >= node, report


def test_later_blind_batches_stay_silent_on_healthy_logs(splits, said):
    """Every blind batch (holdout-10 and after, with a level or not yet): no false alarm, log only
    or with the symptom."""
    later = sorted(g for g in splits if g.startswith("holdout-"))
    if not later:
        pytest.skip("no blind batch in the corpus")
    for group in later:
        assert splits[group].false_alarms == 0, (group, _summary(splits[group]))
        assert said[group].false_alarms == 0, (group, _summary(said[group]))


@pytest.mark.parametrize("tree_id", NEW_TREES)
def test_triage_routes_at_least_eight_real_cases_into_each_new_tree(routed, tree_id):
    """Issue 14: every new tree is reached from real logs, not only from its questions."""
    into = [case.name for case, links in routed
            if case.tree == tree_id and links and links[0].partition("#")[0] == tree_id]
    assert len(into) >= 8, (tree_id, len(into))


@pytest.mark.xfail(strict=True, reason="tree-level is below 95% (silent hangs, unread formats)")
def test_floor_tree_level(splits):
    assert splits["all"].tree_rate >= FLOOR_TREE, _summary(splits["all"])
