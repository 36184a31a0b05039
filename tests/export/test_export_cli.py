"""`trainmedic export`: formats, -o, --all, and one-line errors for bad usage."""

from __future__ import annotations

import json
from pathlib import Path

import mermaid_grammar
import pytest

from trainmedic.cli import main

EXAMPLES = str(Path(__file__).resolve().parents[2] / "docs" / "examples")


def export(*args: str) -> int:
    return main(["--trees", EXAMPLES, "export", *args])


def test_markdown_to_stdout_and_file_are_identical(tmp_path, capsys):
    assert export("disk-full") == 0
    out = capsys.readouterr().out
    assert export("disk-full", "-o", str(tmp_path / "r.md")) == 0
    assert (tmp_path / "r.md").read_text(encoding="utf-8") == out
    assert out.startswith("# Checkpoint save fails\n")


def test_mermaid_format_is_the_diagram_alone(capsys):
    assert export("disk-full", "--format", "mermaid") == 0
    diagram = capsys.readouterr().out
    assert diagram.startswith("flowchart TD\n") and mermaid_grammar.check(diagram) == []


def test_json_is_the_normalised_tree_with_source_lines(capsys):
    assert export("disk-full", "--json") == 0
    data = json.loads(capsys.readouterr().out)
    assert data["id"] == "disk-full" and data["start"] == "what-error"
    assert data["file"].endswith("disk-full.yaml") and data["line"] >= 1
    nodes = {n["id"]: n for n in data["nodes"]}
    assert list(nodes) == ["what-error", "other-tree-link", "disk-space", "quota"]
    assert all(n["line"] > 1 for n in data["nodes"])
    answer = nodes["what-error"]["answers"][1]
    assert answer["text"] == {"en": "Disk quota exceeded", "zh": "磁盘配额已满"}
    assert nodes["other-tree-link"]["answers"][1]["target"] == "example-hang#all-stopped"
    assert nodes["quota"]["steps"][1]["lang"] == "text"


def test_all_writes_every_tree_and_an_index(tmp_path, capsys):
    assert export("--all", "-o", str(tmp_path / "out")) == 0
    names = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert "README.md" in names and "disk-full.md" in names and "example-hang.md" in names
    assert export("--all", "--format", "json", "-o", str(tmp_path / "json")) == 0
    assert json.loads((tmp_path / "json" / "disk-full.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize(("args", "message"), [
    (["no-such-tree"], "no tree 'no-such-tree'"),
    ([], "name a tree to export"),
    (["--all"], "--all needs -o DIR"),
    (["disk-full", "--all", "-o", "x"], "either TREE or --all"),
])
def test_bad_usage_is_a_one_line_error(args, message, capsys):
    assert export(*args) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_all_into_a_file_is_refused(tmp_path, capsys):
    target = tmp_path / "file"
    target.write_text("x", encoding="utf-8")
    assert export("--all", "-o", str(target)) == 2
    assert "not a folder" in capsys.readouterr().err


def test_all_into_a_folder_that_cannot_be_made_is_refused(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x", encoding="utf-8")
    assert export("--all", "-o", str(blocker / "runbooks")) == 2
    err = capsys.readouterr().err
    assert "cannot create" in err and len(err.strip().splitlines()) == 1
