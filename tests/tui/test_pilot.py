"""Keyboard-only walks through the real app (headless), asserting engine state and saved walks."""

from __future__ import annotations

import json
from pathlib import Path

from textual import events
from textual.widgets import OptionList, Static, Tree
from tui_helpers import HangingProbes, gpu_full, make_app, run, screen_text

from trainmedic.saved_walks import list_walks
from trainmedic.state import walks_dir
from trainmedic.tui.dialogs.help import HelpScreen
from trainmedic.tui.screens.browse import BrowseScreen
from trainmedic.tui.screens.home import HomeScreen
from trainmedic.tui.screens.triage import TriageScreen
from trainmedic.tui.screens.walk import WalkScreen
from trainmedic.tui.widgets.evidence import EvidencePanel


def _current(app) -> str:
    assert isinstance(app.screen, WalkScreen)
    return str(app.screen.session.current)


def _shown(app) -> list[str]:
    """The home list's trees, actions and walks (node hits of the search come after them)."""
    return [e.key for e in app.screen.shown if not e.key.startswith("node:")]


def _panel(app) -> str:
    return app.screen.query_one(EvidencePanel).text.plain


def test_filter_home_list_by_typing():
    async def go():
        app = make_app()
        async with app.run_test() as pilot:
            await pilot.pause()
            assert isinstance(app.screen, HomeScreen)
            assert {"tree:mem", "tree:hang", "action:triage"} <= set(_shown(app))
            await pilot.press(*"froze")
            await pilot.pause()
            assert _shown(app) == ["tree:hang"]
            await pilot.press("escape")
            await pilot.pause()
            assert "tree:mem" in _shown(app)
            await pilot.press(*"zzzz")
            await pilot.pause()
            assert _shown(app) == []
            assert "Nothing matches" in str(app.screen.query_one("#detail", Static).render())
    run(go())


def test_walk_to_fix_by_keys_back_and_restart():
    async def go():
        app = make_app()
        async with app.run_test() as pilot:
            await pilot.press(*"mem", "enter")
            await pilot.pause()
            assert _current(app) == "mem#when"
            await pilot.press("1")
            await pilot.pause()
            assert _current(app) == "mem#shrink"
            await pilot.press("2")
            await pilot.pause()
            assert _current(app) == "mem#recompute"
            saved = list_walks()[0][0].record.to_dict()
            assert saved["current"] == "mem#recompute" and saved["finished"] is True
            assert [s["answer"] for s in saved["steps"]] == [0, 1]
            await pilot.press("escape")
            await pilot.pause()
            assert _current(app) == "mem#shrink"
            answers = app.screen.query_one("#answers", OptionList)
            assert answers.highlighted == 1  # back: the answer given is highlighted
            await pilot.press("up", "down", "enter")  # the highlighted answer, chosen with enter
            await pilot.pause()
            assert _current(app) == "mem#recompute"
            await pilot.press("n")  # this did not help
            await pilot.pause()
            assert _current(app) == "mem#shrink"
            await pilot.press("r")
            await pilot.pause()
            assert _current(app) == "mem#when"
            saved = list_walks()[0][0].record.to_dict()
            assert saved["steps"] == [] and saved["tried"][0]["node"] == "mem#recompute"
            await pilot.press("escape")  # esc right after r: the restart is undone
            await pilot.pause()
            assert _current(app) == "mem#shrink" and len(app.screen.session.steps) == 1
            await pilot.press("escape", "escape")  # then back, and back at the first: home
            await pilot.pause()
            assert isinstance(app.screen, HomeScreen)
    run(go())


def test_breadcrumb_drops_old_steps_not_the_current_node():
    async def go():
        app = make_app()
        async with app.run_test(size=(40, 20)) as pilot:
            await pilot.press(*"mem", "enter", "1", "2")
            await pilot.pause()
            assert _current(app) == "mem#recompute"
            assert screen_text(app)[0].strip() == "Out of GPU memory  … › recompute"
            await pilot.resize_terminal(60, 20)
            await pilot.pause()
            assert screen_text(app)[0].strip() == "Out of GPU memory  when › shrink › recompute"
    run(go())


