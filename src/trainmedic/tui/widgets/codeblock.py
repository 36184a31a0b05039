"""A focusable, syntax-highlighted command; `c` copies it (OSC 52 works over SSH and tmux)."""

from __future__ import annotations

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
        self.app.notify(f"Copied command {self.number}", timeout=2)


def _lexer(lang: str) -> str:
    return {"text": "text", "console": "console", "ini": "ini"}.get(lang, lang or "bash")
