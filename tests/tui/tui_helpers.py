"""Helpers shared by the TUI tests: the app on the fixture trees, stub and hanging probes."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from trainmedic.probes.base import ProbeResult
from trainmedic.trees import load_forest
from trainmedic.tui.app import TrainmedicApp

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "walk"


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
