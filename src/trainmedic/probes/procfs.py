"""Small readers of /proc and /sys files that several host probes share.

Everything takes a `root` so tests can point it at a folder of real captured files; nothing
raises on a missing or unreadable file (the caller decides what "unknown" means).
"""

from __future__ import annotations

import re
from pathlib import Path

# capability numbers from linux/capability.h
CAP_IPC_LOCK = 14
CAP_SYS_NICE = 23

_CAP_EFF = re.compile(r"^CapEff:\s*([0-9a-fA-F]+)\s*$", re.MULTILINE)


def read_text(path: Path, limit: int = 1_000_000) -> str | None:
    """The start of a text file, or None when it cannot be read."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read(limit)
    except OSError:
        return None


def under(root: Path, absolute: str) -> Path:
    """`absolute` (a path like /proc/self/status) inside `root`."""
    return root / absolute.lstrip("/")


def parse_cap_eff(status: str) -> int | None:
    """The effective capability mask from the text of /proc/<pid>/status, or None."""
    match = _CAP_EFF.search(status)
    return int(match.group(1), 16) if match else None


def has_cap(mask: int | None, cap: int) -> bool | None:
    return None if mask is None else bool(mask >> cap & 1)


def effective_caps(root: Path = Path("/")) -> int | None:
    text = read_text(under(root, "/proc/self/status"))
    return parse_cap_eff(text) if text else None
