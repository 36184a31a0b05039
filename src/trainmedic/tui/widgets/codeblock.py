"""A focusable, syntax-highlighted command; `c` copies it by OSC 52 (works over SSH; tmux passes
it on only with `set-clipboard on`).

Lines are never wrapped: a command broken inside a token (`expandable_segment` / `s:True`) is
wrong when read aloud or selected with the mouse. A long line scrolls sideways instead
(← → while the block has focus); the copy is always the whole command.
"""

from __future__ import annotations

import os
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import ScrollableContainer
from textual.message import Message
from textual.widgets import Static


class CodeBlock(ScrollableContainer, can_focus=True):
    """One command. Its number is the key that copies it from anywhere on the screen."""

    DEFAULT_CSS = """
    CodeBlock {
        height: auto;
        overflow-x: auto;
        overflow-y: hidden;
        scrollbar-size-horizontal: 1;
    }
    CodeBlock > .code-text {
        width: auto;
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("c", "copy", "copy this", show=False)]

    class CopyRequested(Message):
        """`c` on the block: the screen copies it (and asks first when the step is marked)."""

        def __init__(self, block: CodeBlock) -> None:
            super().__init__()
            self.block = block

    def __init__(self, code: str, lang: str, number: int | None, *,
                 marked: bool = False) -> None:
        super().__init__(classes="code")
        self.code = code.rstrip("\n")
        self.lang = lang
        self.number = number
        self.marked = marked
        self.border_title = f"{number} · {lang}" if number is not None else lang
        self.border_subtitle = "c copy"

    def compose(self) -> ComposeResult:
        from rich.syntax import Syntax

        yield Static(Syntax(self.code, _lexer(self.lang), theme="ansi_dark", word_wrap=False,
                            background_color="default"), classes="code-text")

    def on_resize(self) -> None:
        """Say that a long line goes on to the right (the block is narrower than the code)."""
        wide = self.virtual_size.width > self.scrollable_content_region.width
        self.border_subtitle = "c copy · ←→ more" if wide else "c copy"

    def action_copy(self) -> None:
        self.post_message(self.CopyRequested(self))

    def ask_again(self, key: str) -> None:
        self.border_subtitle = f"{key} again or y: copy"
        self.add_class("confirm")

    def asked(self) -> None:
        self.remove_class("confirm")
        self.on_resize()


def copied_message(number: int | None) -> str:
    """The copy is an escape sequence the terminal may drop; tmux drops it by default
    (`set-clipboard external`), so a paste there would silently be yesterday's text."""
    what = f"command {number}" if number is not None else "the command"
    if os.environ.get("TMUX"):
        return (f"Copied {what} (OSC 52). Paste empty in tmux? "
                "`tmux set -g set-clipboard on`")
    return f"Copied {what}"


def _lexer(lang: str) -> str:
    return {"text": "text", "console": "console", "ini": "ini"}.get(lang, lang or "bash")
