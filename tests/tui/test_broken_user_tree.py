"""A broken user tree under --trees is left out with a warning; the app still opens (F20)."""

from __future__ import annotations

from pathlib import Path

from tui_helpers import run

from trainmedic.tui.start import build_home_app


def test_the_app_opens_over_the_built_in_trees_and_says_which_file_it_skipped(tmp_path: Path):
    mine = tmp_path / "mytrees"
    mine.mkdir()
    (mine / "mine.yaml").write_text("id: mine\ntitle: [unclosed\n")
    (mine / "oom.yaml").write_text("id: oom\nstart: nowhere\n")  # would replace the built-in

    async def go():
        app = build_home_app([str(mine)])
        async with app.run_test(size=(100, 30), notifications=True) as pilot:
            await pilot.pause()
            shown = [n.message for n in app._notifications]
            assert any("mine.yaml" in m and "YAML syntax" in m for m in shown), shown
            assert any("oom.yaml" in m for m in shown), shown
            assert "oom" in app.forest.trees and "mine" not in app.forest.trees
            assert app.forest.trees["oom"].file.endswith("trees/oom.yaml")  # the built-in one
            assert not app.trees_error
    run(go())
    # the warning comes back every time until the file is fixed: nothing was cached
    again = build_home_app([str(mine)])
    assert again._forest is not None
