"""The `checkpoint-dir` probe against real df outputs, real launch scripts and failing tools."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainmedic.probes import checkpoint_dir as cd
from trainmedic.probes.base import Budget
from trainmedic.probes.runner import run_probes
from trainmedic.trees import Question, load_forest
from trainmedic.trees.rules import suggest
from trainmedic.walk import facts_from

from .broken_tool import run_with_broken_tool
from .helpers import check_types, fixture_path, fixture_text

MEMORY_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "memory"


@pytest.fixture(autouse=True)
def no_configured_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(cd.SAVE_DIR_ENV, raising=False)
    monkeypatch.delenv(cd.SCRIPT_ENV, raising=False)


def rows(name: str) -> list[cd.DfRow]:
    return cd.parse_df(fixture_text(name))


def result(blocks: str | None, inodes: str | None, path: str,
           state: cd.CheckpointState | None = None):
    b = cd.row_for(rows(blocks), path) if blocks else None
    i = cd.row_for(rows(inodes), path) if inodes else None
    res = cd.build_result(path, "test", b, i, True, "", state or cd.CheckpointState(), "")
    check_types(res)
    return res


def test_inodes_full_while_space_looks_free_is_a_failure_about_inodes():
    # NixOS/nixpkgs#74524: df -h says 69 % used, df -ih says the inodes are gone
    res = result("df_h_root_69pct_space_free.txt", "df_ih_root_inodes_full.txt", "/home/u/ckpt")
    assert res.facts["used_fraction"] == pytest.approx(16 / 23.5, abs=0.01)
    assert res.facts["inodes_used_fraction"] == pytest.approx(1.0, abs=1e-4)
    assert res.facts["inodes_free"] == 8
    assert res.facts["worst_used_fraction"] == pytest.approx(1.0, abs=1e-4)
    assert res.status == "fail" and "inodes" in res.summary
    assert "inodes" in res.evidence["worst_used_fraction"]


def test_nfs_volume_without_inodes_is_picked_by_mount_point():
    table = rows("df_i_nfs_volume_inodes_full.txt")
    row = cd.row_for(table, "/opt/odoo/web/checkpoints")
    assert row is not None and row.filesystem.startswith("10.43.154.39:/pvc-")
    assert row.used_fraction == 1.0 and row.free == 0
    assert cd.row_for(table, "/etc/hosts").used_fraction == pytest.approx(0.339, abs=0.001)


def test_full_data_volume_fails_and_names_the_space():
    res = result("df_h_data_volume_full.txt", None, "/mnt/data/ckpt")
    assert res.facts["used_fraction"] == 1.0 and res.facts["free_gib"] == 0.0
    assert res.status == "fail" and "space" in res.summary


def test_lustre_mounts_longest_prefix_and_human_sizes():
    table = rows("df_h_lustre_mounts.txt")
    assert [r.mount for r in table] == ["/mnt/fs", "/mnt/fs2"]
    row = cd.row_for(table, "/mnt/fs2/run1")
    assert row is not None and row.mount == "/mnt/fs2"
    assert row.free == 44 * 1024**3 and row.used == 332 * 1024**2
    res = result("df_h_lustre_mounts.txt", None, "/mnt/fs/run1")
    assert res.status == "ok" and res.facts["worst_used_fraction"] < 0.01


def test_type_column_and_dashes_are_tolerated():
    gpfs = cd.row_for(rows("df_hT_gpfs_in_container.txt"), "/var/lib/mongodb/data/x")
    assert gpfs is not None and gpfs.filesystem == "remote_fs0_1m" and gpfs.free == 15 * 1024**4
    boot = cd.row_for(rows("df_ih_root_inodes_full.txt"), "/boot")
    assert boot is not None and boot.used_fraction is None  # "0 0 0 -": no inode accounting
    assert result(None, "df_ih_root_inodes_full.txt", "/boot").status == "unavailable"


def test_garbage_is_no_rows():
    assert cd.parse_df("\xff\x00garbage ,,,\n=== x ===\n") == []
    assert cd.parse_df(fixture_text("ibstat_h100_some_down.txt")) == []


def test_file_system_type_from_this_machines_mount_table():
    mounts = Path("/proc/self/mounts").read_text()
    assert cd.fs_type("/proc/self", mounts) == "proc"
    assert cd.fs_type("/", mounts)


def test_tracker_and_iteration_directories(tmp_path: Path):
    for name in ("iter_0000100", "iter_0000200", "iter_0000300", "tensorboard"):
        (tmp_path / name).mkdir()
    (tmp_path / "latest_checkpointed_iteration.txt").write_text("200\n")
    state = cd.read_state(str(tmp_path), [p.name for p in tmp_path.iterdir()])
    assert (state.tracker_iteration, state.newest_iteration, state.newer_than_tracker) == (
        200, 300, 1)
    res = result("df_h_lustre_mounts.txt", None, "/mnt/fs/run1", state)
    assert res.facts["partial_saves"] == 1 and res.status == "warn"
    assert "never finished" in res.summary


def test_deepspeed_latest_tag(tmp_path: Path):
    for name in ("global_step10", "global_step20"):
        (tmp_path / name).mkdir()
    (tmp_path / "latest").write_text("global_step20")
    state = cd.read_state(str(tmp_path), [p.name for p in tmp_path.iterdir()])
    assert (state.tracker, state.tracker_iteration, state.newer_than_tracker) == (
        "latest", 20, 0)


def test_save_dir_comes_only_from_values_the_script_fixes():
    amd = (MEMORY_FIXTURES / "megatron_amd_train_llama2.sh").read_text()
    assert cd.save_dir_from_script(amd, {"SAVE_CKPT_PATH": "/lustre/ckpt/llama2"}) == (
        "/lustre/ckpt/llama2")
    assert cd.save_dir_from_script(amd, {}) is None  # $SAVE_CKPT_PATH unset: no guess
    for name in ("megatron_gpt3_175b.sh", "megatron_llama3_8b_h100_fp8.sh",
                 "pai_megatron_patch_llama3_mcore.sh"):  # built from the script's arguments
        assert cd.save_dir_from_script((MEMORY_FIXTURES / name).read_text(), {}) is None
    assert cd.save_dir_from_script((MEMORY_FIXTURES / "seed003_skeleton.sh").read_text(),
                                   {}) is None  # --save-interval only


def test_nothing_configured_is_unavailable_with_the_way_to_configure_it():
    res = run_probes(["checkpoint-dir"], timeout=3)[0]
    assert res.status == "unavailable" and cd.SAVE_DIR_ENV in res.summary


def test_launch_script_without_a_fixed_save_is_unavailable(monkeypatch):
    monkeypatch.setenv(cd.SCRIPT_ENV, str(MEMORY_FIXTURES / "megatron_gpt3_175b.sh"))
    res = run_probes(["checkpoint-dir"], timeout=3)[0]
    assert res.status == "unavailable" and "--save" in res.summary


def fake_df(fakebin, blocks: str, inodes: str) -> None:
    fakebin("df", f'case "$*" in *-i*) /bin/cat "{fixture_path(inodes)}" ;; '
                  f'*) /bin/cat "{fixture_path(blocks)}" ;; esac')


def test_probe_reads_df_and_the_directory(fakebin, monkeypatch, tmp_path: Path):
    (tmp_path / "iter_0000010").mkdir()
    (tmp_path / "latest_checkpointed_iteration.txt").write_text("10")
    monkeypatch.setenv(cd.SAVE_DIR_ENV, str(tmp_path))
    fake_df(fakebin, "df_h_root_69pct_space_free.txt", "df_ih_root_inodes_full.txt")
    res = cd.probe(Budget(5))
    check_types(res)
    assert res.facts["path"] == str(tmp_path) and res.facts["source"] == cd.SAVE_DIR_ENV
    assert res.facts["tracker_iteration"] == 10 and res.facts["partial_saves"] == 0
    assert res.status == "fail" and "inodes" in res.summary
    assert "df -P -i" in res.raw


def test_a_missing_directory_checks_its_parent(fakebin, monkeypatch, tmp_path: Path):
    target = tmp_path / "not" / "yet"
    monkeypatch.setenv(cd.SAVE_DIR_ENV, str(target))
    fakebin("df", f'case "$*" in *{target}*) echo "df: {target}: No such file or directory" >&2;'
                  f' exit 1 ;; *-i*) /bin/cat "{fixture_path("df_ih_root_inodes_full.txt")}" ;; '
                  f'*) /bin/cat "{fixture_path("df_h_lustre_mounts.txt")}" ;; esac')
    res = cd.probe(Budget(5))
    assert res.facts["exists"] is False and res.status == "warn"
    assert "does not exist yet" in res.summary


OUTCOMES = {  # mode -> (status, words in the summary)
    "missing": ("unavailable", "not found"),
    "not-executable": ("unavailable", "permission denied"),
    "error-exit": ("fail", "boom"),
    "garbage": ("unavailable", "could not read"),
    "hang": ("fail", "did not answer"),
}


@pytest.mark.parametrize("mode", list(OUTCOMES))
def test_probe_never_raises_and_never_hangs(fakebin, monkeypatch, tmp_path: Path, mode):
    status, reason = OUTCOMES[mode]
    monkeypatch.setenv(cd.SAVE_DIR_ENV, str(tmp_path))
    res = run_with_broken_tool(fakebin, "df", "checkpoint-dir", mode)
    assert res.status == status and reason in res.summary, res.summary


def question(tree: str, node: str) -> Question:
    q = load_forest().trees[tree].nodes[node]
    assert isinstance(q, Question)
    return q


def test_a_full_save_directory_suggests_the_disk_full_fix():
    full = result("df_h_root_69pct_space_free.txt", "df_ih_root_inodes_full.txt", "/x")
    q = question("checkpoint", "save-error")
    index, _lines = suggest(q, facts_from([full])[0])
    assert index is not None and q.answers[index].goto == "disk-full"
    roomy = result("df_h_lustre_mounts.txt", None, "/mnt/fs/run1")
    assert suggest(q, facts_from([roomy])[0])[0] is None
