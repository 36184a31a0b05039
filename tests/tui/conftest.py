"""TUI tests run the app headless on the small fixture trees, with fake probes and triage."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    """Saved walks go to a temporary state dir; cursors do not blink (stable snapshots)."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr("textual.widgets._input.Input._toggle_cursor", lambda self: None)
    monkeypatch.setattr("textual.widgets._text_area.TextArea._toggle_cursor_blink_visible",
                        lambda self: None)
