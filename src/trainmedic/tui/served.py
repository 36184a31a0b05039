"""Where the probes of a served app run, for the screens to say so.

`trainmedic serve` sets the variable before textual-serve starts the app; each browser session
is a copy of the app on the server, so its probes read the server, not the browser's machine.
This module imports nothing from Textual: the serve command reads the name from here.
"""

from __future__ import annotations

import os

SERVED_ON_ENV = "TRAINMEDIC_SERVED_ON"


def served_on() -> str | None:
    """The server's host name when the app runs in a browser through `trainmedic serve`."""
    return os.environ.get(SERVED_ON_ENV, "").strip() or None


def probes_location() -> str:
    """"probes run on HOST (served)" for a served app, "" in a terminal."""
    host = served_on()
    return f"probes run on {host} (served)" if host else ""
