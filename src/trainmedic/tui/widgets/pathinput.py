"""A one-line path field that completes from the disk, as a shell would (tab or →).

Log folders on a cluster have long names (`/scratch/$USER/runs/llama-70b-sft-v3/logs/...`);
typing them in full at 3 a.m. is where typos come from. The folder is read in a thread with a
short limit, so a hung network mount leaves the field without a suggestion, never frozen.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.suggester import Suggester
from textual.widgets import Input

LIST_TIMEOUT_S = 1.0


def complete_path(value: str) -> str | None:
    """`value` extended by what every entry of its folder starting with its last part shares
    (a folder gets its `/`); the first such entry when they share nothing more. None if none."""
    head, sep, prefix = value.rpartition("/")
    head += sep  # "" or "some/folder/"
    if not value:
        return None
    folder = Path(head).expanduser() if head else Path(".")
    names = []
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.name.startswith(prefix) and (prefix.startswith(".")
                                                  or not entry.name.startswith(".")):
                names.append(entry.name + ("/" if entry.is_dir() else ""))
    if not names:
        return None
    names.sort()
    first, last = names[0], names[-1]  # sorted: what these two share, all of them share
    shared = 0
    while shared < min(len(first), len(last)) and first[shared] == last[shared]:
        shared += 1
    return value + (first[:shared] if shared > len(prefix) else first)[len(prefix):]


class PathSuggester(Suggester):
    def __init__(self) -> None:
        super().__init__(use_cache=False, case_sensitive=True)  # files come and go

    async def get_suggestion(self, value: str) -> str | None:
        try:
            return await asyncio.wait_for(asyncio.to_thread(complete_path, value),
                                          LIST_TIMEOUT_S)
        except (TimeoutError, OSError):
            return None


class PathInput(Input):
    """An `Input` with path completion; tab takes the suggestion, or moves on when there is
    none (so tab still leaves the field)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("tab", "complete", "complete the path", show=False),
    ]

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("suggester", PathSuggester())
        super().__init__(*args, **kwargs)

    def action_complete(self) -> None:
        before = self.value
        if self.cursor_at_end:
            self.action_cursor_right()  # takes the suggestion shown, if any
        if self.value == before:
            self.screen.focus_next()
