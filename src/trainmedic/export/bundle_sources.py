"""What the support bundle reads from the machine besides the probes: `nvidia-smi -q` and the
kernel's Xid/AER lines. Each program runs from an argument list under its own timeout in its own
process group (`probes.subproc.run_cmd`), so a wedged driver makes a note, never a hung command.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from trainmedic.probes.kernel_xid import LOG_SOURCES
from trainmedic.probes.runner import TIMEOUT_ENV
from trainmedic.probes.subproc import run_cmd

NVIDIA_SMI_TIMEOUT_S = 20.0  # -q walks every GPU; a healthy 8-GPU node answers in 1-3 s
KERNEL_TIMEOUT_S = 10.0
KERNEL_LINES = 400  # the newest matching lines kept
LINE_CHARS = 2000
# NVIDIA driver lines (Xid, SXid, NVRM), a GPU lost from the bus, PCIe Advanced Error Reporting.
KERNEL_LINE = re.compile(r"NVRM:|\bS?Xid\b|fallen off the bus|\bAER\b|PCIe Bus Error"
                         r"|pcieport .*(?:error|Error)", re.IGNORECASE)


@dataclass(frozen=True)
class Captured:
    """What a program printed (`text`), where from, and why it is missing or partial."""

    source: str
    text: str = ""
    note: str = ""
    ran: bool = False  # the program answered (its output may still hold nothing of interest)


def timeout_s(default: float) -> float:
    """`default`, or the probes' override (TRAINMEDIC_PROBE_TIMEOUT) when it is shorter."""
    try:
        override = float(os.environ.get(TIMEOUT_ENV, "") or "nan")
    except ValueError:
        return default
    return min(default, override) if override > 0 else default


def nvidia_smi_q() -> Captured:
    """The full `nvidia-smi -q` report (what NVIDIA support asks for first)."""
    res = run_cmd(["nvidia-smi", "-q"], timeout_s(NVIDIA_SMI_TIMEOUT_S))
    if res.error:
        return Captured("nvidia-smi -q", res.stdout, res.error)
    if res.returncode != 0:
        return Captured("nvidia-smi -q", res.combined(),
                        f"nvidia-smi exited with status {res.returncode}", ran=True)
    return Captured("nvidia-smi -q", res.stdout, ran=True)


def kernel_excerpt() -> Captured:
    """The newest Xid/SXid/NVRM/AER lines of the kernel log, read as the kernel-xid probe
    reads it (dmesg, then journalctl -k)."""
    attempts: list[str] = []
    for argv in LOG_SOURCES:
        res = run_cmd(list(argv), timeout_s(KERNEL_TIMEOUT_S))
        if res.ok and res.stdout.strip():
            lines = res.stdout.splitlines()
            kept = [line[:LINE_CHARS] for line in lines if KERNEL_LINE.search(line)]
            note = f"{len(kept)} of {len(lines)} kernel log lines matched"
            if len(kept) > KERNEL_LINES:
                note += f"; the newest {KERNEL_LINES} kept"
            return Captured(" ".join(argv), "\n".join(kept[-KERNEL_LINES:]), note, ran=True)
        attempts.append(res.first_error_line())
        if res.timed_out:
            break
    return Captured(" or ".join(a[0] for a in LOG_SOURCES), "",
                    "cannot read the kernel log: " + " | ".join(attempts)[:300])
