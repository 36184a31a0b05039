"""The base of every trainmedic screen and dialog: `self.app` is the `TrainmedicApp`, typed.

Textual's own idiom (`textual.getters.app`), declared for the type checker only: at run time the
app is found as usual, and no screen module imports the app module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from textual.screen import ModalScreen, Screen

if TYPE_CHECKING:
    from textual import getters

    from trainmedic.tui.app import TrainmedicApp

ResultType = TypeVar("ResultType")

PROBES_OFF = "probes are off (--no-probes)"


class AppScreen(Screen[ResultType]):
    if TYPE_CHECKING:
        app = getters.app(TrainmedicApp)


class AppDialog(ModalScreen[ResultType]):
    if TYPE_CHECKING:
        app = getters.app(TrainmedicApp)