def test_cross_tree_link_and_return():
    async def go():
        app = make_app()
        async with app.run_test() as pilot:
            await pilot.press(*"mem", "enter", "4")
            await pilot.pause()
            assert _current(app) == "hang#stuck"
            assert app.screen.session.stack == ["mem#when"]
            await pilot.press("2")
            await pilot.pause()
            assert _current(app) == "hang#collective"
            await pilot.press("u")
            await pilot.pause()
            assert _current(app) == "mem#when" and app.screen.session.stack == []
    run(go())


def test_copy_commands_to_clipboard():
    async def go():
        app = make_app()
        async with app.run_test() as pilot:
            await pilot.press(*"mem", "enter", "2")
            await pilot.pause()
            assert _current(app) == "mem#leak"
            await pilot.press("2")
            await pilot.pause()
            assert app.clipboard == 'torch.cuda.memory._dump_snapshot("snap.pickle")'
            await pilot.press("c")  # the focused (first) block
            assert app.clipboard == ("import torch\n"
                                     "torch.cuda.memory._record_memory_history()")
            await pilot.press("tab", "c")
            assert app.clipboard == 'torch.cuda.memory._dump_snapshot("snap.pickle")'
    run(go())


def test_copy_in_tmux_says_how_to_let_it_through(monkeypatch):
    """tmux drops OSC 52 unless set-clipboard is on: the toast must not promise a paste."""
    monkeypatch.setenv("TMUX", "/tmp/tmux-0/default,1,0")

    async def go():
        app = make_app()
        async with app.run_test(notifications=True) as pilot:
            await pilot.press(*"mem", "enter", "2", "1")
            await pilot.pause()
            assert app.clipboard.startswith("import torch")
            assert any("set-clipboard on" in n.message for n in app._notifications)
    run(go())


def test_restart_is_offered_only_once_there_is_an_answer_to_undo():
    async def go():
        app = make_app()
        async with app.run_test(size=(100, 24)) as pilot:
            await pilot.press(*"mem", "enter")
            await pilot.pause()
            titles = {c.title for c in app.get_system_commands(app.screen)}
            assert "Restart" not in titles
            await pilot.press("1")
            await pilot.pause()
            titles = {c.title for c in app.get_system_commands(app.screen)}
            assert "Restart" in titles
    run(go())


def test_ui_keeps_responding_while_a_probe_hangs():
    async def go():
        probes = HangingProbes()
        app = make_app(probe_runner=probes)
        try:
            async with app.run_test() as pilot:
                await pilot.press(*"mem", "enter")
                await pilot.pause(0.2)
                assert probes.calls == [["memory", "gpu"]]
                assert "running memory, gpu" in _panel(app)
                await pilot.press("1")
                await pilot.pause()
                assert _current(app) == "mem#shrink"
                await pilot.press("escape", "down", "up")
                await pilot.pause()
                assert _current(app) == "mem#when"
                assert not probes.release.is_set()  # still hanging, and the app answered
                probes.release.set()
                await pilot.pause(0.3)
                await pilot.pause()
                assert "GPU 3: 79.4 of 80.0 GiB used" in _panel(app)
        finally:
            probes.release.set()
    run(go())


def test_probe_suggestion_is_marked_and_recorded():
    async def go():
        app = make_app(probe_runner=gpu_full)
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.press(*"mem", "enter")
            await pilot.pause(0.3)
            options = app.screen.query_one("#answers", OptionList)
            assert app.screen.suggested_index == 2
            assert "★" in app.export_screenshot()  # the mark is on screen, not only in state
            assert options.highlighted == 0  # the person still chooses
            await pilot.press("3")
            await pilot.pause()
            step = list_walks()[0][0].record.to_dict()["steps"][0]
            assert step["suggested"] == 2
            assert any("GPU 3: 79.4 of 80.0 GiB used" in e for e in step["evidence"])
            assert list_walks()[0][0].record.to_dict()["probes"][0]["name"] == "gpu"
    run(go())


