"""Issue 20, safe writers: -o never follows a link, never clobbers, never leaves a fragment.

`report -o`, `export -o`, `export --all -o`, saved walks and the cluster store all go through
`safefile`; the full disk is simulated by making `os.write` or `os.fsync` fail with ENOSPC.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path

import pytest

from trainmedic import safefile
from trainmedic.cli import main

EXAMPLES = str(Path(__file__).resolve().parents[2] / "docs" / "examples")


def export(*args: str) -> int:
    return main(["--trees", EXAMPLES, "export", *args])


@pytest.fixture
def saved_walk():
    from trainmedic.saved_walks import WalkRecord, save_walk

    save_walk(WalkRecord(id="20260101T000000-disk-full-abcd", tree="disk-full",
                         current="disk-full", started="x", updated="y",
                         launch_command="torchrun --nnodes 2 train.py"))


def report(*args: str) -> int:
    return main(["--trees", EXAMPLES, "report", *args])


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize("command", ["report", "export"])
def test_a_symbolic_link_is_never_written_through(tmp_path, capsys, saved_walk, command):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious", encoding="utf-8")
    link = tmp_path / "out.md"
    link.symlink_to(victim)
    run = report if command == "report" else lambda *a: export("disk-full", *a)
    for force in ([], ["--force"]):
        assert run("-o", str(link), *force) == 2
        assert "symbolic link" in one_line_error(capsys)
    assert victim.read_text(encoding="utf-8") == "precious" and link.is_symlink()


def test_export_all_refuses_a_planted_link_before_writing_anything(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("precious", encoding="utf-8")
    (out / "disk-full.md").symlink_to(victim)
    assert export("--all", "-o", str(out)) == 2
    assert "symbolic link" in one_line_error(capsys)
    assert victim.read_text(encoding="utf-8") == "precious"
    assert sorted(p.name for p in out.iterdir()) == ["disk-full.md"]  # nothing half-written


@pytest.mark.parametrize("command", ["report", "export"])
def test_a_file_trainmedic_did_not_write_needs_force(tmp_path, capsys, saved_walk, command):
    target = tmp_path / "existing.md"
    target.write_text("my own notes", encoding="utf-8")
    run = report if command == "report" else lambda *a: export("disk-full", *a)
    assert run("-o", str(target)) == 2
    assert "--force" in one_line_error(capsys)
    assert target.read_text(encoding="utf-8") == "my own notes"
    assert run("-o", str(target), "--force") == 0
    assert target.read_text(encoding="utf-8") != "my own notes"
    capsys.readouterr()
    assert run("-o", str(target)) == 0  # now it is ours: a rerun replaces it without asking


def test_every_export_format_can_be_rewritten_without_force(tmp_path):
    for fmt in ("markdown", "mermaid", "json"):
        target = tmp_path / f"t.{fmt}"
        assert export("disk-full", "--format", fmt, "-o", str(target)) == 0
        assert safefile.written_by_trainmedic(target), fmt
        assert export("disk-full", "--format", fmt, "-o", str(target)) == 0
    assert export("--all", "-o", str(tmp_path / "all")) == 0
    assert export("--all", "-o", str(tmp_path / "all")) == 0
    assert export("--all", "--format", "json", "-o", str(tmp_path / "all")) == 0


def test_modes_reports_private_runbooks_public(tmp_path, saved_walk):
    assert report("-o", str(tmp_path / "r.md")) == 0
    assert report("--json", "-o", str(tmp_path / "r.json")) == 0
    assert export("disk-full", "-o", str(tmp_path / "rb.md")) == 0
    mode = {p.name: stat.S_IMODE(p.stat().st_mode) for p in tmp_path.iterdir() if p.is_file()}
    assert mode == {"r.md": 0o600, "r.json": 0o600, "rb.md": 0o644}


def _fail_after(monkeypatch, name: str, budget: int) -> None:
    """os.write writes `budget` bytes then fails with ENOSPC; os.fsync just fails."""
    real = getattr(os, name)
    left = [budget]

    def failing(fd, data=None):
        if name == "fsync":
            raise OSError(errno.ENOSPC, "No space left on device")
        if left[0] <= 0:
            raise OSError(errno.ENOSPC, "No space left on device")
        n = real(fd, bytes(data)[: left[0]])
        left[0] -= n
        return n

    monkeypatch.setattr(os, name, failing)


@pytest.mark.parametrize("fail", ["write", "fsync"])
def test_a_full_disk_leaves_the_old_file_whole_and_no_fragment(tmp_path, monkeypatch, capsys,
                                                              fail):
    (tmp_path / "out").mkdir()
    target = tmp_path / "out" / "rb.md"
    assert export("disk-full", "-o", str(target)) == 0
    old = target.read_bytes()
    target.write_bytes(old.replace(b"Checkpoint", b"Older checkpoint"))
    older = target.read_bytes()
    _fail_after(monkeypatch, fail, 512)
    assert export("example-hang", "-o", str(target)) == 2
    assert "No space left" in one_line_error(capsys)
    assert target.read_bytes() == older
    assert sorted(p.name for p in target.parent.iterdir()) == ["rb.md"]  # no temporary file


def test_saved_walks_and_the_cluster_store_are_atomic_and_private(tmp_path, monkeypatch):
    from trainmedic.cluster.result import ClusterResult
    from trainmedic.cluster.store import last_result_path, save_last_result
    from trainmedic.saved_walks import StepRecord, WalkRecord, save_walk

    save_last_result(ClusterResult.from_dict({"node_count": 1}))
    path = last_result_path()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    _fail_after(monkeypatch, "write", 3)
    with pytest.raises(OSError):
        save_last_result(ClusterResult.from_dict({"node_count": 2}))
    with pytest.raises(OSError):
        save_walk(WalkRecord(id="w1", tree="t", current="t#f",  # one answer: worth a file
                             steps=[StepRecord("t#q", "Which?", 0, "this", "t#f")]))
    monkeypatch.undo()
    assert json.loads(path.read_text(encoding="utf-8"))["node_count"] == 1
    assert [p.name for p in path.parent.iterdir() if p.name.endswith(".tmp")] == []


def test_the_apps_save_writes_atomically_and_not_through_links(tmp_path):
    from trainmedic.tui.savefile import write_text

    victim = tmp_path / "victim"
    victim.write_text("precious", encoding="utf-8")
    (tmp_path / "link.md").symlink_to(victim)
    assert "symbolic link" in write_text(tmp_path / "link.md", "report")
    assert victim.read_text(encoding="utf-8") == "precious"
    assert write_text(tmp_path / "r.md", "report") == ""
    assert stat.S_IMODE((tmp_path / "r.md").stat().st_mode) == 0o600


def test_reading_refuses_fifos_devices_and_oversized_files(tmp_path):
    os.mkfifo(tmp_path / "fifo")
    for path in (tmp_path / "fifo", Path("/dev/zero"), tmp_path):
        with pytest.raises(OSError, match=r"not a regular file|Is a directory"):
            safefile.read_bounded(path, 10)
    (tmp_path / "big").write_bytes(b"x" * 11)
    with pytest.raises(safefile.TooLarge):
        safefile.read_bounded(tmp_path / "big", 10)
    assert safefile.read_bounded(tmp_path / "big", 11) == b"x" * 11
