"""The saved last result: XDG location, atomic replace, unreadable files give None."""

from __future__ import annotations

import json
from pathlib import Path

from trainmedic.cluster import ClusterResult, last_result_path, load_last_result
from trainmedic.cluster.store import save_last_result


def result(bad: list[str]) -> ClusterResult:
    return ClusterResult("2026-11-29T08:00:00+00:00", "node[01-02]", "ssh", 2, 2, 1.5,
                         bad_nodes=bad)


def test_default_location_is_under_home(monkeypatch, tmp_path):
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert last_result_path() == tmp_path / ".local/state/trainmedic/cluster-last.json"
    monkeypatch.setenv("XDG_STATE_HOME", "relative/ignored")
    assert last_result_path() == tmp_path / ".local/state/trainmedic/cluster-last.json"


def test_save_then_load_and_replace(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert load_last_result() is None
    path = save_last_result(result(["a"]))
    assert path == tmp_path / "trainmedic" / "cluster-last.json"
    save_last_result(result([]))
    assert load_last_result() == result([])
    assert [p.name for p in Path(path).parent.iterdir()] == ["cluster-last.json"]


def test_unreadable_or_foreign_files_give_none(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    path = tmp_path / "trainmedic" / "cluster-last.json"
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    assert load_last_result() is None
    path.write_text(json.dumps([1, 2]))
    assert load_last_result() is None


def test_a_result_saved_by_0_1_0_still_loads(monkeypatch, tmp_path):
    """The dict `aggregate` returned then, as `save_last_result` wrote it."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    saved = {"version": 1, "time": "2026-11-29T08:00:00+00:00", "spec": "node[01-02]",
             "method": "ssh", "node_count": 2, "answered": 1, "wall_s": 60.1,
             "bad_nodes": ["node02"], "verdicts": ["node02: no answer within 60s — it hangs"],
             "findings": [{"host": "node02", "kind": "no-answer",
                           "message": "no answer within 60s", "fact": ""}],
             "outliers": [], "splits": [],
             "nodes": [{"host": "node01", "state": "ok", "detail": "", "duration_s": 0.8,
                        "result": {"host": "node01", "probes": []}},
                       {"host": "node02", "state": "no-answer", "detail": "no answer within 60s",
                        "duration_s": 60.0, "result": None}]}
    last_result_path().parent.mkdir(parents=True)
    last_result_path().write_text(json.dumps(saved))
    loaded = load_last_result()
    assert loaded is not None and loaded.to_dict() == saved
    assert loaded.findings[0].kind == "no-answer" and loaded.nodes[1].payload is None
