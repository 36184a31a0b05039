"""A text sparkline of the loss series (the CLI's view; the TUI may draw its own)."""

from __future__ import annotations

import math

BARS = "▁▂▃▄▅▆▇█"


def sparkline(values: list[float], width: int = 60) -> str:
    """Bucket to `width` columns (max per bucket, so spikes stay visible); NaN/inf shows as `!`."""
    if not values:
        return ""
    step = max(1, math.ceil(len(values) / width))
    cols: list[float | None] = []
    for i in range(0, len(values), step):
        bucket = values[i : i + step]
        cols.append(None if any(not math.isfinite(v) for v in bucket) else max(bucket))
    finite = [c for c in cols if c is not None]
    if not finite:
        return "!" * len(cols)
    lo, hi = min(finite), max(finite)
    span = hi - lo or 1.0
    return "".join("!" if c is None else BARS[min(7, int((c - lo) / span * 7.999))] for c in cols)
