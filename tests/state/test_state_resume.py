"""A walk saved after every step resumes exactly where it stopped (engine: trainmedic.walk)."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainmedic.state import find_walk, save_walk
from trainmedic.trees import load_forest

walk = pytest.importorskip("trainmedic.walk", reason="the walk engine is not in this checkout")
EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"


def test_save_after_each_step_then_resume_gives_the_same_session():
    forest = load_forest([EXAMPLES], builtin=False)
    session = walk.WalkSession(forest, "disk-full")
    save_walk(session.to_dict())
    session.answer(2)  # something else -> other-tree-link
    save_walk(session.to_dict())
    session.answer(1)  # all ranks stopped -> example-hang#all-stopped
    session.launch_command = "torchrun --nproc-per-node 8 pretrain_gpt.py"
    save_walk(session.to_dict())
    saved, skipped = find_walk(None)
    assert skipped == [] and saved is not None and saved.id == session.id
    resumed = walk.WalkSession.from_dict(forest, saved.data)
    assert resumed.to_dict() == session.to_dict()
    assert str(resumed.current) == "example-hang#all-stopped" and resumed.finished