def test_browse_outline_search_and_walk_from_node():
    async def go():
        app = make_app()
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.press("ctrl+b")
            await pilot.pause()
            assert isinstance(app.screen, BrowseScreen)
            outline = app.screen.query_one("#outline", Tree)
            labels = [str(n.label) for n in outline.root.children]
            assert any(label.startswith("mem") for label in labels)
            await pilot.press("slash", *"recomputation")
            await pilot.pause()
            leaves = [c for t in outline.root.children for c in t.children]
            assert [leaf.data and str(leaf.data) for leaf in leaves] == ["mem#recompute"]
            # the detail shows the first hit, not the node read before the search
            assert "mem#recompute" in "\n".join(screen_text(app))
            await pilot.press("enter", "down", "down", "w")
            await pilot.pause()
            assert _current(app) == "mem#recompute"
    run(go())


def test_browse_opens_at_node_and_expands():
    async def go():
        app = make_app()
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.press(*"mem", "enter", "1", "o")
            await pilot.pause(0.2)
            assert isinstance(app.screen, BrowseScreen)
            outline = app.screen.query_one("#outline", Tree)
            assert outline.cursor_node is not None
            assert str(outline.cursor_node.data) == "mem#shrink"
            detail = str(app.screen.query_one("#node-detail", Static).render())
            assert "Does the run fit with micro-batch size 1?" in detail
    run(go())


def test_command_palette_finds_nodes_across_trees_and_opens_a_walk():
    async def go():
        app = make_app()
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.press("ctrl+p")
            await pilot.pause()
            await pilot.press(*"inspect the rank")
            await pilot.pause(0.5)
            await pilot.press("down", "enter")
            await pilot.pause(0.3)
            assert _current(app) == "hang#straggler"
    run(go())


def test_help_lists_keys():
    async def go():
        app = make_app()
        async with app.run_test(size=(100, 40)) as pilot:
            await pilot.press(*"mem", "enter", "question_mark")
            await pilot.pause()
            assert isinstance(app.screen, HelpScreen)
            await pilot.press("escape")
            await pilot.pause()
            assert isinstance(app.screen, WalkScreen)
    run(go())


TRIAGE_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "triage"
MULTIRANK_OOM = TRIAGE_FIXTURES / "multirank_oom"  # real per-rank logs, provenance on line 1
OOM_LINE = ("rank1.log:2: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
            "22.78 GiB. GPU 0 has a total capacity of 31.47 GiB")


async def _triage(app, pilot, path: str) -> None:
    await pilot.press("ctrl+t")
    await pilot.pause()
    assert isinstance(app.screen, TriageScreen)
    app.screen.query_one("#log-path").value = path
    await pilot.press("ctrl+s")
    await app.workers.wait_for_complete()
    await pilot.pause()


def test_a_real_finding_walks_to_the_fix_and_its_evidence_reaches_the_report():
    """Real logs, the real scanner, the built-in trees: the finding's lines are in the report
    the app shows (`i`) and in `trainmedic report`."""
    import contextlib
    import io

    from trainmedic.cli import main
    from trainmedic.export.report import render_report
    from trainmedic.trees import load_forest
    from trainmedic.tui.app import TrainmedicApp
    from trainmedic.tui.screens.report import ReportScreen

    async def go():
        app = TrainmedicApp(load_forest(), probes=False)
        async with app.run_test(size=(120, 40)) as pilot:
            await _triage(app, pilot, str(MULTIRANK_OOM))
            report = app.screen.report
            # 12.73 GiB free + 9.35 GiB cached < 22.78 GiB asked: it does not fit (not
            # fragmentation, issue 18 item 7)
            assert report is not None and report.findings[0].link == "oom#when"
            await pilot.press("enter")  # the first, most likely finding
            await pilot.pause()
            assert _current(app) == "oom#when"
            panel = " ".join(_panel(app).split())
            assert "rank 1: CUDA out of memory (tried 22.78 GiB" in panel
            assert OOM_LINE in panel
            saved = list_walks()[0][0].record.triage
            assert saved is not None and saved.finding is not None
            assert saved.finding.link == "oom#when" and len(saved.findings) == 3
            assert saved.files == sorted(str(p) for p in MULTIRANK_OOM.iterdir())
            await pilot.press("3")  # "When does it run out?": while saving a checkpoint (a fix)
            await pilot.pause()
            assert _current(app) == "oom#checkpoint-save"
            await pilot.press("i")
            await pilot.pause()
            assert isinstance(app.screen, ReportScreen)
            shown = app.screen.markdown
            assert "No log triage is attached" not in shown
            assert OOM_LINE in shown and "(the walk started here)" in shown
            assert "rank0.log:2: [rank0]:[E1206 18:44:12.715298746 ProcessGroupNCCL.cpp:607]" \
                in shown  # the other findings of the same triage come along
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert main(["report"]) == 0
        record = list_walks()[0][0].record
        assert shown == render_report(record, app.forest, in_app=True)  # hints name keys
        assert out.getvalue() == render_report(record, app.forest)  # the same page, for a shell
        assert OOM_LINE in out.getvalue()
    run(go())


