"""Shared knowledge of nvidia-smi: its CSV output, its error messages, its missing values.

Queries keep the CSV header (`--format=csv,nounits`) so columns are matched by name: drivers
differ in which fields they accept, and a wrong column order would silently swap numbers.
"""

from __future__ import annotations

import csv
import re

from trainmedic.probes.base import ProbeResult, quoted
from trainmedic.probes.subproc import CmdResult

NVIDIA_SMI = "nvidia-smi"

_DRIVER_DOWN = re.compile(r"couldn.t communicate with the NVIDIA driver", re.IGNORECASE)
_NVML_INIT = re.compile(r"Failed to initialize NVML: ?(.*)", re.IGNORECASE)
DEVICE_HANDLE = re.compile(
    r"Unable to (?:determine|detect) the device handle for (?:GPU\s*)?"
    r"([0-9A-Fa-f]{3,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f]):\s*(.+)"
)
INVALID_FIELD = re.compile(r"Field \"([^\"]+)\" is not a valid field to query", re.IGNORECASE)
_HEADER_CELL = re.compile(r"^[a-z_][a-z0-9_.]*( \[[^\]]*\])?$")


def clean(value: str | None) -> str | None:
    """A CSV cell without brackets noise: `[N/A]`, `[Not Supported]` and friends become None."""
    if value is None:
        return None
    value = value.strip()
    if not value or value in {"N/A", "Not Supported", "Unknown Error"}:
        return None
    if value.startswith("[") and value.endswith("]"):
        return None
    return value


def number(value: str | None) -> float | None:
    value = clean(value)
    if value is None:
        return None
    match = re.match(r"^-?\d+(?:\.\d+)?", value)
    return float(match.group(0)) if match else None


def _is_header(cells: list[str]) -> bool:
    return bool(cells) and all(_HEADER_CELL.match(c.strip()) for c in cells)


def parse_csv(text: str) -> tuple[list[dict[str, str]], list[str]]:
    """Rows of an nvidia-smi CSV (with header) keyed by field name, and the lines not parsed.

    Comment lines (`# source: ...` in fixtures) and error lines are skipped; error lines are
    returned so the caller can tell a wedged GPU from garbage.
    """
    header: list[str] | None = None
    rows: list[dict[str, str]] = []
    other: list[str] = []
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        cells = next(csv.reader([line], skipinitialspace=True), [])
        if header is None and _is_header(cells):
            header = [re.sub(r"\s*\[[^\]]*\]$", "", c.strip()) for c in cells]
            continue
        if header is None or len(cells) != len(header) or DEVICE_HANDLE.search(line):
            other.append(line.strip())
            continue
        rows.append(dict(zip(header, (c.strip() for c in cells), strict=True)))
    return rows, other


def failure(name: str, res: CmdResult) -> ProbeResult | None:
    """A result for the ways nvidia-smi fails as a whole, or None when its output is usable."""
    text = res.combined()
    if res.error and "not found" in res.error:
        return ProbeResult(
            name, "unavailable", "nvidia-smi not found: no NVIDIA driver here (a login node?)"
        )
    if res.timed_out:  # worse than an error: the driver is stuck on a GPU (a node fault)
        return ProbeResult(
            name,
            "fail",
            f"nvidia-smi hung ({res.error}): a GPU has often fallen off the bus when it does; "
            "check the kernel-xid probe (Xid 79) before running anything else on this node",
            raw=text,
        )
    if res.error:
        return ProbeResult(name, "unavailable", f"cannot run nvidia-smi: {res.error}", raw=text)
    # only the gpu probe declares driver facts; the others just fail with the reason
    down = {"driver_ok": False, "count": 0} if name == "gpu" else {}
    if _DRIVER_DOWN.search(text):
        return ProbeResult(
            name,
            "fail",
            "nvidia-smi cannot talk to the NVIDIA driver (driver not loaded or crashed)",
            facts=dict(down),
            evidence={"driver_ok": first_line(text)} if down else {},
            raw=text,
        )
    init = _NVML_INIT.search(text)
    if init:
        return ProbeResult(
            name,
            "fail",
            f"NVML failed to initialize: {init.group(1) or 'unknown reason'}",
            facts=dict(down),
            evidence={"driver_ok": init.group(0).strip()} if down else {},
            raw=text,
        )
    return None


def unreadable(name: str, what: str, text: str, raw: str = "",
               facts: dict[str, object] | None = None) -> ProbeResult:
    """Output nvidia-smi printed that we cannot read: `unknown` (the GPUs are there, we cannot
    tell their state), with the first line quoted inert: escapes, not bytes, reach the screen."""
    line = first_line(text)
    shown = quoted(line) if line else "no output"
    return ProbeResult(name, "unknown", f"could not read {what}: {shown}", dict(facts or {}),
                       raw=raw or text)


def first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            return line.strip()
    return ""
