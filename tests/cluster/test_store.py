"""The saved last result: XDG location, atomic replace, unreadable files give None."""

from __future__ import annotations

import json
from pathlib import Path

from trainmedic.cluster import last_result_path, load_last_result
from trainmedic.cluster.store import save_last_result


def test_default_location_is_under_home(monkeypatch, tmp_path):
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert last_result_path() == tmp_path / ".local/state/trainmedic/cluster-last.json"
    monkeypatch.setenv("XDG_STATE_HOME", "relative/ignored")
    assert last_result_path() == tmp_path / ".local/state/trainmedic/cluster-last.json"


def test_save_then_load_and_replace(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert load_last_result() is None
    path = save_last_result({"bad_nodes": ["a"], "verdicts": []})
    assert path == tmp_path / "trainmedic" / "cluster-last.json"
    save_last_result({"bad_nodes": [], "verdicts": []})
    assert load_last_result() == {"bad_nodes": [], "verdicts": []}
    assert [p.name for p in Path(path).parent.iterdir()] == ["cluster-last.json"]


def test_unreadable_or_foreign_files_give_none(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    path = tmp_path / "trainmedic" / "cluster-last.json"
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    assert load_last_result() is None
    path.write_text(json.dumps([1, 2]))
    assert load_last_result() is None
