"""Path completion in the file-name fields (triage log, report, runbook export)."""

from __future__ import annotations

from textual.widgets import TextArea
from tui_helpers import make_app, run

from trainmedic.tui.widgets.pathinput import complete_path


def _tree(tmp_path):
    logs = tmp_path / "runs" / "llama-70b" / "logs"
    logs.mkdir(parents=True)
    for name in ("rank0.log", "rank1.log", ".hidden"):
        (logs / name).write_text("x\n")
    return logs


def test_complete_path_extends_to_what_the_entries_share(tmp_path, monkeypatch):
    logs = _tree(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert complete_path("ru") == "runs/"  # a folder gets its slash
    assert complete_path("runs/ll") == "runs/llama-70b/"
    assert complete_path(f"{logs}/") == f"{logs}/rank"  # shared by rank0 and rank1, not .hidden
    assert complete_path(f"{logs}/rank1") == f"{logs}/rank1.log"
    assert complete_path(f"{logs}/.h") == f"{logs}/.hidden"
    assert complete_path("nothing-like-this") is None


def test_tab_completes_the_log_path_then_moves_on(tmp_path, monkeypatch):
    logs = _tree(tmp_path)
    monkeypatch.chdir(tmp_path)

    async def go():
        app = make_app()
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.press("ctrl+t")
            await pilot.pause()
            field = app.screen.query_one("#log-path")
            await pilot.press(*"runs/ll")
            await pilot.pause(0.3)
            await pilot.press("tab")
            assert field.value == "runs/llama-70b/"
            await pilot.press(*"logs/rank1")
            await pilot.pause(0.3)
            await pilot.press("tab")
            assert field.value == "runs/llama-70b/logs/rank1.log"
            assert (logs / "rank1.log").is_file()
            await pilot.pause(0.3)
            await pilot.press("tab")  # nothing more to complete: on to the paste box
            assert isinstance(app.focused, TextArea)
    run(go())
