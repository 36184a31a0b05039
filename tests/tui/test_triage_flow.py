"""From a log to a fix and back up, on real logs and the built-in trees (issue 18 items 4, 5;
review F6, F12, F14, F22): the findings say why and how sure; a walk opened from a finding
stands on the tree's route, so `n` and `r` work and "did not help" reaches the report; the
numbers in the log fill the commands; a running analysis survives leaving the screen.
"""

from __future__ import annotations

import threading
from pathlib import Path

from textual.widgets import OptionList, Static
from tui_helpers import run, screen_text

from trainmedic.saved_walks import list_walks
from trainmedic.trees import load_forest
from trainmedic.tui.app import TrainmedicApp
from trainmedic.tui.screens.home import HomeScreen
from trainmedic.tui.screens.triage import TriageScreen
from trainmedic.tui.screens.walk import WalkScreen

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
MULTIRANK_OOM = FIXTURES / "triage" / "multirank_oom"  # real per-rank logs, source on line 1
# a real OOM whose free + cached memory would hold the allocation: fragmentation, a fix
FRAGMENTED_OOM = FIXTURES / "triage" / "oom_pytorch_21_typo.log"
SPIKE_LOG = FIXTURES / "tui" / "megatron_spike_synthesised.log"
FOREST = load_forest()


async def _triage(app, pilot, path: Path) -> None:
    await pilot.press("ctrl+t")
    await pilot.pause()
    assert isinstance(app.screen, TriageScreen)
    app.screen.query_one("#log-path").value = str(path)
    await pilot.press("ctrl+s")
    await app.workers.wait_for_complete()
    await pilot.pause()


def test_findings_say_kind_confidence_and_why_and_fit_80x24():
    async def go():
        app = TrainmedicApp(FOREST, probes=False)
        async with app.run_test(size=(80, 24)) as pilot:
            await _triage(app, pilot, MULTIRANK_OOM)
            report = app.screen.report
            text = "\n".join(screen_text(app))
            shown = [f for f in report.findings if f.link in text]
            assert len(shown) >= 3, text  # the inputs no longer eat the screen
            first = report.findings[0]
            assert f"{first.link}  cause · {round(first.confidence * 100)}%" in text
            assert "why: rank 1 shows CUDA out of memory" in text
            assert "symptom ·" in text  # the watchdog timeouts: a consequence, said so
    run(go())


def test_a_finding_opens_on_the_trees_route_and_n_goes_up_and_is_reported():
    async def go():
        app = TrainmedicApp(FOREST, probes=False)
        async with app.run_test(size=(100, 30)) as pilot:
            await _triage(app, pilot, FRAGMENTED_OOM)
            link = app.screen.report.findings[0].link
            await pilot.press("enter")
            await pilot.pause()
            walk = app.screen
            assert isinstance(walk, WalkScreen) and str(walk.session.current) == link
            steps = walk.session.steps
            assert steps and all(s.implied for s in steps)  # the route, implied by the log
            footer = screen_text(app)[-1]
            assert "n did not help" in footer and "r restart" in footer
            parent, answer = steps[-1].node, steps[-1].answer
            await pilot.press("n")
            await pilot.pause()
            assert str(walk.session.current) == parent
            answers = walk.query_one("#answers", OptionList)
            assert answers.highlighted == answer  # the answer that led there, marked
            text = "\n".join(screen_text(app))
            assert "✗ tried: did not help" in text and "◆ the log pointed here" in text
            saved = list_walks()[0][0].record
            assert [t.node for t in saved.tried] == [link]
            await pilot.press(str(answer + 1), "i")
            await pilot.pause()
            assert "Tried fix **" in app.screen.markdown and "did not help." in app.screen.markdown
            await pilot.press("escape", "r")
            await pilot.pause()
            assert walk.session.current == FOREST.start(link.partition("#")[0])
            await pilot.press("escape")  # the restart, undone
            await pilot.pause()
            assert str(walk.session.current) == link
    run(go())


def test_the_spike_fix_puts_the_exact_commands_from_the_log_first():
    async def go():
        app = TrainmedicApp(FOREST, probes=False)
        async with app.run_test(size=(100, 40)) as pilot:
            await _triage(app, pilot, SPIKE_LOG)
            await pilot.press("enter")
            await pilot.pause()
            walk = app.screen
            assert isinstance(walk, WalkScreen)
            assert str(walk.session.current) == "loss-spike#spike-recovery"
            text = "\n".join(screen_text(app))
            assert "from your log (megatron_spike_synthesised.log:33)" in text
            parts = [w.classes for w in walk.query_one("#fix").children]
            assert parts.index({"from-log"}) < parts.index({"steps-head"})
            await pilot.press("1")
            assert "--ckpt-step 29200 --iterations-to-skip $(seq 29300 29350)" in app.clipboard
            await pilot.press("2")
            assert app.clipboard.endswith("--skip-train-iteration-range 29301-29350")
            await pilot.press("3")  # the fix's own first command comes after the log's
            assert app.clipboard.startswith('ls -1 "$CKPT_DIR"')
    run(go())


def test_leaving_the_triage_screen_while_it_runs_keeps_the_result(monkeypatch):
    release = threading.Event()
    import trainmedic.triage as triage

    real = triage.triage_paths

    def slow(paths, *args, **kwargs):
        release.wait(20)
        return real(paths, *args, **kwargs)

    monkeypatch.setattr(triage, "triage_paths", slow)

    async def go():
        app = TrainmedicApp(FOREST, probes=False)
        async with app.run_test(size=(100, 30), notifications=True) as pilot:
            await pilot.press("ctrl+t")
            await pilot.pause()
            app.screen.query_one("#log-path").value = str(MULTIRANK_OOM)
            await pilot.press("ctrl+s")
            await pilot.pause(0.7)
            status = str(app.screen.query_one("#triage-status", Static).render())
            assert status.startswith("analysing ") and " s " in status  # progress, ticking
            await pilot.press("escape")
            await pilot.pause()
            assert isinstance(app.screen, HomeScreen)
            release.set()
            await app.workers.wait_for_complete()
            await pilot.pause()
            assert any("Log triage of" in n.message for n in app._notifications)
            await pilot.press("ctrl+t")
            await pilot.pause()
            assert isinstance(app.screen, TriageScreen)
            assert app.screen.report is not None
            assert app.screen.query_one("#findings", OptionList).option_count >= 3
    try:
        run(go())
    finally:
        release.set()


def test_triage_from_a_walk_takes_its_answer_to_what_do_you_see():
    """Answered "the job is frozen" in the walk, then ^t: triage uses that answer as
    `--symptom hang` (the OOM still leads: a clear cause outranks it) and says so."""
    async def go():
        app = TrainmedicApp(FOREST, probes=False)
        async with app.run_test(size=(100, 30)) as pilot:
            app.open_walk("triage")
            await pilot.pause()
            walk = app.screen
            assert isinstance(walk, WalkScreen)
            frozen = next(i for i, a in enumerate(walk.session.question.answers)
                          if a.goto == "nccl-hang")
            await pilot.press(str(frozen + 1))
            await pilot.pause()
            assert walk.session.current.tree == "nccl-hang"
            await _triage(app, pilot, MULTIRANK_OOM)
            report = app.screen.report
            assert report.symptom is not None and report.symptom.given == "hang"
            assert report.findings[0].tree == "oom" and report.findings[1].fits_symptom
            text = "\n".join(screen_text(app))
            assert "You said the job froze" in text
    run(go())
