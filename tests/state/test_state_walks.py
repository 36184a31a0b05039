"""Saved walks: atomic saves, listing newest first, corrupt files reported and skipped."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from trainmedic.saved_walks import find_walk, list_walks, save_walk
from trainmedic.state import walks_dir, write_json_atomic
from trainmedic.walk import WalkRecord


def walk(walk_id: str, updated: str, **extra: str) -> WalkRecord:
    return WalkRecord.from_dict({
        "version": 1, "id": walk_id, "tree": "disk-full", "started": updated,
        "updated": updated, "current": "disk-full#what-error", "finished": False,
        "steps": [STEP], "stack": [], "probes": [], "triage": None, "launch_command": "",
        "notes": "", **extra})


STEP = {"node": "disk-full#start", "question": "Where?", "answer": 0, "answer_text": "Here",
        "goto": "disk-full#what-error"}  # one answer: a walk without any is not kept


def test_state_dir_follows_xdg_state_home(tmp_path):
    assert walks_dir() == tmp_path / "state" / "trainmedic" / "walks"


def test_save_then_find_returns_the_same_data():
    data = walk("20261129T081600-disk-full-3f2a", "2026-11-29T08:16:00Z",
                notes="non-ASCII survives: 显存")
    path = save_walk(data)
    assert path.name == "20261129T081600-disk-full-3f2a.json"
    found, skipped = find_walk("20261129T081600-disk-full-3f2a")
    assert skipped == [] and found is not None and found.record == data
    assert find_walk("20261129T081600")[0].record == data  # id prefix
    assert find_walk(str(path))[0].record == data  # file path
    assert find_walk("nope")[0] is None


def test_resaving_replaces_and_leaves_no_temporary_files():
    for step in range(5):
        save_walk(walk("w1", f"2026-11-29T08:16:0{step}Z", notes=str(step)))
    # the one file beside the walks: the save locks (saved_walks.LOCKS_FILE), never temporaries
    assert sorted(p.name for p in walks_dir().iterdir()) == [".locks", "w1.json"]
    assert find_walk("w1")[0].record.notes == "4"


def test_list_is_newest_first_and_latest_is_the_newest():
    save_walk(walk("older", "2026-11-29T08:00:00Z"))
    save_walk(walk("newest", "2026-11-29T09:00:00Z"))
    save_walk(walk("middle", "2026-11-29T08:30:00Z"))
    walks, skipped = list_walks()
    assert [w.id for w in walks] == ["newest", "middle", "older"] and skipped == []
    assert find_walk(None)[0].id == "newest"


@pytest.mark.parametrize(("content", "reason"), [
    (b'{"version": 1, "id": "t", "steps": [{"node": "a#b", "ques', "corrupt or truncated"),
    (b"", "corrupt or truncated"),
    (b"\xff\xfe\x00garbage", "corrupt or truncated"),
    (b"[1, 2, 3]", "not a saved walk"),
    (b'{"id": "x"}', "not a saved walk"),
    (b'{"version": 7, "id": "x", "steps": []}', "another trainmedic version"),
])
def test_unreadable_files_are_reported_and_skipped_never_fatal(content, reason):
    save_walk(walk("good", "2026-11-29T08:00:00Z"))
    bad = walks_dir() / "bad.json"
    bad.write_bytes(content)
    walks, skipped = list_walks()
    assert [w.id for w in walks] == ["good"]
    assert [s.path for s in skipped] == [bad] and reason in skipped[0].reason
    assert str(skipped[0]).startswith(f"{bad}: skipped: ")
    found, skipped_again = find_walk(None)
    assert found.id == "good" and len(skipped_again) == 1
    assert find_walk(str(bad)) == (None, skipped_again)


def test_a_folder_named_like_a_walk_and_temp_files_are_ignored_or_skipped():
    save_walk(walk("good", "2026-11-29T08:00:00Z"))
    (walks_dir() / "folder.json").mkdir()
    (walks_dir() / ".good.json.abc123.tmp").write_text("{half", encoding="utf-8")
    walks, skipped = list_walks()
    assert [w.id for w in walks] == ["good"]
    assert [s.path.name for s in skipped] == ["folder.json"]


def test_no_state_folder_yet_means_no_walks():
    assert list_walks() == ([], [])
    assert find_walk(None) == (None, [])


@pytest.mark.parametrize("bad_id", ["../escape", "a/b", ".hidden", "", None, "x" * 300])
def test_ids_that_cannot_name_a_file_are_refused_as_oserror(bad_id):
    with pytest.raises(OSError, match="cannot name a file"):
        save_walk(WalkRecord.from_dict({"id": bad_id, "current": "disk-full#what-error",
                                        "steps": []}))
    assert not walks_dir().exists() or list(walks_dir().iterdir()) == []


def test_unserialisable_data_never_replaces_the_previous_file(tmp_path):
    target = tmp_path / "x.json"
    write_json_atomic(target, {"ok": 1})
    with pytest.raises(TypeError):
        write_json_atomic(target, {"bad": object()})
    assert json.loads(target.read_text(encoding="utf-8")) == {"ok": 1}
    assert sorted(os.listdir(tmp_path)) == ["state", "x.json"] or sorted(
        os.listdir(tmp_path)) == ["x.json"]


def test_unwritable_folder_raises_oserror(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root ignores folder permissions")
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        with pytest.raises(OSError):
            write_json_atomic(ro / "x.json", {"a": 1})
    finally:
        ro.chmod(0o700)
    assert not Path(ro / "x.json").exists()


def test_listing_sweeps_temporary_files_left_by_killed_writers_but_not_fresh_ones():
    save_walk(walk("good", "2026-11-29T08:00:00Z"))
    stale = walks_dir() / ".good.json.old.tmp"
    fresh = walks_dir() / ".good.json.new.tmp"
    stale.write_text("{", encoding="utf-8")
    fresh.write_text("{", encoding="utf-8")
    os.utime(stale, (0, 0))
    list_walks()
    assert not stale.exists() and fresh.exists()


def test_a_limited_listing_reads_only_the_newest_files():
    for i in range(30):
        path = save_walk(walk(f"w{i:02d}", f"2026-11-29T08:{i:02d}:00Z"))
        os.utime(path, (1_700_000_000 + i, 1_700_000_000 + i))
    (walks_dir() / "broken-old.json").write_text("{")
    os.utime(walks_dir() / "broken-old.json", (1_600_000_000, 1_600_000_000))
    walks, skipped = list_walks(limit=5)
    assert [w.id for w in walks] == ["w29", "w28", "w27", "w26", "w25"]
    assert skipped == []  # the old broken file was never read
    assert len(list_walks()[0]) == 30 and len(list_walks()[1]) == 1


def test_empty_walks_are_not_saved_listed_or_kept():
    """A walk without an answer, triage, tried fix or launch command says nothing (F5): it is
    not written, an earlier save of it is removed, and one an older version left is cleaned."""
    assert save_walk(walk("fresh", "2026-11-29T08:00:00Z", steps=[])) is None
    assert not (walks_dir() / "fresh.json").exists()
    path = save_walk(walk("restarted", "2026-11-29T08:00:00Z"))
    assert path is not None and path.exists()
    assert save_walk(walk("restarted", "2026-11-29T08:01:00Z", steps=[])) is None
    assert not path.exists()  # its answers were undone: the file goes with them
    old = walks_dir() / "old-empty.json"
    young = walks_dir() / "young-empty.json"
    for file in (old, young):
        write_json_atomic(file, walk(file.stem, "2026-11-29T07:00:00Z", steps=[]).to_dict())
    os.utime(old, (0, 0))
    save_walk(walk("kept", "2026-11-29T09:00:00Z"))
    assert [w.id for w in list_walks()[0]] == ["kept"]
    assert not old.exists() and young.exists()  # young: maybe a walk in another terminal
