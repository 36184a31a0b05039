"""GPU capacity as people write it ("80GiB", "141GB", "81559MiB"), in MiB."""

from __future__ import annotations

import re

_UNITS = {"": 1024.0, "g": 1024.0, "gi": 1024.0, "gib": 1024.0, "gb": 1e9 / 2**20,
          "m": 1.0, "mi": 1.0, "mib": 1.0, "mb": 1e6 / 2**20, "t": 1024.0**2, "tib": 1024.0**2}


def parse_capacity(text: str) -> float:
    """'80GiB' -> MiB.  GB/MB are decimal, G/GiB/M/MiB binary; a bare number is GiB.

    ValueError says what is wrong; the caller names where the text came from."""
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*", text)
    unit = m.group(2).lower() if m else ""
    if not m or unit not in _UNITS:
        raise ValueError(f"expected a size such as 80GiB or 141GB, got {text!r}")
    value = float(m.group(1)) * _UNITS[unit]
    if value <= 0:
        raise ValueError(f"a size must be positive, got {text!r}")
    return value
