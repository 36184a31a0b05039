"""Text from files, logs, nodes and the environment, made inert before anyone sees it.

A log line or a tree title may carry terminal control sequences: OSC 52 sets the clipboard
(`ESC ] 52 ; c ; <base64> ESC \\`), OSC 0 the window title, CSI can clear the screen, and bidi
overrides reorder what a command looks like. `inert` turns every such character into a visible
escape (`\\x1b`, `\\u202e`), so the text shows what it holds and the terminal runs nothing.
Only trainmedic's own OSC 52 copy (the TUI's copy key) is ever emitted.

Kept as they are: `\\n` and `\\t` (layout), and a `\\r` that ends a line before `\\n` (CRLF).
Made visible: every other C0 control and DEL, ESC, the C1 controls (U+0080-U+009F, which some
terminals read as CSI/OSC), every format character (Cf: bidi embeddings, overrides and isolates,
zero-width characters, the BOM...), line and paragraph separators, and lone surrogates (file names
that are not UTF-8). One regular-expression pass: linear in the length of the text.
"""

from __future__ import annotations

import re

# Unicode Cc (C0, DEL, C1) and Cf, Zl, Zp, Cs. The Cf ranges are Unicode 15's; a test checks the
# class against `unicodedata` of the running Python, so a new Unicode version cannot slip by.
_UNSAFE_CLASS = (
    "\x00-\x08\x0b-\x1f\x7f-\x9f"
    "\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e"
    "\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f"
    "\ud800-\udfff\ufeff\ufff9-\ufffb"
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f"
)
_UNSAFE = re.compile(f"(\r(?=\n))|[{_UNSAFE_CLASS}]")
_UNSAFE_ONE_LINE = re.compile(f"[{_UNSAFE_CLASS}\n\t]")
_NAMES = {"\r": "\\r", "\x1b": "\\x1b", "\x07": "\\a", "\x08": "\\b", "\x0b": "\\v",
          "\x0c": "\\f", "\x00": "\\0", "\n": "\\n", "\t": "\\t"}


def _visible(match: re.Match[str]) -> str:
    if match.re is _UNSAFE and match[1]:
        return "\r"  # the CR of a CRLF line end is layout, not a control sequence
    char = match[0]
    if char in _NAMES:
        return _NAMES[char]
    code = ord(char)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def has_controls(text: str) -> bool:
    """True when `inert` would change the text (a CRLF line end does not count)."""
    if text.isprintable():  # every character `inert` escapes is unprintable: no search needed
        return False
    return any(not m[1] for m in _UNSAFE.finditer(text))


def inert(text: str) -> str:
    """`text` with every control and format character shown as a visible escape."""
    if not text or text.isprintable():
        return text
    return _UNSAFE.sub(_visible, text)


def inert_line(text: str) -> str:
    """`inert` for a single-line field (a file name, a host): `\\n` and `\\t` are shown too."""
    if not text or text.isprintable():
        return text
    return _UNSAFE_ONE_LINE.sub(_visible, text)


def inert_deep(value: object) -> object:
    """Every string in nested data (dict keys too) made inert; other values unchanged."""
    if isinstance(value, str):
        return inert(value)
    if isinstance(value, dict):
        return {inert(str(k)) if isinstance(k, str) else k: inert_deep(v)
                for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [inert_deep(v) for v in value]
    return value
