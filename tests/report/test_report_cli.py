"""`trainmedic report`: latest or named walk, corrupt saves skipped, --repo, --probe, --json."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from report_session import EXAMPLES, SECRETS, session_dict

from trainmedic.cli import main
from trainmedic.saved_walks import save_walk
from trainmedic.state import walks_dir
from trainmedic.walk import WalkRecord


def save(data: dict) -> None:
    save_walk(WalkRecord.from_dict(data))


def report(*args: str) -> int:
    return main(["--trees", str(EXAMPLES), "report", *args])


def test_latest_walk_is_reported_and_corrupt_files_are_warned_about(capsys):
    save(session_dict())
    older = session_dict() | {"id": "older-walk", "updated": "2026-01-01T00:00:00Z"}
    save(older)
    (walks_dir() / "broken.json").write_text('{"version": 1, "id": "bro', encoding="utf-8")
    assert report() == 0
    out, err = capsys.readouterr()
    assert "Walk `20261129T081600-disk-full-3f2a`" in out
    assert "broken.json: skipped: corrupt or truncated" in err and "Traceback" not in err
    assert report("older") == 0
    assert "Walk `older-walk`" in capsys.readouterr().out


def test_no_walk_and_unknown_walk_are_one_line_usage_errors(capsys):
    assert report() == 2
    assert capsys.readouterr().err.strip() == (
        "trainmedic: error: no saved walks yet: run `trainmedic walk TREE` first")
    save(session_dict())
    assert report("nothing-like-this") == 2
    assert "no saved walk 'nothing-like-this'" in capsys.readouterr().err


def test_output_file_and_json_have_no_secrets(tmp_path, capsys):
    save(session_dict())
    target = tmp_path / "incident.md"
    assert report("-o", str(target)) == 0
    text = target.read_text(encoding="utf-8")
    assert text.startswith("# Incident report")
    assert report("--json") == 0
    data = json.loads(capsys.readouterr().out)
    assert data["walk"]["id"] == "20261129T081600-disk-full-3f2a"
    for secret in SECRETS.values():
        assert secret not in text and secret not in json.dumps(data)


def test_list_shows_walks_newest_first(capsys):
    save(session_dict())
    save(session_dict() | {"id": "older-walk", "updated": "2026-01-01T00:00:00Z"})
    assert report("--list", "--json") == 0
    data = json.loads(capsys.readouterr().out)
    assert [w["id"] for w in data["walks"]] == ["20261129T081600-disk-full-3f2a", "older-walk"]
    assert report("--list") == 0
    assert capsys.readouterr().out.splitlines()[1].startswith("older-walk  disk-full")


def _git(repo, *args):
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                   timeout=30)


def test_repo_commit_and_dirty_flag(tmp_path, capsys):
    save(session_dict())
    repo = tmp_path / "Megatron-LM"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "train.py").write_text("print(1)\n", encoding="utf-8")
    _git(repo, "add", "train.py")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "c")
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True,
                          text=True, check=True, timeout=30).stdout.strip()
    assert report("--repo", str(repo)) == 0
    assert f"{head} (clean)" in capsys.readouterr().out
    (repo / "train.py").write_text("print(2)\n", encoding="utf-8")
    assert report("--repo", str(repo)) == 0
    assert f"{head} (dirty: uncommitted changes)" in capsys.readouterr().out
    assert report("--repo", str(tmp_path)) == 2
    assert "not a git checkout" in capsys.readouterr().err
    assert report("--repo", str(tmp_path / "missing")) == 2


def test_probe_runs_fresh_probes_and_replaces_saved_results(monkeypatch, capsys):
    runner = pytest.importorskip("trainmedic.probes.runner")
    from trainmedic.probes.base import ProbeResult

    fresh = ProbeResult(name="versions", status="ok", summary="torch 2.5.1",
                        facts={"torch": "2.5.1", "torch_cuda": "12.6", "nccl": "2.23.4",
                               "transformer_engine": "1.12.0"},
                        raw=f"HF_TOKEN={SECRETS['hf']}")
    monkeypatch.setattr(runner, "run_probes", lambda names=None, context=None, **kw: [fresh])
    save(session_dict())
    assert report("--probe") == 0
    out = capsys.readouterr().out
    assert "PyTorch 2.5.1, CUDA (PyTorch build) 12.6, NCCL 2.23.4, TransformerEngine 1.12.0" in out
    assert "| env | warn |" in out and SECRETS["hf"] not in out


def test_report_and_export_never_import_textual_or_rich():
    code = ("import sys; from trainmedic.cli import main; "
            f"main(['--trees', {str(EXAMPLES)!r}, 'export', 'disk-full', '-o', '/dev/null']); "
            "main(['report', '--list']); "
            "bad = [m for m in ('textual', 'rich') if m in sys.modules]; print(bad)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=True)
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_report_without_an_id_takes_the_latest_walk_that_reached_a_fix_and_says_so(capsys):
    finished = session_dict() | {"id": "reached-a-fix", "updated": "2026-01-01T00:00:00Z",
                                 "finished": True}
    save(finished)
    save(session_dict() | {"finished": False})  # newer, but it stopped at a question
    assert report() == 0
    out, err = capsys.readouterr()
    assert "Walk `reached-a-fix`" in out
    assert "report of walk reached-a-fix (the latest that reached a fix" in err
