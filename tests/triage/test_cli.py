"""`trainmedic triage` as a user runs it: exit codes, --json shape, stdin, no Textual."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from trainmedic.cli import main

from .conftest import FIXTURES


def run_cli(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, COLUMNS="200")
    return subprocess.run([sys.executable, "-m", "trainmedic", "triage", *args], input=stdin,
                          capture_output=True, timeout=60, env=env)


def test_json_shape_and_exit_one_on_findings(capsys):
    code = main(["triage", str(FIXTURES / "multirank_oom"), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1
    f = out["findings"][0]
    assert {"signature", "tree", "node", "confidence", "summary", "evidence", "why"} <= set(f)
    assert (f["tree"], f["node"]) == ("oom", "when")
    assert {"file", "line", "text"} <= set(f["evidence"][0])
    assert {"loss", "ranks"} <= set(out) and out["next"] == "trainmedic walk oom#when"


def test_clean_log_exits_zero(capsys):
    assert main(["triage", str(FIXTURES / "nccl_info_noise.log")]) == 0
    out = capsys.readouterr().out
    assert "No known failure signature" in out
    # a quiet hang reads like this log: the user is told how to say what they saw
    assert "--symptom hang|slow|diverged|not-learning" in out


def test_unreadable_input_exits_two_with_one_line(tmp_path):
    proc = run_cli(str(tmp_path / "missing.log"))
    assert proc.returncode == 2
    err = proc.stderr.decode()
    assert err.startswith("trainmedic: error: ") and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_stdin_and_human_output_ends_with_walk_command():
    data = (FIXTURES / "watchdog_mismatch.log").read_bytes()
    proc = run_cli("-", stdin=data)
    assert proc.returncode == 1
    out = proc.stdout.decode().strip().splitlines()
    assert out[0].startswith("1. at collective #80078 rank 7 entered BROADCAST")
    assert out[-1] == "Continue with: trainmedic walk nccl-hang#collective-mismatch"


def imported_modules(*args: str) -> list[str]:
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "trainmedic", "triage", *args],
        capture_output=True, timeout=60,
    )
    assert proc.returncode == 1
    return [line.split("|")[-1].strip() for line in proc.stderr.decode().splitlines()
            if line.startswith("import time:")]


def test_triage_never_imports_textual():
    imported = imported_modules(str(FIXTURES / "oom_fragmentation.log"))
    assert "trainmedic.triage.scanner" in imported  # the measurement itself works
    assert not [m for m in imported if m.split(".")[0] == "textual"]


def test_json_output_does_not_even_import_rich():
    imported = imported_modules(str(FIXTURES / "oom_fragmentation.log"), "--json")
    assert "trainmedic.triage.scanner" in imported
    assert not [m for m in imported if m.split(".")[0] in ("rich", "textual")]
