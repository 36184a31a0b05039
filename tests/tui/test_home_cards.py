"""The home cards cache: used only while every tree file is unchanged."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
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


def test_home_painted_from_cards_with_a_saved_walk_loads_no_yaml(tmp_path):
    """The first frame must not wait on the YAML loader: listing a saved walk reads the walk's
    record, which needs the tree model but not the loader (the startup benchmark's budget)."""
    code = (
        "import sys\n"
        "from trainmedic.saved_walks import save_walk\n"
        "from trainmedic.trees import load_forest\n"
        "from trainmedic.walk import WalkSession\n"
        f"session = WalkSession(load_forest([{str(FIXTURES)!r}], builtin=False), 'mem')\n"
        "session.answer(0)\n"
        "save_walk(session.record())\n"
        "from trainmedic.tui.start import build_home_app\n"
        f"build_home_app([{str(FIXTURES)!r}])  # a miss: loads, validates, caches the cards\n"
        "for name in [m for m in sys.modules if m == 'yaml' or m.startswith('trainmedic.')]:\n"
        "    del sys.modules[name]\n"
        "from trainmedic.tui.app import TrainmedicApp\n"
        "from trainmedic.tui.start import build_home_app\n"
        "class Once(TrainmedicApp):\n"
        "    def on_ready(self):\n"
        "        self.shown = [e.key for e in self.screen.shown if e.key.startswith('walk:')]\n"
        "        self.exit()\n"
        f"app = build_home_app([{str(FIXTURES)!r}], app_class=Once)\n"
        "app.run(headless=True)\n"
        "print(len(app.shown), sorted(m for m in ('yaml', 'networkx', 'trainmedic.trees.loader')\n"
        "                           if m in sys.modules))\n"
    )
    last, errors = _last_line(code, tmp_path)
    assert last == "1 []", errors


def test_first_start_paints_home_without_the_saved_walk_reader(tmp_path):
    """Before any walk is saved there is no walks folder: home lists trees and actions without
    importing the saved-walk reader (the startup benchmark's budget); once a folder exists the
    reader lists it (the test above)."""
    code = (
        "import sys\n"
        "from trainmedic.tui.app import TrainmedicApp\n"
        "from trainmedic.tui.start import build_home_app\n"
        "class Once(TrainmedicApp):\n"
        "    def on_ready(self):\n"
        "        self.listed = len(self.screen.shown)\n"
        "        self.exit()\n"
        f"app = build_home_app([{str(FIXTURES)!r}], app_class=Once)\n"
        "app.run(headless=True)\n"
        "print(app.listed, 'trainmedic.saved_walks' in sys.modules)\n"
    )
    last, errors = _last_line(code, tmp_path)
    assert len(last.split()) == 2, errors
    listed, imported = last.split()
    assert int(listed) > 0 and imported == "False", errors


def _last_line(code: str, tmp_path) -> tuple[str, str]:
    """The last line `code` prints in a fresh interpreter with its own state and cache folders,
    and the end of its stderr (to say why, when it failed)."""
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state"),
           "XDG_CACHE_HOME": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=120)
    return (done.stdout.strip().splitlines() or [""])[-1], done.stderr[-2000:]
