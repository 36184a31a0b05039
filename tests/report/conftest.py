"""Report tests: the walk from report_session.py, saved into a temporary XDG_STATE_HOME."""

from __future__ import annotations

import pytest
from report_session import EXAMPLES, session_dict

from trainmedic.trees import load_forest


@pytest.fixture
def session():
    return session_dict()


@pytest.fixture(scope="session")
def forest():
    loaded = load_forest([EXAMPLES], builtin=False)
    assert not loaded.errors, loaded.errors
    return loaded


@pytest.fixture(autouse=True)
def _state_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
