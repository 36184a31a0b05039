"""Every example in docs/api.md runs as written, in a folder of real logs and a real script.

The folder holds `logs/` (a per-rank set of real lines: one rank's OOM, the others' watchdog
timeouts; tests/fixtures/triage/multirank_oom) and `pretrain_llama3_8b.sh` (Megatron-LM's own
example launch script, tests/fixtures/memory). A block preceded by `<!-- doc-test: exits N -->`
must exit with N; the others with 0. Each runs in a fresh interpreter, like a notebook cell
after a restart or a CI step.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "api.md"
BLOCK = re.compile(r"(?:<!-- doc-test: exits (?P<exit>\d+) -->\n)?```python\n(?P<code>.*?)```",
                   re.DOTALL)


def examples() -> list[tuple[int, str]]:
    text = DOC.read_text(encoding="utf-8")
    return [(int(m["exit"] or 0), m["code"]) for m in BLOCK.finditer(text)]


def test_the_page_has_the_examples_the_issue_asks_for():
    codes = [code for _, code in examples()]
    assert len(codes) >= 6
    assert any("triage_paths" in c and "sys.exit(1" in c for c in codes)  # CI fails on a cause
    assert any("estimate_memory" in c for c in codes)
    assert any("walk(" in c for c in codes) and any("open_walk" in c for c in codes)


@pytest.fixture
def folder(tmp_path):
    shutil.copytree(ROOT / "tests" / "fixtures" / "triage" / "multirank_oom", tmp_path / "logs")
    shutil.copy(ROOT / "tests" / "fixtures" / "memory" / "megatron_llama3_8b_h100_fp8.sh",
                tmp_path / "pretrain_llama3_8b.sh")
    return tmp_path


@pytest.mark.parametrize(("expected", "code"), examples(),
                         ids=[f"block{i + 1}" for i in range(len(examples()))])
def test_every_example_runs(folder, expected, code):
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"),
           "XDG_STATE_HOME": str(folder / "state"), "XDG_CACHE_HOME": str(folder / "cache")}
    result = subprocess.run([sys.executable, "-c", code], cwd=folder, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == expected, result.stdout[-2000:] + result.stderr[-3000:]
    assert result.stderr == ""
    assert result.stdout.strip()  # every example shows something


def test_importing_the_api_loads_no_engine_and_no_ui():
    probe = ("import sys, trainmedic.api as api; "
             "heavy = [m for m in ('textual', 'rich', 'yaml', 'trainmedic.triage', "
             "'trainmedic.memory', 'trainmedic.walk') if m in sys.modules]; "
             "print(heavy, api.TriageReport.__name__, api.WalkSession.__name__)")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT / "src")}, timeout=60)
    assert result.stdout.split("]")[0] == "["  # nothing heavy before the names are used
    assert result.stdout.strip().endswith("TriageReport WalkSession")


def test_api_errors_are_usage_errors(folder):
    from trainmedic.api import UsageError, estimate_memory, triage_paths, walk

    with pytest.raises(UsageError, match="no such file"):
        triage_paths(folder / "missing.log")
    with pytest.raises(UsageError, match="give Megatron arguments"):
        estimate_memory()
    with pytest.raises(UsageError, match="gpu_memory"):
        estimate_memory("--num-layers 2", gpu_memory="lots")
    with pytest.raises(UsageError, match="out of range"):
        walk("triage", [99])
    with pytest.raises(UsageError, match="already reached the fix"):
        walk("triage", [2, 9, 9, 1, 1, 1, 1, 1])


def test_walk_matches_the_cli_and_saves_when_asked(folder, monkeypatch):
    from trainmedic.api import walk
    from trainmedic.saved_walks import list_walks

    monkeypatch.setenv("XDG_STATE_HOME", str(folder / "state"))
    session = walk("triage", [2, 5, 2], save=True)
    cli = subprocess.run([sys.executable, "-m", "trainmedic", "walk", "triage", "--answers",
                          "2,5,2", "--no-probes", "--json"], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT / "src"),
                              "XDG_STATE_HOME": str(folder / "cli-state")}, timeout=60)
    import json

    assert cli.returncode == 0, cli.stderr
    assert json.loads(cli.stdout)["current"] == str(session.current)
    assert session.fix is not None
    saved = list_walks()[0]
    assert [w.id for w in saved] == [session.id]
