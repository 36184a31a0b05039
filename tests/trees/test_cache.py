"""The parse cache never serves a stale or corrupt entry."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from trainmedic.state import tree_cache_dir as cache_dir
from trainmedic.trees.cache import load_cached

TREE = """id: cached
title: {title}
summary: A tree for the cache test.
start: a
nodes:
  a:
    fix: F
    why: W
    steps:
      - do: Run it.
        code: echo ok
"""


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("TRAINMEDIC_NO_CACHE", raising=False)


def test_edit_is_seen_and_corrupt_entry_is_remade(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(TREE.format(title="First"))
    tree, _ = load_cached(path, "t.yaml")
    assert tree is not None and tree.title == "First"
    assert len(list(cache_dir().glob("*.pickle"))) == 1
    again, _ = load_cached(path, "t.yaml")
    assert again is not None and again.title == "First"

    path.write_text(TREE.format(title="Second, longer"))
    edited, _ = load_cached(path, "t.yaml")
    assert edited is not None and edited.title == "Second, longer"

    for entry in cache_dir().glob("*.pickle"):
        entry.write_bytes(b"not a pickle")
    remade, _ = load_cached(path, "t.yaml")
    assert remade is not None and remade.title == "Second, longer"


# the same time too: two saves within one tick of the file system's clock, `cp -p`, a checkout
# restoring times
@pytest.mark.parametrize("mtime_ns", [2_000_000_000, 1_000_000_000])
def test_same_size_edit_is_seen(tmp_path: Path, mtime_ns: int) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(TREE.format(title="Alpha"))
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))
    load_cached(path, "t.yaml")
    path.write_text(TREE.format(title="Omega"))  # same size
    os.utime(path, ns=(mtime_ns, mtime_ns))
    tree, _ = load_cached(path, "t.yaml")
    assert tree is not None and tree.title == "Omega"


def test_problems_are_cached_too(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("id: x\n")
    first = load_cached(path, "bad.yaml")[1]
    second = load_cached(path, "bad.yaml")[1]
    assert first == second and first


def test_unwritable_cache_falls_back_to_parsing(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file-not-dir"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    path = tmp_path / "t.yaml"
    path.write_text(TREE.format(title="Plain"))
    tree, _ = load_cached(path, "t.yaml")
    assert tree is not None and tree.title == "Plain"

