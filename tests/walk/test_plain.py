from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

from trainmedic.cli import main
from trainmedic.saved_walks import list_walks
from trainmedic.walk import WalkSession


def _plain(monkeypatch, capsys, cli_trees, target, typed):
    monkeypatch.setattr(sys, "stdin", io.StringIO(typed))
    code = main([*cli_trees, "walk", target, "--plain", "--no-probes"])
    return code, capsys.readouterr()


def test_plain_full_walk_to_fix(monkeypatch, capsys, no_builtin):
    code, out = _plain(monkeypatch, capsys, no_builtin, "mem", "1\n2\nq\n")
    assert code == 0
    assert "When does the job run out of memory?" in out.out
    assert "  1. At the first iteration" in out.out
    assert "Fix: Turn on activation recomputation" in out.out
    assert "--recompute-granularity full" in out.out
    walks, skipped = list_walks()
    assert skipped == [] and len(walks) == 1
    assert walks[0].record.current == "mem#recompute" and walks[0].record.finished is True


def test_plain_back_restart_and_garbage(monkeypatch, capsys, no_builtin):
    code, out = _plain(monkeypatch, capsys, no_builtin, "mem",
                       "1\nb\nb\nzz\n9\n\n2\nr\nb\nr\n4\n2\n")
    assert code == 0
    assert out.out.count("please type a number 1-4, b, r or q") == 3
    assert "(already at the first question)" in out.out
    assert "(restart undone)" in out.out  # b right after r: back at the fix
    assert "Fix: Make every rank call the same collectives" in out.out
    data = list_walks()[0][0].record.to_dict()
    assert [s["node"] for s in data["steps"]] == ["mem#when", "hang#stuck"]
    assert data["stack"] == ["mem#when"]


def test_plain_return_from_linked_tree(monkeypatch, capsys, no_builtin):
    code, out = _plain(monkeypatch, capsys, no_builtin, "mem", "4\nu\n1\nq\n")
    assert code == 0 and "u return" in out.out
    data = list_walks()[0][0].record.to_dict()
    assert data["current"] == "mem#shrink" and data["stack"] == []
    assert [s["node"] for s in data["steps"]] == ["mem#when"]


def test_plain_eof_exits_cleanly_and_saves(monkeypatch, capsys, no_builtin):
    code, out = _plain(monkeypatch, capsys, no_builtin, "mem", "1\n")
    assert code == 0 and "Traceback" not in out.err
    data = list_walks()[0][0].record.to_dict()
    assert data["current"] == "mem#shrink" and data["finished"] is False


def test_plain_fix_did_not_help_goes_back(monkeypatch, capsys, no_builtin):
    code, _out = _plain(monkeypatch, capsys, no_builtin, "hang#stuck", "2\nn\nq\n")
    assert code == 0
    record = list_walks()[0][0].record
    assert record.current == "hang#stuck" and record.steps == []
    assert [(t.node, t.question, t.answer) for t in record.tried] == [
        ("hang#collective", "hang#stuck", 1)]  # "did not help" is kept for the report


def test_plain_shows_probe_suggestion(forest):
    from trainmedic.plain import run_plain
    from trainmedic.probes.base import ProbeResult

    def fake_runner(names, _context):
        assert names == ["memory", "gpu"]
        return [ProbeResult("gpu", "warn", "full", facts={"max_memory_fraction": 0.97},
                            evidence={"max_memory_fraction": "GPU 1: 78 of 80 GiB used"})]

    out = io.StringIO()
    saved = []
    code = run_plain(WalkSession(forest, "mem"), io.StringIO("3\n"), out,
                     probe_runner=fake_runner, save=saved.append)
    assert code == 0
    text = out.getvalue()
    assert "3. Another process holds GPU memory  (suggested)" in text
    assert "GPU 1: 78 of 80 GiB used" in text
    assert saved[-1].steps[0].suggested == 2


def test_answers_prints_path_and_fix(capsys, no_builtin):
    code = main([*no_builtin, "walk", "mem", "--answers", "1,1"])
    out = capsys.readouterr().out
    assert code == 0
    assert "1. When does the job run out of memory?" in out
    assert "→ 1. At the first iteration" in out
    assert "→ 1. Yes" in out
    assert "Fix: Lower the micro-batch size and keep the global batch" in out
    assert "--micro-batch-size 1 --global-batch-size 512" in out


def test_answers_json_follows_link(capsys, no_builtin):
    code = main([*no_builtin, "walk", "mem", "--answers", "4,1", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0
    assert data["current"] == "hang#straggler" and data["stack"] == ["mem#when"]


def test_answers_out_of_range_names_step(capsys, no_builtin):
    code = main([*no_builtin, "walk", "mem", "--answers", "1,5"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.strip() == ("trainmedic: error: step 2 (mem#shrink): answer 5 is out of range "
                           "(1-2)")


def test_answers_bad_input_and_too_few(capsys, no_builtin):
    assert main([*no_builtin, "walk", "mem", "--answers", "1,x"]) == 2
    assert "'x' is not an answer number" in capsys.readouterr().err
    assert main([*no_builtin, "walk", "mem", "--answers", "1"]) == 2
    assert "stop at the question mem#shrink" in capsys.readouterr().err
    assert list_walks()[0] == []  # a failed --answers run is not saved
    assert main([*no_builtin, "walk", "mem", "--answers", "2,1"]) == 2
    assert "already reached the fix mem#leak" in capsys.readouterr().err
    assert main([*no_builtin, "walk", "nope", "--answers", "1"]) == 2
    assert "no tree 'nope'" in capsys.readouterr().err


def test_resume_continues_last_walk(monkeypatch, capsys, no_builtin):
    main([*no_builtin, "walk", "mem", "--answers", "1,2"])
    capsys.readouterr()
    monkeypatch.setattr(sys, "stdin", io.StringIO("b\n1\nq\n"))
    assert main([*no_builtin, "walk", "--resume", "--plain"]) == 0
    walks, _ = list_walks()
    assert len(walks) == 1 and walks[0].record.current == "mem#micro-batch"
    assert main([*no_builtin, "walk", "--resume", "nothing-like-this"]) == 2
    assert "no saved walk 'nothing-like-this'" in capsys.readouterr().err


def test_resume_skips_corrupt_file(monkeypatch, capsys, no_builtin, tmp_path):
    main([*no_builtin, "walk", "mem", "--answers", "2"])
    capsys.readouterr()
    (list_walks()[0][0].path.parent / "broken.json").write_text("{not json")
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    assert main([*no_builtin, "walk", "--resume", "--plain"]) == 0
    assert "broken.json: skipped: corrupt or truncated" in capsys.readouterr().err


def test_walk_command_line_does_not_import_textual(tmp_path):
    fixtures = Path(__file__).resolve().parent.parent / "fixtures" / "walk"
    code = (
        "import sys, trainmedic.cli as c\n"
        "rc = c.main(['--trees', sys.argv[1], 'walk', 'mem', '--answers', '2'])\n"
        "assert 'textual' not in sys.modules, 'textual imported'\n"
        "sys.exit(rc)\n"
    )
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-c", code, str(fixtures)], capture_output=True,
                          text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "Fix: Find what keeps tensors alive" in proc.stdout


def test_walk_without_a_terminal_falls_back_to_plain(monkeypatch, capsys, no_builtin):
    monkeypatch.setattr(sys, "stdin", io.StringIO("2\n"))
    assert main([*no_builtin, "walk", "hang", "--no-probes"]) == 0
    assert "Fix: Make every rank call the same collectives" in capsys.readouterr().out
