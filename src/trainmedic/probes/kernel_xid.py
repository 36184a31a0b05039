"""The `kernel-xid` probe: NVIDIA Xid errors in the kernel log, what each means and what to do.

A training job that died with "unspecified launch failure" or hung in NCCL often left an Xid in
dmesg: 79 (GPU fell off the bus) or 48/63/64/94/95 (memory errors) mean the node, not the code,
is at fault. dmesg may be forbidden to non-root users; journalctl -k is tried next.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from trainmedic.probes.base import NO_CONTEXT, Budget, ProbeContext, ProbeResult
from trainmedic.probes.subproc import run_cmd

NAME = "kernel-xid"
XID = re.compile(r"NVRM: Xid \((?P<dev>[^)]*)\): (?P<code>\d+)(?P<rest>.*)")
SXID = re.compile(r"SXid \((?P<dev>[^)]*)\): (?P<code>\d+)")
FALLEN = re.compile(r"fallen off the bus", re.IGNORECASE)
# Where the kernel log is read, in order (the support bundle reads the same): dmesg may be
# forbidden to non-root users (kernel.dmesg_restrict), journalctl -k is tried next.
LOG_SOURCES: tuple[tuple[str, ...], ...] = (("dmesg",), ("journalctl", "-k", "--no-pager", "-q",
                                                         "-b"))


@dataclass(frozen=True)
class XidInfo:
    meaning: str
    action: str
    fatal: bool = False  # drain the node / reset the GPU before the next run
    ecc: bool = False


DRAIN = "drain the node and reset the GPU (reboot); RMA if it recurs"
XID_TABLE: dict[int, XidInfo] = {
    8: XidInfo(
        "GPU stopped processing (timeout)", "restart the application; if it repeats, reset the GPU"
    ),
    13: XidInfo(
        "graphics engine exception (usually an application bug: illegal address, out-of-bounds)",
        "restart; run with compute-sanitizer; rarely hardware",
    ),
    31: XidInfo(
        "GPU memory page fault (usually an application illegal memory access)",
        "check the application (CUDA_LAUNCH_BLOCKING=1 to locate); driver/HW rarely",
    ),
    32: XidInfo("invalid or corrupted push buffer stream", "restart; check PCIe and the driver"),
    43: XidInfo(
        "GPU stopped processing (the application hit a software fault)", "restart the application"
    ),
    45: XidInfo(
        "preemptive cleanup after a previous error (informational)",
        "look at the Xid logged before it",
    ),
    46: XidInfo("GPU stopped processing", "reset the GPU", fatal=True),
    48: XidInfo("double-bit ECC error (uncorrectable)", DRAIN, fatal=True, ecc=True),
    61: XidInfo("internal micro-controller breakpoint/warning", "reset the GPU", fatal=True),
    62: XidInfo("internal micro-controller halt", "reset the GPU", fatal=True),
    63: XidInfo(
        "ECC page retirement / row remapping recorded; needs a GPU reset to take effect",
        "reset the GPU when the job ends; drain if it repeats",
        fatal=True,
        ecc=True,
    ),
    64: XidInfo(
        "ECC page retirement / row remapper recording failure", DRAIN, fatal=True, ecc=True
    ),
    69: XidInfo("graphics engine class error", "restart; reset the GPU if it repeats"),
    74: XidInfo(
        "NVLink error", "reset the GPU; inspect nvidia-smi nvlink -e; RMA if it recurs", fatal=True
    ),
    79: XidInfo(
        "GPU has fallen off the bus (PCIe link lost: power, thermal or hardware)",
        "drain the node; reboot, reseat; RMA if it recurs",
        fatal=True,
    ),
    92: XidInfo(
        "high single-bit ECC error rate",
        "run field diagnostics; plan a drain",
        fatal=True,
        ecc=True,
    ),
    94: XidInfo(
        "contained ECC error: only the affected application must restart",
        "restart the job; reset the GPU when convenient",
        fatal=True,
        ecc=True,
    ),
    95: XidInfo(
        "uncontained ECC error: every application on the GPU is affected",
        "reset the GPU now (reboot if MIG is off)",
        fatal=True,
        ecc=True,
    ),
    119: XidInfo(
        "GSP RPC timeout (GPU firmware not responding)", "reset the GPU or power-cycle", fatal=True
    ),
    120: XidInfo("GSP error", "reset the GPU or power-cycle", fatal=True),
    140: XidInfo("unrecovered ECC error", DRAIN, fatal=True, ecc=True),
    143: XidInfo("GPU initialization failure", DRAIN, fatal=True),
    154: XidInfo(
        "GPU recovery action changed (reset or reboot required)",
        "read nvidia-smi -q recovery action; reset or reboot",
        fatal=True,
    ),
}
for _code in range(144, 151):
    XID_TABLE[_code] = XidInfo(
        "NVLink sub-layer error", "reset the GPU; check the NVLink fabric", fatal=True
    )


def describe(code: int) -> XidInfo:
    return XID_TABLE.get(code, XidInfo("see NVIDIA's Xid catalog", "look up the code"))


def parse_log(text: str) -> ProbeResult:
    codes: Counter[int] = Counter()
    devices: dict[int, set[str]] = {}
    lines: list[str] = []
    sxid = 0
    fallen_lines: list[str] = []
    for line in text.splitlines():
        if line.lstrip().startswith("#"):
            continue
        match = XID.search(line)
        if match:
            code = int(match["code"])
            codes[code] += 1
            devices.setdefault(code, set()).add(match["dev"])
            lines.append(line.strip())
        elif SXID.search(line):
            sxid += 1
        if FALLEN.search(line):
            fallen_lines.append(line.strip())
    fallen = 79 in codes or bool(fallen_lines)
    fatal = fallen or any(describe(c).fatal for c in codes)
    ecc = any(describe(c).ecc for c in codes)
    facts: dict[str, object] = {
        "count": sum(codes.values()),
        "codes": sorted(codes),
        "fatal": fatal,
        "fallen_off_bus": fallen,
        "ecc": ecc,
        "sxid_count": sxid,
    }
    per_code = [
        f"Xid {c} ×{n} on {', '.join(sorted(devices[c]))}: {describe(c).meaning} → "
        f"{describe(c).action}"
        for c, n in sorted(codes.items())
    ]
    evidence = {
        "codes": "; ".join(per_code) or "no Xid in the kernel log",
        "count": lines[-1] if lines else "no NVRM: Xid line",
        "fallen_off_bus": (fallen_lines or [ln for ln in lines if "): 79" in ln] or [""])[0]
        or "no GPU fell off the bus",
    }
    evidence["fatal"] = evidence["ecc"] = evidence["codes"]
    raw = "\n".join([*lines[-50:], *fallen_lines[-10:]])
    if not codes and not fallen_lines:
        summary = "no Xid errors in the kernel log since boot"
        return ProbeResult(
            NAME,
            "ok" if not sxid else "warn",
            summary + (f"; {sxid} NVSwitch SXid line(s)" if sxid else ""),
            facts,
            raw,
            evidence=evidence,
        )
    worst = per_code[0] if per_code else "GPU fell off the bus (no Xid line)"
    fatal_codes = [c for c in sorted(codes) if describe(c).fatal]
    if fatal_codes:
        worst = next(p for p in per_code if p.startswith(f"Xid {fatal_codes[0]} "))
    summary = f"{facts['count']} Xid line(s), codes {facts['codes']}: {worst}"
    return ProbeResult(NAME, "fail" if fatal else "warn", summary, facts, raw, evidence=evidence)


def probe(budget: Budget, _context: ProbeContext = NO_CONTEXT) -> ProbeResult:
    attempts: list[str] = []
    for argv in LOG_SOURCES:
        if budget.remaining() <= 0.05:
            break
        res = run_cmd(argv, budget.remaining())
        if res.returncode == 0 and res.stdout.strip():
            result = parse_log(res.stdout)
            result.summary += f" (from {argv[0]})"
            return result
        why = res.first_error_line()
        attempts.append(f"{argv[0]}: {why}" if not why.startswith(argv[0]) else why)
        if res.timed_out:
            break
    denied = any("not permitted" in a.lower() or "permission" in a.lower() for a in attempts)
    hint = "; run as root (sudo dmesg | grep -i xid)" if denied else ""
    return ProbeResult(
        NAME,
        "unavailable",
        "cannot read the kernel log: " + " | ".join(attempts)[:200] + hint,
        raw="\n".join(attempts),
    )