def test_triage_error_is_shown_not_raised():
    async def go():
        app = make_app()
        async with app.run_test(size=(100, 30)) as pilot:
            await _triage(app, pilot, "nope.log")
            status = str(app.screen.query_one("#triage-status", Static).render())
            assert "triage failed: nope.log: no such file or directory" in status
            await pilot.press("escape")
            await pilot.pause()
            assert isinstance(app.screen, HomeScreen)
    run(go())


def test_failed_triage_clears_the_findings_of_the_log_before():
    async def go():
        app = make_app()
        async with app.run_test(size=(100, 30)) as pilot:
            await _triage(app, pilot, str(MULTIRANK_OOM / "rank1.log"))
            findings = app.screen.query_one("#findings", OptionList)
            assert findings.option_count == 1
            app.screen.query_one("#log-path").value = "nope.log"
            await pilot.press("ctrl+s")
            await app.workers.wait_for_complete()
            await pilot.pause()
            assert "triage failed" in str(app.screen.query_one("#triage-status").render())
            assert findings.option_count == 0 and app.screen.report is None
    run(go())


def test_a_log_with_nothing_known_offers_the_triage_tree():
    async def go():
        app = make_app()
        # the fixture forest has no `triage` tree: stand in for the built-in one
        app.forest.trees["triage"] = app.forest.trees["mem"]
        async with app.run_test(size=(100, 30)) as pilot:
            await _triage(app, pilot, str(TRIAGE_FIXTURES / "nccl_info_noise.log"))
            assert "No known failure" in str(app.screen.query_one("#triage-status").render())
            await pilot.press("enter")
            await pilot.pause()
            assert isinstance(app.screen, WalkScreen)
            assert app.screen.session.origin.tree == "triage"
            assert app.screen.session.triage is None
    run(go())


def test_probes_off_says_so():
    async def go():
        app = make_app()  # as `trainmedic walk --no-probes`
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.press("ctrl+r")
            await pilot.pause()
            table = str(app.screen.query_one("#probe-table", Static).render())
            assert table == "probes are off (--no-probes)"
    run(go())


def test_resume_recent_walk_and_report_corrupt_file():
    async def go():
        first = make_app()
        async with first.run_test() as pilot:
            await pilot.press(*"mem", "enter", "1")
            await pilot.pause()
        (walks_dir() / "zz-broken.json").write_text("{truncated")
        app = make_app()
        async with app.run_test(notifications=True) as pilot:
            await pilot.pause()
            messages = [n.message for n in app._notifications]
            assert any("zz-broken.json" in m for m in messages)
            await pilot.press(*"resume", "enter")
            await pilot.pause()
            assert _current(app) == "mem#shrink"
            assert len(app.screen.session.steps) == 1
    run(go())


async def _walk_saved_after_one_answer() -> tuple[Path, dict]:
    """A real walk of the fixture tree, saved after one answer: its file and its JSON."""
    first = make_app()
    async with first.run_test() as pilot:
        await pilot.press(*"mem", "enter", "1")
        await pilot.pause()
    path = list_walks()[0][0].path
    return path, json.loads(path.read_text())


async def _resume_is_refused_with(message: str) -> None:
    """Resuming from home stays on home and says why in a notification."""
    app = make_app()
    async with app.run_test(notifications=True) as pilot:
        await pilot.press(*"resume", "enter")
        await pilot.pause()
        assert isinstance(app.screen, HomeScreen)
        assert any(message in n.message for n in app._notifications)


def test_resume_of_walk_that_no_longer_fits_is_refused():
    async def go():
        path, data = await _walk_saved_after_one_answer()
        data["current"] = "mem#removed-node"
        path.write_text(json.dumps(data))
        await _resume_is_refused_with("no node 'removed-node'")
    run(go())


