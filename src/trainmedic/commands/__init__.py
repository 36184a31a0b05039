"""The subcommands: one module each with `add_arguments(parser)` and `run(args) -> int`."""

from __future__ import annotations

import os
import sys

# Said on stderr whenever a command that would draw the app falls back to plain prompts.
NO_TERMINAL_NOTE = ("trainmedic: no terminal here (a pipe or TERM=dumb): plain numbered prompts "
                    "instead of the app (--plain chooses them without this note)")


def interactive_terminal() -> bool:
    """Both ends are a terminal that can draw the app (not a pipe, not TERM=dumb)."""
    if os.environ.get("TERM", "") == "dumb":
        return False
    return sys.stdin.isatty() and sys.stdout.isatty()
