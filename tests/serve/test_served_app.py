"""The app, when served (TRAINMEDIC_SERVED_ON set by `trainmedic serve`), says where probes run;
in a terminal it says nothing of the kind."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from textual.widgets import Static

from trainmedic.probes.base import ProbeResult
from trainmedic.trees import load_forest
from trainmedic.tui.app import TrainmedicApp
from trainmedic.tui.served import SERVED_ON_ENV

TREES = Path(__file__).resolve().parents[1] / "fixtures" / "serve"


def no_gpu(_names=None):
    return [ProbeResult("gpu", "unavailable", "nvidia-smi not found")]


async def titles(tmp_path, monkeypatch, served_on: str | None) -> tuple[str, str]:
    """The home screen's and the probes screen's title bars."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    if served_on is None:
        monkeypatch.delenv(SERVED_ON_ENV, raising=False)
    else:
        monkeypatch.setenv(SERVED_ON_ENV, served_on)
    app = TrainmedicApp(load_forest([TREES], builtin=False), probe_runner=no_gpu)
    async with app.run_test(size=(120, 30)) as pilot:
        home = str(app.screen.query_one("#titlebar", Static).render())
        app.action_probes()
        await pilot.pause()
        probes = str(app.screen.query_one("#titlebar", Static).render())
    return home, probes


@pytest.mark.parametrize("served_on", ["login01", None])
def test_the_title_bars_say_where_probes_run(tmp_path, monkeypatch, served_on) -> None:
    home, probes = asyncio.run(titles(tmp_path, monkeypatch, served_on))
    if served_on:
        assert "probes run on login01 (served)" in home
        assert probes.startswith("Probes  login01, the server: GPUs")
    else:
        assert "probes run on" not in home and "served" not in home
        assert probes.startswith("Probes  this machine: GPUs")
