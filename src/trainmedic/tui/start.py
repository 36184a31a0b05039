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
    first use; otherwise the forest is loaded and validated now (UsageError if broken).
    """
    from trainmedic.tui.home_cards import cached_cards, files_key, remember_cards

    extra = list(trees)
    from trainmedic.tui.app import TrainmedicApp

    make = app_class or TrainmedicApp

    def load() -> Forest:
        from trainmedic.trees import load_forest_or_fail

        return load_forest_or_fail(extra)

    cards = cached_cards(extra)
    if cards is not None:
        return make(None, cards=cards, forest_loader=load)
    key = files_key(extra)
    forest = load()
    remember_cards(key, forest)
    return make(forest)


def run_home(trees: list[str]) -> int:
    app = build_home_app(trees)
    app.run()
    return 2 if app.trees_error else app.return_code or 0


def run_walk(forest: Forest, session: WalkSession, *, probes: bool = True) -> int:
    from trainmedic.tui.app import TrainmedicApp

    app = TrainmedicApp(forest, session=session, probes=probes)
    app.run()
    return app.return_code or 0
