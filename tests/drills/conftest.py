"""Drill tests: their own state folder (progress), and a few shared helpers."""

from __future__ import annotations

import pytest
from drill_helpers import CORPUS


@pytest.fixture(autouse=True)
def _private_state(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


@pytest.fixture(scope="session")
def forest():
    from trainmedic.trees import load_forest

    loaded = load_forest()
    assert not loaded.errors, loaded.errors
    return loaded


@pytest.fixture(scope="session")
def cases():
    from trainmedic.drills.cases import load_cases

    found, skipped = load_cases(CORPUS)
    assert not skipped, skipped
    return found
