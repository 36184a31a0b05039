"""A walk saved before two duplicate fixes were merged still resumes, at the node kept."""

from __future__ import annotations

import json

import pytest

from trainmedic import walk
from trainmedic.errors import UsageError
from trainmedic.saved_walks import WalkRecord
from trainmedic.trees import load_forest
from trainmedic.trees.moved import MOVED


@pytest.fixture(scope="module")
def forest():
    return load_forest()


def test_every_moved_node_is_gone_and_its_heir_exists(forest):
    for old, new in MOVED.items():
        old_tree, old_node = old.split("#")
        assert old_node not in forest.trees[old_tree].nodes, old
        new_tree, new_node = new.split("#")
        assert new_node in forest.trees[new_tree].nodes, new


def _saved_before_the_merge(forest, question: str, kept: str, old: str) -> dict:
    """A walk that took the answer now leading to `kept`, written as the old version saved it."""
    session = walk.WalkSession(forest, question)
    index = next(i for i, a in enumerate(session.question.answers) if a.goto == kept)
    session.answer(index)
    assert str(session.current) == kept
    data = session.to_dict()
    data["stack"] = []  # the old node was in the same tree: no link was followed
    data["tried"] = [{"node": kept, "title": "t", "question": question, "answer": index}]
    return json.loads(json.dumps(data).replace(f'"{kept}"', f'"{old}"'))


@pytest.mark.parametrize(("old", "kept"), sorted(MOVED.items()))
def test_a_walk_that_names_a_merged_node_resumes_at_the_kept_one(forest, old, kept):
    data = _saved_before_the_merge(forest, "nccl-hang#nccl-error", kept, old)
    assert data["current"] == old and data["steps"][-1]["goto"] == old
    with pytest.raises(UsageError):  # what the trees alone say about the old id
        forest.parse_ref(old)
    record = WalkRecord.from_dict(data)
    assert record.problems == []
    session = walk.WalkSession.from_record(forest, record)
    assert str(session.current) == kept and session.finished
    assert session.steps[-1].goto == kept and session.tried[0].node == kept


def test_an_unknown_node_that_was_never_merged_is_still_refused(forest):
    data = _saved_before_the_merge(forest, "nccl-hang#nccl-error", "containers#dev-shm-size",
                                   "nccl-hang#no-such-node")
    with pytest.raises(UsageError, match="no node 'no-such-node'"):
        walk.WalkSession.from_record(forest, WalkRecord.from_dict(data))
