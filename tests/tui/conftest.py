"""TUI tests run the app headless on the small fixture trees, with fake probes and triage."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from trainmedic.probes.base import ProbeResult
from trainmedic.trees import load_forest
from trainmedic.tui.app import TrainmedicApp

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "walk"


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    """Saved walks go to a temporary state dir; cursors do not blink (stable snapshots)."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setattr("textual.widgets._input.Input._toggle_cursor", lambda self: None)
    monkeypatch.setattr("textual.widgets._text_area.TextArea._toggle_cursor_blink_visible",
                        lambda self: None)


def fixture_forest():
    forest = load_forest([FIXTURES], builtin=False)
    assert not forest.errors, forest.errors
    return forest


def gpu_full(_names=None):
    """A stub probe result: one GPU nearly full (suggests answer 3 of mem#when)."""
    return [ProbeResult("gpu", "warn", "GPU 3 at 99 % memory",
                        facts={"max_memory_fraction": 0.99},
                        evidence={"max_memory_fraction": "GPU 3: 79.4 of 80.0 GiB used"})]


def make_app(**kwargs) -> TrainmedicApp:
    kwargs.setdefault("probes", False)
    return TrainmedicApp(fixture_forest(), **kwargs)


class HangingProbes:
    """A probe runner that blocks until released: the UI must keep answering meanwhile."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.calls: list[list[str] | None] = []

    def __call__(self, names):
        self.calls.append(names)
        self.release.wait(30)
        return gpu_full(names)


def run(coro):
    return asyncio.run(coro)
