"""A focusable, syntax-highlighted command; `c` copies it by OSC 52 (works over SSH; tmux passes
it on only with `set-clipboard on`).

A command is never broken inside a token (`expandable_segment` / `s:True` is wrong when read
aloud or selected with the mouse). A long shell line is folded between its words the way people
write long commands, ending the row with ` \\` and indenting the next, so what is read can be
typed; a single token wider than the block, and any line of a format that cannot be folded
(YAML, JSON, ...), scrolls sideways instead (← → while the block has focus). The copy is always
the command as written.
"""

from __future__ import annotations

import os
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import ScrollableContainer
from textual.message import Message
from textual.widgets import Static

FOLDABLE = ("bash", "text", "console", "python")  # a ` \` continuation reads right in these
CONTINUATION = " \\"
INDENT = "  "


def breaks(plain: str) -> list[int]:
    """Offsets of the spaces a line may be folded at: between shell words, never inside a
    quoted string (folding there would change the string, or read as two)."""
    out, quote, escaped = [], "", False
    for i, char in enumerate(plain):
        if escaped:
            escaped = False
        elif char == "\\" and quote != "'":
            escaped = True
        elif quote:
            if char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char == " " and i and plain[i - 1] != " ":
            out.append(i)
    return out


def fold_line(line: Text, width: int) -> list[Text]:
    """`line` in rows of at most `width` cells, cut only between words; every row but the last
    ends with ` \\`, every row but the first is indented. A word wider than a row stays whole."""
    plain = line.plain
    if width < 12 or len(plain) <= width:
        return [line]
    rows: list[Text] = []
    start = 0
    cuts = breaks(plain)
    while True:
        lead = INDENT if rows else ""
        if len(plain) - start + len(lead) <= width:
            break
        room = width - len(lead) - len(CONTINUATION)
        fitting = [c for c in cuts if start < c <= start + room]
        later = [c for c in cuts if c > start]
        if not later:
            break
        cut = fitting[-1] if fitting else later[0]  # a word wider than the row goes whole
        piece = line[start:cut]
        piece.rstrip()
        row = Text(lead) + piece
        row.append(CONTINUATION, style="dim")
        rows.append(row)
        start = cut
        while start < len(plain) and plain[start] == " ":
            start += 1
    rows.append(Text(INDENT if rows else "") + line[start:])
    return rows


def folded(code: Text, width: int, lang: str) -> Text:
    """The whole command folded to `width` (unchanged for formats that cannot be folded)."""
    if lang not in FOLDABLE:
        return code
    rows: list[Text] = []
    for line in code.split("\n", allow_blank=True):
        rows += fold_line(line, width)
    return Text("\n").join(rows)


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
        self.lang = lang or "bash"
        self.number = number
        self.marked = marked
        self._highlighted: Text | None = None
        self._width = 0
        self.border_title = f"{number} · {self.lang}" if number is not None else self.lang
        self.border_subtitle = "c copy"

    def compose(self) -> ComposeResult:
        yield Static(self.highlighted(), classes="code-text")

    def highlighted(self) -> Text:
        if self._highlighted is None:
            from rich.syntax import Syntax

            syntax = Syntax(self.code, _lexer(self.lang), theme="ansi_dark",
                            background_color="default")
            self._highlighted = syntax.highlight(self.code)
            self._highlighted.rstrip()
        return self._highlighted

    def on_resize(self) -> None:
        """Fold to the new width; say when a line still goes on to the right."""
        width = self.scrollable_content_region.width
        if width != self._width:
            self._width = width
            self.query_one(".code-text", Static).update(folded(self.highlighted(), width,
                                                               self.lang))
        self.call_after_refresh(self._say_if_wide)

    def _say_if_wide(self) -> None:
        if self.has_class("confirm"):
            return
        wide = self.virtual_size.width > self.scrollable_content_region.width
        self.border_subtitle = "c copy · ←→ more" if wide else "c copy"

    def action_copy(self) -> None:
        self.post_message(self.CopyRequested(self))

    def ask_again(self, key: str) -> None:
        self.border_subtitle = f"{key} again or y: copy"
        self.add_class("confirm")

    def asked(self) -> None:
        self.remove_class("confirm")
        self._say_if_wide()


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
