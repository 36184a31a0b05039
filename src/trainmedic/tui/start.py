"""Entry points the CLI calls; Textual is imported here, only when the TUI really starts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from trainmedic.trees import Forest
    from trainmedic.tui.app import TrainmedicApp
    from trainmedic.walk import WalkSession


def build_home_app(trees: Sequence[str], app_class: type[TrainmedicApp] | None = None,
                   ) -> TrainmedicApp:
    """The app at its home screen over the built-in trees plus `trees`.

    With unchanged tree files the home screen paints from cached cards and the forest loads on
    first use; otherwise the forest is loaded now. A user tree file with an error is left out,
    and the app says so when it opens (cards are not cached then, so it says so every time
    until the file is fixed); an error in a built-in tree still refuses to start (UsageError).
    """
    from trainmedic.tui.home_cards import cached_cards, files_key, remember_cards

    extra = list(trees)
    from trainmedic.tui.app import TrainmedicApp

    make = app_class or TrainmedicApp

    def load() -> Forest:
        from trainmedic.trees import load_forest_skipping

        return load_forest_skipping(extra)[0]

    cards = cached_cards(extra)
    if cards is not None:
        return make(None, cards=cards, forest_loader=load)
    from trainmedic.trees import load_forest_skipping

    key = files_key(extra)
    forest, warnings = load_forest_skipping(extra)
    if not warnings:
        remember_cards(key, forest)
    app = make(forest)
    for line in warnings:  # shown once the app runs (the message waits in its queue)
        app.call_later(app.notify, line, title="tree skipped", severity="warning", timeout=15)
    return app


def run_home(trees: list[str]) -> int:
    app = build_home_app(trees)
    app.run()
    return 2 if app.trees_error else app.return_code or 0


def run_walk(forest: Forest, session: WalkSession, *, probes: bool = True) -> int:
    from trainmedic.tui.app import TrainmedicApp

    app = TrainmedicApp(forest, session=session, probes=probes)
    app.run()
    return app.return_code or 0
