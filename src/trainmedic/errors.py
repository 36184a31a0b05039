"""Errors that end a command with a one-line message instead of a traceback.

Every command module raises these for bad input; `cli.main` prints the message and exits with
the code the command-line contract gives (2 for bad usage or unreadable input).
"""

from __future__ import annotations


class TrainmedicError(Exception):
    """A failure the user can act on; `str()` is the whole message."""

    exit_code = 2


class UsageError(TrainmedicError):
    """Bad arguments or unreadable input (exit 2)."""

