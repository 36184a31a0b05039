"""Lint's remembered result: used only for exactly the same trees and code, never from a folder
others can write, never with TRAINMEDIC_NO_CACHE; and a remembered run imports none of the
loader, the graph or the checks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import trainmedic.trees.forest
from trainmedic.cli import main
from trainmedic.commands import lint_cache
from trainmedic.state import lint_results_path

SRC = str(Path(__file__).resolve().parents[2] / "src")
TREE = """id: mine
title: Mine
summary: A team tree.
start: q
nodes:
  q:
    question: Frozen?
    answers:
      - text: Yes
        goto: {target}
      - text: No
        goto: done
  done:
    fix: Nothing
    why: Fine.
    steps:
      - do: Carry on.
        code: 'true'
"""


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("TRAINMEDIC_NO_CACHE", raising=False)


@pytest.fixture
def loads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the forests lint loads (a remembered result loads none)."""
    calls: list[int] = []
    real = trainmedic.trees.forest.load_forest

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(trainmedic.trees.forest, "load_forest", counting)
    return calls


def lint(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["lint", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_a_remembered_result_prints_the_same_and_loads_nothing(tmp_path, capsys, loads):
    tree = tmp_path / "mine.yaml"
    tree.write_text(TREE.format(target="nowhere"))
    first = lint(capsys, str(tree))
    assert first[0] == 1 and "'goto: nowhere'" in first[1] and len(loads) == 1
    assert lint(capsys, str(tree)) == first and len(loads) == 1
    assert lint(capsys, "--json", str(tree))[0] == 1 and len(loads) == 1  # only the output differs
    assert lint(capsys, "--strict", str(tmp_path))[0] == 1 and len(loads) == 2  # asked otherwise


def test_any_edit_is_seen_even_at_the_same_size_and_time(tmp_path, capsys, loads):
    tree = tmp_path / "mine.yaml"
    tree.write_text(TREE.format(target="nowhere"))
    os.utime(tree, ns=(1_000_000_000, 1_000_000_000))
    assert lint(capsys, str(tree))[0] == 1
    tree.write_text(TREE.format(target="done   "))  # same size: only the bytes differ
    os.utime(tree, ns=(1_000_000_000, 1_000_000_000))
    code, out, _err = lint(capsys, str(tree))
    assert (code, out) == (0, "") and len(loads) == 2


def test_a_new_file_in_a_folder_is_seen(tmp_path, capsys, loads):
    (tmp_path / "mine.yaml").write_text(TREE.format(target="done"))
    assert lint(capsys, str(tmp_path))[0] == 0
    (tmp_path / "other.yaml").write_text(TREE.format(target="nowhere").replace("id: mine",
                                                                              "id: other"))
    assert lint(capsys, str(tmp_path))[0] == 1 and len(loads) == 2


def test_no_cache_neither_reads_nor_writes(tmp_path, capsys, loads, monkeypatch):
    monkeypatch.setenv("TRAINMEDIC_NO_CACHE", "1")
    tree = tmp_path / "mine.yaml"
    tree.write_text(TREE.format(target="done"))
    lint(capsys, str(tree))
    lint(capsys, str(tree))
    assert len(loads) == 2 and not lint_results_path().exists()


def test_a_result_in_a_folder_others_can_write_is_never_used(tmp_path, capsys, loads):
    tree = tmp_path / "mine.yaml"
    tree.write_text(TREE.format(target="done"))
    lint(capsys, str(tree))
    results = lint_results_path()
    results.parent.chmod(0o777)  # anyone could have swapped the file: lint checks again
    assert lint(capsys, str(tree))[0] == 0 and len(loads) == 2
    results.parent.chmod(0o700)
    results.chmod(0o666)
    assert lint(capsys, str(tree))[0] == 0 and len(loads) == 3


def test_a_planted_or_corrupt_result_is_a_miss(tmp_path, capsys, loads):
    tree = tmp_path / "mine.yaml"
    tree.write_text(TREE.format(target="nowhere"))
    lint(capsys, str(tree))
    results = lint_results_path()
    data = json.loads(results.read_text())
    for entry in data["results"].values():
        entry["problems"] = [{"file": "x", "line": "one", "severity": "error", "message": "m"}]
    results.write_text(json.dumps(data))
    assert lint(capsys, str(tree))[0] == 1 and len(loads) == 2  # malformed: linted again
    results.write_text("{not json")
    assert lint(capsys, str(tree))[0] == 1 and len(loads) == 3
    assert lint(capsys, str(tree))[0] == 1 and len(loads) == 3  # and remembered again
    planted = tmp_path / "planted.json"
    results.rename(planted)
    results.symlink_to(planted)  # a link is never followed, even to a good result
    assert lint(capsys, str(tree))[0] == 1 and len(loads) == 4


def test_the_code_stamp_sees_sources_and_data_but_not_bytecode(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "checks.py").write_text("A = 1\n")
    (tmp_path / "pkg" / "__pycache__").mkdir()
    (tmp_path / "lists.json").write_text("{}")
    first = lint_cache._code_stamp(tmp_path)
    assert [row[0] for row in first] == ["lists.json", "pkg/checks.py"]
    (tmp_path / "pkg" / "__pycache__" / "checks.pyc").write_bytes(b"x")
    assert lint_cache._code_stamp(tmp_path) == first
    (tmp_path / "pkg" / "checks.py").write_text("A = 22\n")
    assert lint_cache._code_stamp(tmp_path) != first


def test_only_the_newest_results_are_kept(tmp_path):
    result = lint_cache.LintResult([], 1, 1, 1)
    for n in range(lint_cache.MAX_ENTRIES + 3):
        lint_cache.remember(f"key{n}", result)
    assert lint_cache.lookup("key0") is None
    assert lint_cache.lookup(f"key{lint_cache.MAX_ENTRIES + 2}") == result
    assert len(json.loads(lint_results_path().read_text())["results"]) == lint_cache.MAX_ENTRIES


def _modules_after(args: list[str], env: dict[str, str]) -> set[str]:
    code = ("import sys; from trainmedic.cli import main; main(sys.argv[1:]); "
            "print(' '.join(sorted(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": SRC, **env}, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-500:]
    return set(done.stdout.split())


def test_lint_imports_only_what_it_needs(tmp_path):
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    env.pop("TRAINMEDIC_NO_CACHE", None)
    checked = _modules_after(["lint"], env)  # nothing remembered yet: every check runs
    assert {"trainmedic.trees.lint", "networkx"} <= checked
    assert not {m for m in checked if m.split(".")[0] in ("rich", "textual")}
    remembered = _modules_after(["lint"], env)
    assert "trainmedic.commands.lint_cache" in remembered
    assert not {m for m in remembered if m.split(".")[0] in ("yaml", "networkx", "rich",
                                                             "textual", "pickle")}
    assert not {m for m in remembered if m.startswith(("trainmedic.trees.", "trainmedic.probes",
                                                       "trainmedic.triage"))
                and m not in ("trainmedic.trees.paths", "trainmedic.trees.problems")}
