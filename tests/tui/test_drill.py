"""The drill screen end to end in the real app: a real log, the expert's keys, the debrief."""

from __future__ import annotations

from textual.widgets import Input, OptionList
from tui_helpers import run, screen_text

from trainmedic.drills.cases import load_cases
from trainmedic.drills.progress import load_progress
from trainmedic.drills.run import DrillRun, node_known, playable
from trainmedic.trees import Fix, load_forest
from trainmedic.tui.app import TrainmedicApp
from trainmedic.tui.screens.drill import DrillScreen
from trainmedic.tui.screens.home import HomeScreen

FOREST = load_forest()
CASES = playable(FOREST, load_cases()[0])


def _scored_case():
    """A case scored to its node with an expert path of at least two answers (chosen by the
    engine, so a relabelled corpus line cannot break the test)."""
    for case in CASES:
        if case.healthy or not node_known(FOREST, case):
            continue
        path = DrillRun(FOREST, case).expert()
        if path is not None and len(path) >= 2:
            return case, path
    raise AssertionError("no case with a two-step expert path")


def test_a_drill_end_to_end_by_keys_scores_the_expert_path_and_saves_progress():
    case, path = _scored_case()

    async def go():
        app = TrainmedicApp(FOREST, probes=False)
        async with app.run_test(size=(100, 40)) as pilot:
            app.push_screen(DrillScreen(case))
            await pilot.pause()
            screen = app.screen
            assert isinstance(screen, DrillScreen)
            shown = "\n".join(screen_text(app))
            assert case.source not in shown  # the source waits for the end
            first_line = case.excerpt.strip().splitlines()[0].strip()[:30]
            assert first_line.split()[0] in shown
            for step in path:
                assert str(screen.drill.session.current) == step.node
                await pilot.press(str(step.answer + 1))
                await pilot.pause()
            assert str(screen.drill.session.current) == path[-1].goto
            await pilot.press("enter" if isinstance(screen.drill.session.node, Fix) else "d")
            await pilot.pause()
            assert screen.report is not None
            assert screen.report.result.outcome == "node"
            assert screen.report.result.moves == len(path)
            text = "\n".join(screen_text(app))
            assert "You reached the expected node" in text
            assert "The expert path" in text
            progress, problem = load_progress()
            assert problem == ""
            assert [r.case for r in progress.results] == [case.name]
            await pilot.press("n")  # the next drill starts on the same screen
            await pilot.pause()
            assert screen.report is None and screen.drill.moves == 0
            await pilot.press("escape")  # back at the entry question: leave the drill
            await pilot.pause()
            assert isinstance(app.screen, HomeScreen)
    run(go())


def test_home_opens_a_drill_and_jumping_and_nothing_wrong_work():
    async def go():
        app = TrainmedicApp(FOREST, probes=False)
        async with app.run_test(size=(100, 40)) as pilot:
            await pilot.press(*"drill")
            await pilot.pause()
            assert next(e.key for e in app.screen.shown) == "action:drill"
            await pilot.press("enter")
            await pilot.pause()
            screen = app.screen
            assert isinstance(screen, DrillScreen) and screen.drill is not None
            await pilot.press("colon")
            await pilot.pause()
            jump = screen.query_one("#drill-jump", Input)
            assert jump.display and jump.has_focus
            await pilot.press(*"nosuch", "enter")
            await pilot.pause()
            assert "cannot jump" in "\n".join(screen_text(app))
            jump.value = ""
            await pilot.press(*"oom", "enter")
            await pilot.pause()
            assert str(screen.drill.session.current) == str(FOREST.start("oom"))
            assert screen.query_one("#drill-answers", OptionList).has_focus
            await pilot.press("escape")  # undoes the jump
            await pilot.pause()
            assert str(screen.drill.session.current) == "triage#what"
            await pilot.press("o")
            await pilot.pause()
            assert screen.report is not None
            expected = "node" if screen.drill.case.healthy else "elsewhere"
            assert screen.report.result.outcome == expected
    run(go())


def test_trainmedic_drill_opens_the_app_at_the_drill_with_home_beneath():
    from trainmedic.tui.drill_start import drill_app

    case = next(c for c in CASES if c.area == "oom")

    async def go():
        app = drill_app(FOREST, case, area="oom")
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            assert isinstance(app.screen, DrillScreen) and app.screen.drill.case == case
            assert "Incident drill in oom" in screen_text(app)[0]
            assert not app.probes_enabled
            await pilot.press("escape")
            await pilot.pause()
            assert isinstance(app.screen, HomeScreen)
    run(go())
