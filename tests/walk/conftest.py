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
