"""`trainmedic lint` as a user runs it: exit codes, one-line errors, JSON, and no Textual."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BAD = ROOT / "tests" / "fixtures" / "bad_trees"


def lint(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "trainmedic", "lint", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=60)


def test_builtin_trees_lint_clean_from_any_directory() -> None:
    result = lint(cwd=Path("/"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 error(s)" in result.stderr


def test_bad_corpus_exits_1_with_one_line_per_problem_and_no_traceback() -> None:
    result = lint(str(BAD))
    assert result.returncode == 1
    assert "Traceback" not in result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) >= 25
    assert all(line.startswith("tests/fixtures/bad_trees/") for line in lines)
    assert all(": error: " in line or ": warning: " in line for line in lines)


def test_missing_path_is_a_usage_error() -> None:
    result = lint("no/such/dir")
    assert result.returncode == 2
    assert result.stderr.strip() == "trainmedic: error: no/such/dir: no such file or folder"


def test_json_output() -> None:
    result = lint("--json", str(BAD / "cycle.yaml"))
    assert result.returncode == 1
    data = json.loads(result.stdout)
    assert data["errors"] == 1
    assert data["problems"] == [{
        "file": "tests/fixtures/bad_trees/cycle.yaml", "line": 9, "severity": "error",
        "message": "cycle: cycle#q1 -> cycle#q2 -> cycle#q1",
    }]


def test_warnings_fail_only_with_strict() -> None:
    assert lint(str(BAD / "too_many_answers.yaml")).returncode == 0
    assert lint("--strict", str(BAD / "too_many_answers.yaml")).returncode == 1


def test_user_tree_links_into_builtin_forest(tmp_path: Path) -> None:
    (tmp_path / "mine.yaml").write_text(
        "id: mine\ntitle: Mine\nsummary: A team tree.\nstart: q\nnodes:\n"
        "  q:\n    question: Frozen?\n    answers:\n"
        "      - text: Yes, a collective hangs\n        goto: nccl-hang\n"
        "      - text: No\n        goto: done\n"
        "  done:\n    fix: Nothing\n    why: Fine.\n    steps:\n"
        "      - do: Carry on.\n        code: 'true'\n")
    result = lint(str(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr


def test_lint_never_imports_textual() -> None:
    # caches off: every check runs (a remembered result would import less still)
    env = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1", "TRAINMEDIC_NO_CACHE": "1"}
    result = subprocess.run([sys.executable, "-X", "importtime", "-m", "trainmedic", "lint"],
                            cwd=ROOT, capture_output=True, text=True, env=env, timeout=60)
    imported = {line.split("|")[-1].strip() for line in result.stderr.splitlines()
                if line.startswith("import time:")}
    assert "trainmedic.trees.lint" in imported  # the measurement saw our own modules
    assert not any(name == "textual" or name.startswith("textual.") for name in imported)
