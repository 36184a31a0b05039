"""Issue 20, low items: the parse cache, host names, `--nodes ''`, unreadable state folders."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import pytest

from trainmedic.cli import main

TREE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "disk-full.yaml"


class _Planted:
    """What an attacker's pickle does: run code when it is loaded (here: create a file)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def _entry(cache_home: Path) -> Path:
    import hashlib

    real = str(TREE.resolve())
    name = hashlib.sha1(f"{real}\0{TREE}".encode()).hexdigest() + ".pickle"
    return cache_home / "trainmedic" / "trees" / name


def _plant(tmp_path: Path, folder_mode: int) -> Path:
    from trainmedic.trees.cache import load_cached

    load_cached(TREE, str(TREE))  # makes the folders and a genuine entry
    entry = _entry(tmp_path / "cache")
    assert entry.exists()
    marker = tmp_path / "PWNED"
    entry.write_bytes(pickle.dumps((None, _Planted(marker))))
    entry.parent.chmod(folder_mode)
    return marker


def test_the_cache_is_not_read_from_a_folder_others_can_write(tmp_path):
    from trainmedic.trees.cache import load_cached

    marker = _plant(tmp_path, 0o777)
    tree, problems = load_cached(TREE, str(TREE))
    assert tree is not None and tree.id == "disk-full" and not problems
    assert not marker.exists()


def test_the_cache_is_not_read_from_an_entry_others_can_write(tmp_path):
    from trainmedic.trees.cache import load_cached

    marker = _plant(tmp_path, 0o700)
    _entry(tmp_path / "cache").chmod(0o666)
    load_cached(TREE, str(TREE))
    assert not marker.exists()


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs chown")
def test_the_cache_is_not_read_from_a_folder_someone_else_owns(tmp_path):
    from trainmedic.trees.cache import load_cached

    marker = _plant(tmp_path, 0o700)
    os.chown(_entry(tmp_path / "cache").parent, 65534, -1)
    load_cached(TREE, str(TREE))
    assert not marker.exists()


def test_a_private_cache_still_works(tmp_path):
    from trainmedic.trees.cache import load_cached

    first = load_cached(TREE, str(TREE))
    assert _entry(tmp_path / "cache").exists()
    assert load_cached(TREE, str(TREE))[0] == first[0]


@pytest.mark.parametrize("spec", ["node$(touch x)", "a;b", "a|b", "`id`", "a b'c", "n[1-2]x;y",
                                  "-oProxyCommand=x", "a..b", "a.-b", "x" * 64, "é.example"])
def test_host_names_are_checked_before_ssh(spec):
    from trainmedic.cluster.hostlist import expand
    from trainmedic.errors import UsageError

    with pytest.raises(UsageError):
        expand(spec)


def test_ordinary_host_names_pass():
    from trainmedic.cluster.hostlist import expand

    assert expand("node[01-02],gpu-a7.cluster.local,rack0_blade1,10.0.0.5") == [
        "node01", "node02", "gpu-a7.cluster.local", "rack0_blade1", "10.0.0.5"]


def test_an_empty_nodes_spec_is_a_usage_error(capsys):
    assert main(["probe", "--nodes", ""]) == 2
    err = capsys.readouterr().err
    assert "--nodes" in err and len(err.strip().splitlines()) == 1


def test_a_state_folder_that_cannot_be_listed_is_a_warning(tmp_path, monkeypatch):
    from trainmedic import saved_walks

    def refuse(self):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "is_dir", refuse)
    walks, skipped = saved_walks.list_walks()
    assert walks == [] and "Permission denied" in str(skipped[0])


def test_a_sweep_that_may_run_for_hours_is_confirmed_first(monkeypatch, capsys):
    from trainmedic.cluster import fanout
    from trainmedic.cluster.fanout import FanoutRun

    ran: list[str] = []

    def fake(method):
        def run(nodes, names, **_kwargs):
            ran.append(method)
            return FanoutRun(method, nodes, [])
        return run

    monkeypatch.setattr(fanout, "fan_out_ssh", fake("ssh"))
    monkeypatch.setattr(fanout, "fan_out_srun", fake("srun"))
    # 4096 hosts, 32 at a time, 60 s each: over two hours if they hang; nobody to ask here
    assert main(["probe", "--nodes", "a[1-4096]"]) == 2
    err = capsys.readouterr().err
    assert "--yes" in err and "4096 nodes" in err and len(err.strip().splitlines()) == 1
    assert ran == []
    assert main(["probe", "--nodes", "a[1-4096]", "--yes", "--json"]) == 0
    assert main(["probe", "--nodes", "a[1-64]", "--json"]) == 0  # two rounds: asks nothing
    monkeypatch.setenv("SLURM_JOB_NODELIST", "a[1-4096]")
    assert main(["probe", "--nodes", "slurm", "--json"]) == 0  # one srun step: one timeout
    assert ran == ["ssh", "ssh", "srun"]


def test_the_parse_cache_is_pruned_when_it_writes(tmp_path, monkeypatch):
    import time

    from trainmedic.state import tree_cache_dir
    from trainmedic.trees import cache

    folder = tree_cache_dir()
    folder.mkdir(parents=True, mode=0o700)
    now = time.time()

    def entry(name: str, size: int, age_days: float) -> Path:
        path = folder / name
        path.write_bytes(b"x" * size)
        os.utime(path, (now - age_days * 86400, now - age_days * 86400))
        return path

    gone = entry("old.pickle", 10, 40)  # a tree from a scratch folder, long gone
    left = entry(".killed.tmp", 10, 1)  # a killed writer's temporary file
    oldest = entry("a.pickle", 600_000, 3)
    newer = entry("b.pickle", 600_000, 2)
    unrelated = entry("notes.txt", 10, 400)
    monkeypatch.setattr(cache, "MAX_CACHE_BYTES", 1_000_000)  # room for one of the two
    monkeypatch.setattr(cache, "_pruned", set())
    cache.load_cached(TREE, str(TREE))  # a miss: parses, writes its entry, prunes
    fresh = _entry(tmp_path / "cache")
    assert fresh.exists() and newer.exists() and unrelated.exists()
    assert not gone.exists() and not left.exists() and not oldest.exists()
