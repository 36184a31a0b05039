"""Snapshot tests of every main screen at 80x24 and 120x40, on the fixture trees.

Regenerate after an intended change with `.venv/bin/pytest tests/tui --snapshot-update`.
"""

from __future__ import annotations

import pytest
from tui_helpers import gpu_full, make_app

SIZES = pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])


def keys(*presses: str, settle: float = 0.3):
    async def run_before(pilot) -> None:
        await pilot.pause()
        for key in presses:
            await pilot.press(key)
            await pilot.pause()
        await pilot.pause(settle)
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()

    return run_before


@SIZES
def test_home(snap_compare, size):
    assert snap_compare(make_app(), terminal_size=size, run_before=keys())


@SIZES
def test_question_with_evidence(snap_compare, size):
    app = make_app(probe_runner=gpu_full)
    assert snap_compare(app, terminal_size=size, run_before=keys(*"mem", "enter"))


@SIZES
def test_fix(snap_compare, size):
    assert snap_compare(make_app(), terminal_size=size,
                        run_before=keys(*"mem", "enter", "1", "1"))


@SIZES
def test_browse(snap_compare, size):
    assert snap_compare(make_app(), terminal_size=size,
                        run_before=keys("ctrl+b", "down", "enter", "down", "enter", "down"))


@SIZES
def test_help(snap_compare, size):
    assert snap_compare(make_app(), terminal_size=size, run_before=keys("f1"))


def test_question_no_color(snap_compare, monkeypatch):
    """NO_COLOR: the suggestion and probe status still read as words (WARN, suggested)."""
    monkeypatch.setenv("NO_COLOR", "1")
    app = make_app(probe_runner=gpu_full)
    assert app.no_color
    assert snap_compare(app, terminal_size=(80, 24), run_before=keys(*"mem", "enter"))


@SIZES
def test_cluster_view(snap_compare, size, monkeypatch):
    from datetime import UTC, datetime

    from tui_helpers import save_cluster_result

    save_cluster_result()
    monkeypatch.setattr("trainmedic.tui.screens.cluster._now",
                        lambda: datetime(2026, 11, 29, 8, 12, tzinfo=UTC))
    monkeypatch.delenv("SLURM_JOB_NODELIST", raising=False)
    assert snap_compare(make_app(), terminal_size=size, run_before=keys(*"cluster", "enter"))


@SIZES
def test_triage_with_loss_curve(snap_compare, size):
    async def run_before(pilot) -> None:
        await keys("ctrl+t")(pilot)
        log_path = pilot.app.screen.query_one("#log-path")
        log_path.value = "tests/fixtures/tui/megatron_spike_synthesised.log"
        await keys("enter")(pilot)

    app = make_app()
    assert snap_compare(app, terminal_size=size, run_before=run_before)


def test_fix_with_a_marked_command_waiting_for_its_second_key(snap_compare):
    """Issue 13 item 2: the mark sits above the command; `2` asked once shows what a second
    `2` (or `y`) would copy."""
    assert snap_compare(make_app(), terminal_size=(80, 24),
                        run_before=keys(*"hang", "enter", "1", "2"))


def test_question_at_60x20(snap_compare):
    assert snap_compare(make_app(), terminal_size=(60, 20),
                        run_before=keys(*"mem", "enter", "down", "down", "down"))


def test_triage_findings_at_80x24(snap_compare):
    async def run_before(pilot) -> None:
        await keys("ctrl+t")(pilot)
        pilot.app.screen.query_one("#log-path").value = "tests/fixtures/triage/multirank_oom"
        await keys("enter")(pilot)

    assert snap_compare(make_app(), terminal_size=(80, 24), run_before=run_before)


def test_memory_estimate(snap_compare):
    async def run_before(pilot) -> None:
        await keys(*"memory est", "enter")(pilot)
        pilot.app.screen.query_one("#launch").text = \
            "tests/fixtures/memory/megatron_llama3_8b_h100_fp8.sh"
        await keys("ctrl+s", settle=0.5)(pilot)

    assert snap_compare(make_app(), terminal_size=(100, 40), run_before=run_before)
