"""The subcommands: one module each with `add_arguments(parser)` and `run(args) -> int`."""

from __future__ import annotations

import os
import sys


def interactive_terminal() -> bool:
    """Both ends are a terminal that can draw the app (not a pipe, not TERM=dumb)."""
    if os.environ.get("TERM", "") == "dumb":
        return False
    return sys.stdin.isatty() and sys.stdout.isatty()