def test_resume_of_a_hand_edited_walk_never_crashes_the_app():
    """A malformed stack refuses the walk; unreadable probe entries are dropped, the rest kept."""
    async def go():
        path, data = await _walk_saved_after_one_answer()
        good = {"name": "gpu", "status": "warn", "summary": "GPU 3 at 99 % memory",
                "facts": {"max_memory_fraction": 0.99}, "evidence": {}}
        data["probes"] = [{"facts": []}, 3, {"name": "env", "facts": ["x"]}, good]
        data["triage"] = {"summary": "edited", "evidence": 7}
        path.write_text(json.dumps(data))
        app = make_app()
        async with app.run_test(notifications=True) as pilot:
            await pilot.press(*"resume", "enter")
            await pilot.pause()
            assert _current(app) == "mem#shrink"
            assert [p.to_dict() for p in app.screen.session.probes] == [
                good | {"duration_s": 0.0, "raw": ""}]
            assert "GPU 3 at 99 % memory" in _panel(app)
        data["stack"] = 5
        path.write_text(json.dumps(data))
        await _resume_is_refused_with("stack is int")
    run(go())


def test_home_filter_edits_with_backspace_and_paste():
    async def go():
        app = make_app()
        async with app.run_test() as pilot:
            await pilot.pause()
            assert isinstance(app.focused, OptionList)
            await pilot.press(*"frozx", "backspace", "e")
            await pilot.pause()
            assert app.screen.filter_text == "froze" and _shown(app) == ["tree:hang"]
            await pilot.press("ctrl+u")
            app.screen.post_message(events.Paste("GPU\nmemory"))
            await pilot.pause()
            assert app.screen.filter_text == "GPU memory" and _shown(app)[0] == "tree:mem"
            await pilot.press("down", "up", "enter")
            await pilot.pause()
            assert _current(app) == "mem#when"
    run(go())


MEGATRON_70B = ("torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 80 --hidden-size 8192 "
                "--num-attention-heads 64 --ffn-hidden-size 28672 --seq-length 4096 "
                "--micro-batch-size 1 --global-batch-size 128 --bf16 --vocab-size 128256")


def test_launch_command_feeds_the_memory_estimate(monkeypatch):
    from trainmedic.probes.runner import run_probes

    monkeypatch.setenv("TRAINMEDIC_GPU_MEMORY", "80GiB")
    monkeypatch.delenv("TRAINMEDIC_LAUNCH_SCRIPT", raising=False)

    async def go():
        calls = []

        def runner(names, context):
            calls.append((list(names), context.launch_command))
            return run_probes([n for n in names if n == "memory"], context)  # the real one

        app = make_app(probe_runner=runner)
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.press(*"mem", "enter")
            await app.workers.wait_for_complete()
            await pilot.pause()
            assert calls == [(["memory", "gpu"], "")]  # no launch command yet
            await pilot.press("m")
            await pilot.pause()
            app.screen.query_one("#launch-text").text = MEGATRON_70B
            await pilot.press("ctrl+s")
            await pilot.pause()
            await app.workers.wait_for_complete()
            await pilot.pause()
            # only the probe that reads the launch command runs again, and it is handed it
            assert calls[1:] == [(["memory"], MEGATRON_70B)]
            session = app.screen.session
            assert session.launch_command == MEGATRON_70B
            memory = next(p for p in session.probes if p.name == "memory")
            assert memory.facts["fits"] is False
            assert memory.summary.startswith("launch command: about")
            assert app.screen.suggested_index == 0
            assert list_walks()[0][0].record.to_dict()["launch_command"] == MEGATRON_70B
            await pilot.press("m")  # opened again: the old command is selected, typing replaces
            await pilot.pause()
            assert app.screen.query_one("#launch-text").selected_text == MEGATRON_70B
    run(go())


def test_typing_resume_lists_saved_walks_before_trees_that_mention_it():
    async def go():
        app = make_app()
        async with app.run_test() as pilot:
            await pilot.press(*"mem", "enter", "1", "h")
            await pilot.pause()
            home = app.screen
            tree = next(e for e in home.entries if e.key == "tree:hang")
            mentions = tree._replace(haystack=tree.haystack + " resume from a checkpoint")
            home.entries = [mentions, *[e for e in home.entries if e is not tree]]
            home.set_filter("resume")
            assert _shown(app)[0].startswith("walk:") and "tree:hang" in _shown(app)
    run(go())


