"""Walk tests load only the small fixture trees, and save walks into a temporary state dir."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainmedic.trees import load_forest

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "walk"


@pytest.fixture(autouse=True)
def _state_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))


@pytest.fixture
def forest():
    loaded = load_forest([FIXTURES], builtin=False)
    assert not loaded.errors, loaded.errors
    return loaded


@pytest.fixture
def no_builtin(tmp_path, monkeypatch):
    """The CLI with only the fixture trees: built-in knowledge changes must not move these tests."""
    empty = tmp_path / "no-builtin"
    empty.mkdir()
    monkeypatch.setattr("trainmedic.trees.forest.builtin_tree_dir", lambda: empty)
    return ["--trees", str(FIXTURES)]
