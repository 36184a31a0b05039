"""The footer every screen uses: its keys, cut cleanly at the right edge.

Textual's footer docks the command-palette key on the right, over the keys; when they do not
fit (60 columns and less) a character of the key underneath was left beside it. Here the
palette key is one of the app's keys, listed last, and what does not fit is simply not drawn.
"""

from __future__ import annotations

from textual.widgets import Footer


class KeysFooter(Footer):
    def __init__(self) -> None:
        super().__init__(compact=True, show_command_palette=False)