def test_filter_puts_the_tree_named_first():
    async def go():
        app = make_app()
        async with app.run_test() as pilot:
            await pilot.press("m")  # hang matches too ("making") and is listed before mem
            await pilot.pause()
            assert _shown(app)[0] == "tree:mem" and "tree:hang" in _shown(app)
            await pilot.press("enter")
            await pilot.pause()
            assert _current(app) == "mem#when"
    run(go())


def test_app_started_on_a_resumed_walk_and_home_key():
    from trainmedic.walk import WalkSession

    async def go():
        app = make_app()
        session = WalkSession(app.forest, "mem")
        session.answer(0)
        app = make_app(session=WalkSession.from_dict(app.forest, session.to_dict()))
        async with app.run_test() as pilot:
            await pilot.pause()
            assert _current(app) == "mem#shrink"
            await pilot.press("2")
            await pilot.pause()
            await pilot.press("h")
            await pilot.pause()
            assert isinstance(app.screen, HomeScreen)
            assert any(key.startswith("walk:") for key in _shown(app))
    run(go())


def test_command_palette_offers_the_screen_actions():
    async def go():
        app = make_app()
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.press(*"mem", "enter", "1")
            await pilot.pause()
            titles = [c.title for c in app.get_system_commands(app.screen)]
            assert {"Back", "Restart", "Browse", "Home", "Log triage"} <= set(titles)
            await pilot.press("ctrl+p")
            await pilot.pause()
            await pilot.press(*"restart")
            await pilot.pause(0.5)
            await pilot.press("enter")
            await pilot.pause(0.3)
            assert _current(app) == "mem#when"
    run(go())


def test_a_tree_broken_after_home_was_painted_ends_the_app_with_one_line():
    """Home paints from cached cards; the forest loads later. If it fails then: exit 2, no
    traceback (Textual prints an exception with __rich__ as its message)."""
    from trainmedic.errors import UsageError
    from trainmedic.tui.app import TrainmedicApp, TreesBroken
    from trainmedic.tui.home_cards import cards_from_forest

    def broken():
        raise UsageError("trees/mem.yaml:3: YAML syntax")

    app = TrainmedicApp(None, cards=cards_from_forest(make_app().forest), forest_loader=broken,
                        probes=False)

    async def go():
        async with app.run_test() as pilot:
            await pilot.press("enter")
            await pilot.pause()

    try:
        run(go())
    except TreesBroken as exc:
        assert exc.__rich__() == "trainmedic: error: trees/mem.yaml:3: YAML syntax"
    else:
        raise AssertionError("the app went on without its trees")
    assert app.trees_error == "trees/mem.yaml:3: YAML syntax"
    assert app.return_code != 0


def test_home_lists_a_walk_left_with_escape():
    async def go():
        app = make_app()
        async with app.run_test() as pilot:
            await pilot.press(*"mem", "enter", "1", "escape", "escape", "escape")
            await pilot.pause()
            assert isinstance(app.screen, HomeScreen)
            assert not any(k.startswith("walk:") for k in _shown(app))  # walks: none answered
            await pilot.press(*"out of", "enter", "1", "h")
            await pilot.pause()
            assert isinstance(app.screen, HomeScreen)
            assert not any(k.startswith("walk:") for k in _shown(app))  # filter still "out of"
            await pilot.press("escape")
            await pilot.pause()
            assert any(k.startswith("walk:") for k in _shown(app))
    run(go())


def test_probes_screen_shows_each_probe():
    from trainmedic.probes.base import ProbeResult

    def runner(names, _context):
        assert names is None  # all probes
        return [*gpu_full(), ProbeResult("infiniband", "unavailable", "ibstat not found")]

    async def go():
        app = make_app(probe_runner=runner)
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.press("ctrl+r")
            await pilot.pause()
            await app.workers.wait_for_complete()
            await pilot.pause()
            lines = [" ".join(line.split()) for line in screen_text(app)]
            assert "WARN gpu GPU 3 at 99 % memory 0.0s" in lines
            assert "n/a infiniband ibstat not found 0.0s" in lines
    run(go())
