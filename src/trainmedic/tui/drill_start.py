"""`trainmedic drill` in a terminal: the app with the drill on top of home (Textual loads here)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from trainmedic.drills.cases import DrillCase
    from trainmedic.trees import Forest
    from trainmedic.tui.app import TrainmedicApp


def drill_app(forest: Forest, case: DrillCase, *, area: str | None = None) -> TrainmedicApp:
    """The app at this drill; leaving it shows home. Probes are off: the log is not this node's."""
    from trainmedic.tui.app import TrainmedicApp
    from trainmedic.tui.screens.drill import DrillScreen

    class DrillApp(TrainmedicApp):
        def on_mount(self) -> None:
            super().on_mount()
            self.push_screen(DrillScreen(case, area=area))

    return DrillApp(forest, probes=False)


def run_drill_app(forest: Forest, case: DrillCase, *, area: str | None = None) -> int:
    app = drill_app(forest, case, area=area)
    app.run()
    return app.return_code or 0
