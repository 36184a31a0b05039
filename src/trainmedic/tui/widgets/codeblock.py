"""A focusable, syntax-highlighted command; `c` copies it by OSC 52 (works over SSH; tmux passes
it on only with `set-clipboard on`)."""

from __future__ import annotations

import os
from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.widgets import Static


class CodeBlock(Static, can_focus=True):
    """One fix step's command. Its number is the key that copies it from anywhere on the screen."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("c", "copy", "copy this", show=False)]

    def __init__(self, code: str, lang: str, number: int) -> None:
        from rich.syntax import Syntax

        self.code = code.rstrip("\n")
        self.number = number
        syntax = Syntax(self.code, _lexer(lang), theme="ansi_dark", word_wrap=True,
                        background_color="default")
        super().__init__(syntax, classes="code")
        self.border_title = f"{number} · {lang}"
        self.border_subtitle = "c copy"

    def action_copy(self) -> None:
        self.app.copy_to_clipboard(self.code)
        self.app.notify(copied_message(self.number), timeout=4 if os.environ.get("TMUX") else 2)


def copied_message(number: int) -> str:
    """The copy is an escape sequence the terminal may drop; tmux drops it by default
    (`set-clipboard external`), so a paste there would silently be yesterday's text."""
    if os.environ.get("TMUX"):
        return (f"Copied command {number} (OSC 52). Paste empty in tmux? "
                "`tmux set -g set-clipboard on`")
    return f"Copied command {number}"


def _lexer(lang: str) -> str:
    return {"text": "text", "console": "console", "ini": "ini"}.get(lang, lang or "bash")
