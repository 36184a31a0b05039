"""The home cards cache: used only while every tree file is unchanged."""

from __future__ import annotations

import shutil
import time

from tui_helpers import FIXTURES

from trainmedic.trees import load_forest
from trainmedic.tui import home_cards as catalog
from trainmedic.tui.start import build_home_app


def test_cards_cached_until_a_tree_file_changes(tmp_path, monkeypatch):
    (tmp_path / "none").mkdir()
    monkeypatch.setattr(catalog, "builtin_tree_dir", lambda: tmp_path / "none")
    monkeypatch.setattr("trainmedic.trees.forest.builtin_tree_dir", lambda: tmp_path / "none")
    trees = tmp_path / "trees"
    shutil.copytree(FIXTURES, trees)
    assert catalog.cached_cards([str(trees)]) is None

    first = build_home_app([str(trees)])
    assert first._forest is not None  # cache miss: loaded and validated at once
    cards = catalog.cached_cards([str(trees)])
    assert cards is not None and {c.id for c in cards} == {"mem", "hang"}
    mem = next(c for c in cards if c.id == "mem")
    assert (mem.title, mem.questions, mem.fixes) == ("Out of GPU memory", 2, 4)

    second = build_home_app([str(trees)])
    assert second._forest is None  # cache hit: home paints from cards, forest on demand
    assert set(second.forest.trees) == {"mem", "hang"}

    time.sleep(0.01)
    path = trees / "hang.yaml"
    path.write_text(path.read_text().replace("Job froze", "Job hung"))
    assert catalog.cached_cards([str(trees)]) is None
    third = build_home_app([str(trees)])
    assert third.forest.trees["hang"].title == "Job hung"
    assert catalog.cards_from_forest(load_forest([trees], builtin=False))[0].title == "Job hung"
