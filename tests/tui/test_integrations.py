"""The app's integrations: incident report, runbook export, cluster view, loss curve, probes.

Each drives the real app headless by keys and checks what reached the disk or the screen.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

from textual.widgets import DataTable, Input, Static
from tui_helpers import (
    FIXTURES,
    cluster_run,
    gpu_full,
    make_app,
    run,
    save_cluster_result,
    screen_text,
)

from trainmedic.saved_walks import list_walks
from trainmedic.tui.screens.browse import BrowseScreen
from trainmedic.tui.screens.cluster import ClusterScreen, age_text
from trainmedic.tui.screens.probes import ProbesScreen
from trainmedic.tui.screens.report import ReportScreen
from trainmedic.tui.screens.walk import WalkScreen
from trainmedic.tui.widgets.losscurve import LossCurve, mark_line, marker_line, spike_columns

TUI_FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "tui"
SPIKE_LOG = TUI_FIXTURES / "megatron_spike_synthesised.log"
REAL_SPIKE_LOG = TUI_FIXTURES / "megatron_lm_loss_spike.log"
LOSS_FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "loss"
SECRET = "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"


def _messages(app) -> list[str]:
    return [n.message for n in app._notifications]


# -- 1. incident report from the fix screen ------------------------------------------------------
def test_report_from_fix_screen_is_shown_redacted_and_saved(tmp_path, monkeypatch):
    from trainmedic.export.report import render_report

    monkeypatch.chdir(tmp_path)

    async def go():
        app = make_app()
        async with app.run_test(size=(100, 30), notifications=True) as pilot:
            await pilot.press(*"mem", "enter")
            await pilot.pause()
            assert "i report" not in "\n".join(screen_text(app))  # a question: no report key
            await pilot.press("1", "1")
            await pilot.pause()
            walk = app.screen
            assert isinstance(walk, WalkScreen) and walk.session.fix is not None
            walk.session.launch_command = f"HF_TOKEN={SECRET} torchrun pretrain_gpt.py"
            await pilot.press("i")
            await pilot.pause(0.3)
            screen = app.screen
            assert isinstance(screen, ReportScreen)
            record = walk.session.record()
            assert screen.markdown == render_report(record, app.forest, in_app=True)
            assert "# Incident report: Out of GPU memory" in screen.markdown
            assert SECRET not in screen.markdown and SECRET not in "".join(screen_text(app))
            default = tmp_path / f"trainmedic-report-{record.id}.md"
            assert screen.query_one("#report-path", Input).value == f"./{default.name}"

            await pilot.press("ctrl+s")
            await pilot.pause()
            assert default.read_text(encoding="utf-8") == screen.markdown
            assert any(str(Path(".") / default.name) in m for m in _messages(app))

            default.write_text("older report\n")
            await pilot.press("s")  # exists now: the first save only asks
            await pilot.pause()
            status = str(screen.query_one("#save-status", Static).render())
            assert "exists: save again to overwrite" in status
            assert default.read_text() == "older report\n"
            await pilot.press("s")
            await pilot.pause()
            assert default.read_text(encoding="utf-8") == screen.markdown

            (tmp_path / "reports").mkdir()
            await pilot.press("tab", "end", "ctrl+u", *"reports/incident.md", "enter")
            await pilot.pause()
            assert (tmp_path / "reports" / "incident.md").read_text() == screen.markdown
            await pilot.press("escape")
            await pilot.pause()
            assert app.screen is walk
    run(go())


# -- 2. runbook export from browse -----------------------------------------------------------
def test_browse_exports_the_tree_in_view_like_the_cli(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cli = subprocess.run([sys.executable, "-m", "trainmedic", "--trees", str(FIXTURES),
                          "export", "hang"], capture_output=True, text=True, timeout=60)
    assert cli.returncode == 0, cli.stderr

    async def go():
        app = make_app()
        async with app.run_test(size=(120, 40), notifications=True) as pilot:
            await pilot.press("ctrl+b")
            await pilot.pause()
            assert isinstance(app.screen, BrowseScreen)
            await pilot.press("slash", *"inspect the rank", "enter", "down", "x")
            await pilot.pause()
            assert app.screen.query_one("#export-path", Input).value == "./hang.md"
            await pilot.press("enter")
            await pilot.pause()
            out = tmp_path / "hang.md"
            assert out.read_text(encoding="utf-8") == cli.stdout
            assert isinstance(app.screen, BrowseScreen)
            assert any("hang.md" in m for m in _messages(app))

            out.write_text("keep me\n")
            await pilot.press("x", "enter")  # exists: asks instead of writing
            await pilot.pause()
            status = str(app.screen.query_one("#export-status", Static).render())
            assert "exists: save again to overwrite" in status
            await pilot.press("escape")
            await pilot.pause()
            assert isinstance(app.screen, BrowseScreen)
            assert out.read_text() == "keep me\n"
            await pilot.press("x", "enter", "enter")  # the second enter confirms
            await pilot.pause()
            assert out.read_text(encoding="utf-8") == cli.stdout
    run(go())


# -- 3. cluster view --------------------------------------------------------------------------
def test_cluster_view_shows_the_bad_node_first_and_its_verdict():
    result = save_cluster_result()

    async def go():
        app = make_app()
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.press(*"cluster", "enter")
            await pilot.pause(0.3)
            assert isinstance(app.screen, ClusterScreen)
            table = app.screen.query_one("#cluster-table", DataTable)
            rows = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
            assert rows[0][:2] == ["node07", "bad"]
            assert rows[-1][:2] == ["node[01-06,08-16] (15)", "ok"]
            assert len(rows) == 2
            headers = [str(c.label) for c in table.columns.values()]
            assert "GPUs" in headers and "Xid" in headers
            text = "\n".join(screen_text(app))
            assert " ".join(result.verdicts[0].split()) in " ".join(text.split())
            assert "16 nodes via srun: 16 answered, 1 bad" in text
            assert "SPEC node[01-16] · swept" in text
    run(go())


def test_cluster_view_without_a_sweep_says_how_to_make_one(monkeypatch):
    monkeypatch.setenv("SLURM_JOB_NODELIST", "gpu[001-004]")

    async def go():
        app = make_app()
        async with app.run_test(size=(100, 30)) as pilot:
            app.action_cluster()
            await pilot.pause()
            summary = str(app.screen.query_one("#cluster-summary", Static).render())
            assert "No cluster sweep yet" in summary and "trainmedic probe --nodes" in summary
            spec = app.screen.query_one("#sweep-spec", Input)
            assert spec.value == "slurm" and spec.has_focus
    run(go())


def test_sweep_runs_in_a_worker_and_keys_answer_while_it_hangs(monkeypatch):
    import trainmedic.cluster.fanout as fanout

    release = threading.Event()
    calls = []

    def hanging_ssh(nodes, names, *, timeout, **_kw):
        calls.append((list(nodes), list(names), timeout))
        release.wait(30)
        return cluster_run(4, "node02")

    monkeypatch.setattr(fanout, "fan_out_ssh", hanging_ssh)
    monkeypatch.delenv("SLURM_JOB_NODELIST", raising=False)
    monkeypatch.delenv("TRAINMEDIC_FANOUT", raising=False)

    async def go():
        app = make_app()
        try:
            async with app.run_test(size=(100, 30)) as pilot:
                app.action_cluster()
                await pilot.pause()
                await pilot.press(*"node[01-04]", "enter")
                await pilot.pause(0.3)
                screen = app.screen
                assert calls == [(["node01", "node02", "node03", "node04"], [], 60.0)]
                assert "sweeping node[01-04]" in str(
                    screen.query_one("#sweep-status", Static).render())
                await pilot.press("s")  # the screen answers; a second sweep is refused
                await pilot.pause()
                assert "still running" in str(screen.query_one("#sweep-status", Static).render())
                await pilot.press("question_mark")
                await pilot.pause()
                assert type(app.screen).__name__ == "HelpScreen"
                await pilot.press("escape")
                await pilot.pause()
                assert app.screen is screen and not release.is_set()
                release.set()
                await app.workers.wait_for_complete()
                await pilot.pause(0.2)
                status = str(screen.query_one("#sweep-status", Static).render())
                assert "sweep of node[01-04] done: 1 bad node(s)" in status
                table = screen.query_one("#cluster-table", DataTable)
                assert [str(c) for c in table.get_row_at(0)][:2] == ["node02", "bad"]
                from trainmedic.cluster import load_last_result

                assert load_last_result().bad_nodes == ["node02"]
        finally:
            release.set()
    run(go())


def test_bad_spec_is_reported_on_screen(monkeypatch):
    monkeypatch.delenv("SLURM_JOB_NODELIST", raising=False)
    monkeypatch.delenv("SLURM_NODELIST", raising=False)

    async def go():
        app = make_app()
        async with app.run_test(size=(100, 30)) as pilot:
            app.action_cluster()
            await pilot.pause()
            await pilot.press(*"slurm", "enter")
            await app.workers.wait_for_complete()
            await pilot.pause()
            status = str(app.screen.query_one("#sweep-status", Static).render())
            assert "sweep failed: --nodes slurm: SLURM_JOB_NODELIST is not set" in status
            assert app.focused is app.screen.query_one("#sweep-spec", Input)  # to mend it
    run(go())


def test_age_text():
    from datetime import UTC, datetime

    now = datetime(2026, 11, 29, 9, 0, tzinfo=UTC)
    assert age_text("2026-11-29T08:59:30+00:00", now)[0] == "just now"
    assert age_text("2026-11-29T08:48:00+00:00", now) == ("12 min ago", 720.0)
    assert age_text("2026-11-27T08:00:00+00:00", now)[0] == "2 d ago"
    assert age_text("yesterday", now) == ("age unknown", -1.0)


# -- 4. loss curve in triage --------------------------------------------------------------------
def _triage(path: Path, size=(100, 30)):
    async def go():
        app = make_app()
        async with app.run_test(size=size) as pilot:
            await pilot.press("ctrl+t")
            await pilot.pause()
            app.screen.query_one("#log-path", Input).value = str(path)  # typing is tested
            await pilot.press("enter")  # elsewhere; 60 key presses only cost time here
            await app.workers.wait_for_complete()
            await pilot.pause(0.2)
            curve = app.screen.query_one(LossCurve)
            return curve.display, curve.loss, screen_text(app)

    return run(go())


def test_triage_shows_the_loss_curve_with_the_spike_and_the_rollback_marked():
    shown, loss, lines = _triage(SPIKE_LOG)
    assert shown and len(loss.spikes) == 1
    spike = loss.spikes[0]
    curve_row = next(i for i, line in enumerate(lines) if line.lstrip().startswith("loss ▁"))
    curve, marks = lines[curve_row], lines[curve_row + 1]
    assert set(marks.strip()) == {"^", "R", " "}
    bar = curve[marks.index("^")]
    # the mark sits under the first bar of the spike, the bars before it are the flat baseline;
    # the spike's window runs on until the loss came back, and R marks the checkpoint before
    assert bar in "▇█" and set(curve[curve.index("▁"):marks.index("^")]) == {"▁"}
    window = marks[marks.index("^"):marks.rindex("^") + 1]
    assert set(window) == {"^"} and len(window) > 1
    assert marks.index("R") < marks.index("^") and curve[marks.index("R")] == "▁"
    text = " ".join(" ".join(lines).split())  # wrapped between words, never inside one
    assert f"^ steps {spike.start}..{spike.end}: peak 8.72 at 29320" in text
    assert "resume from the checkpoint of step 29200 (saved" in text
    assert "R roll back to the checkpoint of step 29200" in text
    # the line of 29310 averages 29301-29310; the fork is not named in this log, so both flags
    assert "--skip-train-iteration-range 29301-29350" in text


def test_triage_marks_nan_runs_and_a_divergence_window():
    _shown, loss, lines = _triage(LOSS_FIXTURES / "tensorboard" / "events.out.tfevents.tensors")
    curve_row = next(i for i, line in enumerate(lines) if line.lstrip().startswith("loss "))
    marks = lines[curve_row + 1]
    assert "^" in marks and "!" in marks and marks.index("^") < marks.index("!")  # 120, 150
    assert "! NaN/inf loss at steps 150..150" in "\n".join(lines)
    _shown, loss, lines = _triage(LOSS_FIXTURES / "losslint_demo" / "diverging.csv")
    curve_row = next(i for i, line in enumerate(lines) if line.lstrip().startswith("loss "))
    curve, marks = lines[curve_row], lines[curve_row + 1]
    assert loss.divergence is not None
    assert set(marks.strip()) == {"~"} and len(marks.strip()) > len(curve.strip()) // 2
    assert f"~ diverging from step {loss.divergence.start}" in "\n".join(lines)


def test_triage_draws_the_curve_of_a_real_megatron_log():
    shown, loss, lines = _triage(REAL_SPIKE_LOG)
    assert shown and loss.source == "megatron" and loss.count == 8
    curve = next(line.strip() for line in lines if line.lstrip().startswith("loss "))
    bars = curve.removeprefix("loss ")
    assert len(bars) == 8 and max(bars[:3]) < min(bars[3:])  # 2.77 -> 7.34 at 29050
    assert "steps 29020..29090" in "\n".join(lines)


def test_spike_marks_follow_the_sparkline_buckets():
    from types import SimpleNamespace as NS

    steps = list(range(0, 1000, 10))  # 100 points in 50 columns: two points a column
    assert spike_columns(steps, [NS(start=500), NS(start=15)], 50) == [25, 1]
    assert marker_line([25, 1], 50) == " ^" + " " * 23 + "^"
    marks = [{"kind": "divergence", "step": 0, "to": 990}, {"kind": "nan", "step": 500,
                                                            "to": 520},
             {"kind": "rollback", "step": 400, "to": None}]
    line = mark_line(steps, marks, 50).plain
    assert line[20] == "R" and line[25:27] == "!!" and line[24] == "~" and line[27] == "~"


# -- 5. probes screen attached to the walk -------------------------------------------------------
def test_probes_from_a_walk_are_attached_and_saved_from_home_only_shown():
    from trainmedic.probes.base import ProbeResult

    asked = []

    def runner(names, _context):
        asked.append(names)
        if names is None:  # the probes screen: all of them
            return [ProbeResult("env", "warn", "NCCL_TIMEOUT is set but nothing reads it",
                                facts={"myth_count": 1, "myth_vars": ["NCCL_TIMEOUT"]})]
        return gpu_full(names)  # the walk's own rules

    async def go():
        app = make_app(probe_runner=runner)
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.press("ctrl+r")  # from home: shown, no walk to attach to
            await pilot.pause()
            await app.workers.wait_for_complete()
            await pilot.pause()
            assert isinstance(app.screen, ProbesScreen) and app.screen.session is None
            await pilot.press("escape")
            await pilot.pause()
            assert list_walks()[0] == []

            await pilot.press(*"mem", "enter")
            await app.workers.wait_for_complete()
            await pilot.pause()
            walk = app.screen
            assert isinstance(walk, WalkScreen)
            assert [p.name for p in walk.session.probes] == ["gpu"]
            await pilot.press("ctrl+r")
            await pilot.pause()
            await app.workers.wait_for_complete()
            await pilot.pause()
            assert isinstance(app.screen, ProbesScreen) and app.screen.session is walk.session
            await pilot.press("escape")
            await pilot.pause()
            assert app.screen is walk
            assert [p.name for p in walk.session.probes] == ["gpu", "env"]
            assert list_walks()[0] == []  # no answer yet: nothing worth a file
            await pilot.press("1")
            await pilot.pause()
            saved = list_walks()[0][0].record.to_dict()
            assert saved["id"] == walk.session.id
            env = next(p for p in saved["probes"] if p["name"] == "env")
            assert env["facts"]["myth_vars"] == ["NCCL_TIMEOUT"]
            assert asked == [None, ["memory", "gpu"], None]
            await pilot.press("escape")
            await pilot.pause()
            assert "WARN env" in "\n".join(screen_text(app))  # the evidence panel shows it
    run(go())


# -- 6. the walk footer fits 80 columns ---------------------------------------------------------
def test_question_footer_fits_80_columns_with_help():
    async def go():
        app = make_app(probe_runner=gpu_full)
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press(*"mem", "enter")
            await pilot.pause(0.3)
            footer = screen_text(app)[-1]
            assert "m launch command" in footer and "? help" in footer
            titles = [c.title for c in app.get_system_commands(app.screen)]
            assert {"Home", "Browse", "Run probes", "Probes again"} <= set(titles)  # hidden
            assert len(titles) == len(set(titles))  # keys stay in the palette, each once
            assert not {"Focus Next", "Copy selected text", "First", "Last"} & set(titles)
    run(go())


def test_quitting_mid_sweep_stops_it_and_keeps_the_last_result(monkeypatch):
    """A sweep cut short by quitting would record every node as silent: the old result stays."""
    import trainmedic.cluster.fanout as fanout
    from trainmedic.cluster import load_last_result

    before = save_cluster_result()
    release = threading.Event()

    def hanging_ssh(nodes, names, *, timeout, **_kw):
        release.wait(30)
        return cluster_run(4, "node03")  # what a stopped fan-out would have made of it

    monkeypatch.setattr(fanout, "fan_out_ssh", hanging_ssh)
    monkeypatch.setattr(fanout, "stop_all", release.set)  # stands in for killing ssh children
    monkeypatch.delenv("SLURM_JOB_NODELIST", raising=False)

    async def go():
        app = make_app()
        async with app.run_test(size=(100, 30)) as pilot:
            app.action_cluster()
            await pilot.pause()
            spec = app.screen.query_one("#sweep-spec", Input)
            spec.value = "node[01-04]"
            spec.focus()
            await pilot.press("enter")
            await pilot.pause(0.2)
            assert not release.is_set()
        assert release.is_set()  # the app stopped the fan-out on its way out

    try:
        run(go())  # returns once the worker thread has ended
    finally:
        release.set()
    assert load_last_result() == before


def test_many_bad_nodes_keep_the_state_column_and_the_verdicts_in_view():
    """64 nodes, every third silent: the healthy set is a long scattered host list."""
    from tui_helpers import node_payload

    from trainmedic.cluster.aggregate import aggregate
    from trainmedic.cluster.fanout import FanoutRun, NodeAnswer
    from trainmedic.cluster.store import save_last_result

    hosts = [f"gpu{i:03d}" for i in range(1, 65)]
    answers = [NodeAnswer(h, "ok", node_payload(h), "", 1.0) if i % 3 else
               NodeAnswer(h, "no-answer", None, "no answer within 60s", 60.0)
               for i, h in enumerate(hosts)]
    save_last_result(aggregate(FanoutRun("ssh", hosts, answers, [], 60.0), "gpu[001-064]"))

    async def go():
        app = make_app()
        async with app.run_test(size=(80, 24)) as pilot:
            app.action_cluster()
            await pilot.pause(0.3)
            table = app.screen.query_one("#cluster-table", DataTable)
            last = [str(c) for c in table.get_row_at(table.row_count - 1)]
            assert last == ["gpu[002-003,005-006,008-… (42)", "ok"]
            lines = screen_text(app)
            assert any(line.split()[:2] == ["gpu001", "silent"] for line in lines if line)
            assert any("Bad nodes" in line for line in lines)
            assert lines[1].startswith(" 64 nodes via ssh: 42 answered, 22 bad")
    run(go())
