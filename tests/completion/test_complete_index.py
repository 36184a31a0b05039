"""The index behind `trainmedic __complete`: unchanged files are not read again, a changed one
is, a broken or corrupt one offers nothing and breaks nothing."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from trainmedic.commands import complete
from trainmedic.trees import load_forest

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "serve" / "browser-drill.yaml"


@pytest.fixture
def trees(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    folder = tmp_path / "trees"
    folder.mkdir()
    shutil.copy(FIXTURE, folder)
    return folder


@pytest.fixture
def reads(monkeypatch) -> list[str]:
    """The files read_ids was asked to parse."""
    seen: list[str] = []
    real = complete.read_ids

    def counting(path: str):
        seen.append(path)
        return real(path)

    monkeypatch.setattr(complete, "read_ids", counting)
    return seen


def test_unchanged_files_come_from_the_index(trees, reads) -> None:
    every = {str(p) for p in complete.builtin_tree_dir().rglob("*.yaml")} | {
        str(trees / FIXTURE.name)}
    assert complete.candidates("trees", "", [str(trees)]) == sorted(load_forest([trees]).trees)
    assert set(reads) == every
    reads.clear()
    assert complete.candidates("targets", "browser-drill#l", [str(trees)]) == [
        "browser-drill#later"]
    assert reads == []


def test_a_changed_tree_file_is_read_again(trees, reads) -> None:
    complete.candidates("trees", "", [str(trees)])
    reads.clear()
    path = trees / FIXTURE.name
    path.write_text(path.read_text() + "  extra:\n    fix: An extra fix\n    why: Added.\n"
                    "    steps:\n      - do: Nothing.\n        code: 'true'\n")
    assert "browser-drill#extra" in complete.candidates("targets", "browser-drill#", [str(trees)])
    assert reads == [str(path)]


def test_a_broken_file_and_a_corrupt_index_offer_nothing_and_raise_nothing(trees) -> None:
    (trees / "broken.yaml").write_text("id: [unclosed\n")
    complete.index_path().parent.mkdir(parents=True)
    complete.index_path().write_text("{not json")
    assert complete.candidates("trees", "brow", [str(trees)]) == ["browser-drill"]
    assert complete.candidates("trees", "", [str(trees / "missing")]) == sorted(
        load_forest([]).trees)
