"""State tests save into a temporary XDG_STATE_HOME, never the user's own walks."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _state_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
