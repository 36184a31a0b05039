"""The `gpu` probe: per-GPU memory, ECC, temperature, throttling and MIG from nvidia-smi.

The CSV query gives the numbers; `nvidia-smi -q -x` adds the health the CSV lacks (row remapping
pending or failed, retired pages pending, reset required). Expected GPUs come from
TRAINMEDIC_EXPECTED_GPUS, CUDA_VISIBLE_DEVICES or SLURM_GPUS_ON_NODE.
"""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

from trainmedic.probes import nvsmi
from trainmedic.probes.base import NO_CONTEXT, Budget, ProbeContext, ProbeResult, Status, quoted
from trainmedic.probes.subproc import run_cmd

NAME = "gpu"
THROTTLE_FIELDS = ("clocks_throttle_reasons.active", "clocks_event_reasons.active")
BASE_FIELDS = (
    "index",
    "name",
    "uuid",
    "pci.bus_id",
    "memory.used",
    "memory.total",
    "utilization.gpu",
    "temperature.gpu",
    "power.draw",
    "ecc.errors.uncorrected.volatile.total",
    "persistence_mode",
)
TAIL_FIELDS = ("driver_version", "mig.mode.current")

# clocks_event_reasons bit mask (nvml.h nvmlClocksEventReason*): the ones that mean trouble.
BAD_REASONS = {
    0x8: "HW slowdown",
    0x20: "SW thermal slowdown",
    0x40: "HW thermal slowdown",
    0x80: "HW power brake slowdown",
}
HOT_C = 85.0
MEMORY_WARN = 0.90


@dataclass
class Gpu:
    index: int
    name: str = ""
    uuid: str = ""
    bus_id: str = ""
    used_mib: float | None = None
    total_mib: float | None = None
    temperature_c: float | None = None
    ecc_uncorrected: int = 0
    throttle: list[str] = field(default_factory=list)
    mig: bool = False
    driver: str = ""
    reset_required: bool = False
    health: list[str] = field(default_factory=list)  # from -q -x: "row remapping pending"...

    @property
    def fraction(self) -> float | None:
        if self.used_mib is None or not self.total_mib:
            return None
        return self.used_mib / self.total_mib


def query_argv(throttle_field: str | None) -> list[str]:
    fields = [*BASE_FIELDS, *([throttle_field] if throttle_field else []), *TAIL_FIELDS]
    return [nvsmi.NVIDIA_SMI, f"--query-gpu={','.join(fields)}", "--format=csv,nounits"]


def _throttle_names(value: str | None) -> list[str]:
    value = nvsmi.clean(value)
    if not value:
        return []
    try:
        mask = int(value, 16)
    except ValueError:
        return []
    return [label for bit, label in BAD_REASONS.items() if mask & bit]


def parse_gpus(rows: list[dict[str, str]]) -> list[Gpu]:
    gpus: list[Gpu] = []
    for position, row in enumerate(rows):
        index = nvsmi.number(row.get("index"))
        used = nvsmi.number(row.get("memory.used"))
        total = nvsmi.number(row.get("memory.total"))
        if total is None:  # some field sets give reserved/used/free instead of total
            parts = [nvsmi.number(row.get(k)) for k in ("memory.reserved", "memory.used")]
            free = nvsmi.number(row.get("memory.free"))
            if free is not None and None not in parts:
                total = free + sum(p for p in parts if p is not None)
        raw_values = " ".join(row.values())
        throttle_key = next((k for k in THROTTLE_FIELDS if k in row), "")
        gpus.append(
            Gpu(
                index=int(index) if index is not None else position,
                name=nvsmi.clean(row.get("name")) or "",
                uuid=nvsmi.clean(row.get("uuid")) or "",
                bus_id=nvsmi.clean(row.get("pci.bus_id")) or "",
                used_mib=used,
                total_mib=total,
                temperature_c=nvsmi.number(row.get("temperature.gpu")),
                ecc_uncorrected=int(
                    nvsmi.number(row.get("ecc.errors.uncorrected.volatile.total")) or 0
                ),
                throttle=_throttle_names(row.get(throttle_key)) if throttle_key else [],
                mig=(nvsmi.clean(row.get("mig.mode.current")) or "").lower() == "enabled",
                driver=nvsmi.clean(row.get("driver_version")) or "",
                reset_required="requires reset" in raw_values.lower(),
            )
        )
    return gpus


# ---- nvidia-smi -q -x -------------------------------------------------------------------


@dataclass
class XmlHealth:
    bus_id: str
    product: str = ""
    remap_pending: bool = False
    remap_failed: bool = False
    retire_pending: bool = False
    reset_required: bool = False
    drain_recommended: bool = False
    dram_uncorrectable: int = 0
    mig: bool = False
    throttle: list[str] = field(default_factory=list)


def _text(node: ET.Element | None, path: str) -> str:
    if node is None:
        return ""
    found = node.find(path)
    return (found.text or "").strip() if found is not None else ""


def _yes(value: str) -> bool:
    return value.strip().lower() in {"yes", "true", "active"}


def parse_xml(text: str) -> tuple[list[XmlHealth], str]:
    """Health per GPU from `nvidia-smi -q -x`, and the driver version; raises ValueError."""
    start = text.find("<nvidia_smi_log")
    if start < 0:
        raise ValueError("no <nvidia_smi_log> element")
    try:
        root = ET.fromstring(text[start:])  # DOCTYPE dropped: nothing external is ever read
    except ET.ParseError as exc:
        raise ValueError(f"malformed XML: {exc}") from exc
    found: list[XmlHealth] = []
    for gpu in root.findall("gpu"):
        health = XmlHealth(bus_id=gpu.get("id", ""), product=_text(gpu, "product_name"))
        health.remap_pending = _yes(_text(gpu, "remapped_rows/remapped_row_pending"))
        health.remap_failed = _yes(_text(gpu, "remapped_rows/remapped_row_failure"))
        health.retire_pending = _yes(_text(gpu, "retired_pages/pending_retirement")) or _yes(
            _text(gpu, "retired_pages/pending_blacklist")
        )
        health.reset_required = _yes(_text(gpu, "gpu_reset_status/reset_required"))
        health.drain_recommended = _yes(_text(gpu, "gpu_reset_status/drain_and_reset_recommended"))
        dram = nvsmi.number(_text(gpu, "ecc_errors/volatile/dram_uncorrectable"))
        double = nvsmi.number(_text(gpu, "ecc_errors/volatile/double_bit/total"))
        health.dram_uncorrectable = int((dram or 0) + (double or 0))
        health.mig = _text(gpu, "mig_mode/current_mig").lower() == "enabled"
        for group in ("clocks_event_reasons", "clocks_throttle_reasons"):
            node = gpu.find(group)
            if node is None:
                continue
            for child in node:
                if not _yes(child.text or ""):
                    continue
                tag = re.sub(r"^clocks_(event|throttle)_reason_", "", child.tag)
                if tag in {
                    "hw_slowdown",
                    "hw_thermal_slowdown",
                    "sw_thermal_slowdown",
                    "hw_power_brake_slowdown",
                }:
                    health.throttle.append(
                        tag.replace("_", " ").replace("hw", "HW").replace("sw", "SW")
                    )
        found.append(health)
    return found, _text(root, "driver_version")


def _same_bus(a: str, b: str) -> bool:
    """Bus ids differ in domain width: 00000000:3B:00.0 vs 0000:3b:00.0."""

    def norm(bus: str) -> str:
        return bus.lower().split(":", 1)[-1] if bus.count(":") == 2 else bus.lower()

    return bool(a and b) and norm(a) == norm(b)


# ---- expected GPUs ----------------------------------------------------------------------


def expected_gpus(gpus: list[Gpu], env: dict[str, str]) -> tuple[int, int, str]:
    """(expected, missing, evidence) from the environment; expected = present when unknown."""
    explicit = env.get("TRAINMEDIC_EXPECTED_GPUS", "").strip()
    if explicit.isdigit():
        expected = int(explicit)
        missing = max(0, expected - len(gpus))
        return (
            expected,
            missing,
            f"TRAINMEDIC_EXPECTED_GPUS={expected}, nvidia-smi lists {len(gpus)}",
        )
    visible = env.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip() and visible.strip() != "NoDevFiles":
        wanted = [v.strip() for v in visible.split(",") if v.strip()]
        present_idx = {str(g.index) for g in gpus}
        absent = [
            w
            for w in wanted
            if not (w in present_idx or any(g.uuid and g.uuid.startswith(w) for g in gpus))
        ]
        listed = ",".join(sorted(present_idx, key=int)) or "none"
        return (
            len(wanted),
            len(absent),
            f"CUDA_VISIBLE_DEVICES={visible} and nvidia-smi lists GPUs {listed}"
            + (f" (absent: {','.join(absent)})" if absent else ""),
        )
    slurm = env.get("SLURM_GPUS_ON_NODE", "").strip()
    if slurm.isdigit():
        expected = int(slurm)
        missing = max(0, expected - len(gpus))
        return expected, missing, f"SLURM_GPUS_ON_NODE={expected}, nvidia-smi lists {len(gpus)}"
    return len(gpus), 0, f"nvidia-smi lists {len(gpus)} GPU(s); no expected count set"


# ---- the probe --------------------------------------------------------------------------


def _gib(mib: float) -> str:
    return f"{mib / 1024:.1f}"


def build_result(
    gpus: list[Gpu],
    wedged: list[str],
    health: list[XmlHealth],
    env: dict[str, str],
    raw: str,
    notes: list[str],
    xml_driver: str = "",
) -> ProbeResult:
    for h in health:
        for g in gpus:
            if _same_bus(g.bus_id, h.bus_id) or (len(health) == len(gpus) == 1):
                if h.remap_pending:
                    g.health.append("row remapping pending (reset the GPU to apply)")
                if h.remap_failed:
                    g.health.append("row remapping FAILED (drain the node, RMA)")
                if h.retire_pending:
                    g.health.append("page retirement pending (reset the GPU)")
                if h.reset_required or h.drain_recommended:
                    g.reset_required = True
                    g.health.append("driver says reset required / drain and reset recommended")
                g.mig = g.mig or h.mig
                g.throttle = sorted(set(g.throttle) | set(h.throttle))
                if h.dram_uncorrectable and not g.ecc_uncorrected:
                    g.ecc_uncorrected = h.dram_uncorrectable
    expected, missing, missing_line = expected_gpus(gpus, env)
    if wedged:  # a GPU that does not answer is both expected and missing
        expected = max(expected, len(gpus) + len(wedged))
        missing = max(missing, len(wedged))
    facts: dict[str, object] = {"count": len(gpus), "expected": expected, "missing": missing}
    evidence: dict[str, str] = {"missing": missing_line, "count": missing_line}
    if wedged:
        evidence["missing"] = "; ".join(wedged)
    frac = hottest = -1.0
    fractions = [(g.fraction, g) for g in gpus if g.fraction is not None]
    if fractions:
        frac, top = max(fractions, key=lambda item: item[0])
        facts["max_memory_fraction"] = round(frac, 4)
        facts["max_memory_used_mib"] = float(top.used_mib or 0.0)
        evidence["max_memory_fraction"] = evidence["max_memory_used_mib"] = (
            f"GPU {top.index}: {_gib(top.used_mib or 0)} of {_gib(top.total_mib or 0)} GiB used "
            f"({frac:.1%})"
        )
    totals = [g.total_mib for g in gpus if g.total_mib]
    if totals:
        facts["min_memory_total_mib"] = float(min(totals))
    facts["ecc_uncorrected"] = sum(g.ecc_uncorrected for g in gpus)
    ecc_lines = [
        f"GPU {g.index}: {g.ecc_uncorrected} uncorrected ECC errors"
        for g in gpus
        if g.ecc_uncorrected
    ]
    evidence["ecc_uncorrected"] = "; ".join(ecc_lines) or "no uncorrected volatile ECC errors"
    temps = [(g.temperature_c, g) for g in gpus if g.temperature_c is not None]
    if temps:
        hottest, hot_gpu = max(temps, key=lambda item: item[0])
        facts["max_temperature_c"] = float(hottest)
        evidence["max_temperature_c"] = f"GPU {hot_gpu.index}: {hottest:g} C"
    throttled = [g for g in gpus if g.throttle]
    facts["throttled"] = bool(throttled)
    facts["throttle_reasons"] = sorted({r for g in throttled for r in g.throttle})
    evidence["throttled"] = (
        "; ".join(f"GPU {g.index}: {', '.join(g.throttle)}" for g in throttled)
        or "no HW/thermal/power-brake slowdown active"
    )
    facts["remap_pending"] = any(
        "remapping" in h or "retirement" in h for g in gpus for h in g.health
    )
    facts["reset_required"] = bool(wedged) or any(g.reset_required for g in gpus)
    health_lines = [f"GPU {g.index}: {h}" for g in gpus for h in g.health]
    evidence["remap_pending"] = "; ".join(
        line for line in health_lines if "remapping" in line or "retirement" in line
    ) or ("no row remapping or retirement pending" if health else "nvidia-smi -q -x not read")
    evidence["reset_required"] = (
        "; ".join([*wedged, *(line for line in health_lines if "reset" in line)])
        or "no GPU asks for a reset"
    )
    facts["mig_enabled"] = any(g.mig for g in gpus)
    if facts["mig_enabled"]:
        evidence["mig_enabled"] = "MIG on: " + ", ".join(f"GPU {g.index}" for g in gpus if g.mig)
    facts["driver_ok"] = True
    driver = next((g.driver for g in gpus if g.driver), "") or xml_driver
    facts["driver_version"] = driver
    facts["wedged"] = len(wedged)
    models = sorted({g.name for g in gpus if g.name})
    facts["models"] = models

    problems: list[str] = []
    if wedged:
        problems.append(f"{len(wedged)} GPU(s) not answering (wedged or fallen off the bus)")
    if missing and not wedged:
        problems.append(f"{missing} expected GPU(s) missing")
    if facts["ecc_uncorrected"]:
        problems.append(f"{facts['ecc_uncorrected']} uncorrected ECC errors")
    if facts["remap_pending"] or any("FAILED" in h for g in gpus for h in g.health):
        problems.append("memory row remapping/retirement pending")
    if facts["reset_required"] and not wedged:
        problems.append("a GPU needs a reset")
    warnings: list[str] = []
    if throttled:
        warnings.append(f"throttling on {len(throttled)} GPU(s)")
    if hottest >= HOT_C:
        warnings.append(f"hot: {evidence['max_temperature_c']}")
    if frac >= MEMORY_WARN:
        warnings.append(f"memory nearly full ({evidence['max_memory_fraction']})")
    head = (f"{len(gpus)} × {', '.join(models) or 'unknown model'}" if gpus
            else "no GPU answered nvidia-smi")
    head += f", driver {driver}" if driver else ""
    status: Status = "fail" if problems else "warn" if warnings else "ok"
    detail = problems + warnings + notes
    summary = head + ("; " + "; ".join(detail) if detail else "; healthy")
    return ProbeResult(NAME, status, summary, facts, raw, evidence=evidence)


def probe(budget: Budget, _context: ProbeContext = NO_CONTEXT) -> ProbeResult:
    env = dict(os.environ)
    raw_parts: list[str] = []
    # Older drivers know clocks_throttle_reasons, newer ones clocks_event_reasons; an unknown
    # field fails the whole query, so retry with the other name, then without either.
    for throttle_field in (*THROTTLE_FIELDS, None):
        res = run_cmd(query_argv(throttle_field), budget.remaining())
        raw_parts.append(f"$ {' '.join(res.argv)}\n{res.combined()}")
        if res.timed_out or not nvsmi.INVALID_FIELD.search(res.combined()):
            break
    failed = nvsmi.failure(NAME, res)
    if failed is not None:
        failed.raw = "\n".join(raw_parts)
        return failed
    rows, other = nvsmi.parse_csv(res.stdout + "\n" + res.stderr)
    wedged = [
        f"GPU {m.group(1)}: {m.group(2).strip()}"
        for line in other
        if (m := nvsmi.DEVICE_HANDLE.search(line))
    ]
    if not rows and not wedged:
        if res.returncode != 0:
            return ProbeResult(NAME, "fail", f"nvidia-smi failed (exit {res.returncode}): "
                               f"{quoted(res.first_error_line(), 160)}",
                               raw="\n".join(raw_parts))
        return nvsmi.unreadable(NAME, "nvidia-smi output", res.combined(), "\n".join(raw_parts))
    gpus = parse_gpus(rows)
    notes: list[str] = []
    health: list[XmlHealth] = []
    xml_driver = ""
    if gpus and budget.remaining() > 0.2:
        xres = run_cmd([nvsmi.NVIDIA_SMI, "-q", "-x"], budget.remaining())
        if xres.ok:
            try:
                health, xml_driver = parse_xml(xres.stdout)
            except ValueError as exc:
                notes.append(f"nvidia-smi -q -x unreadable ({exc})")
        else:
            notes.append(f"nvidia-smi -q -x failed ({xres.first_error_line()[:100]})")
    return build_result(gpus, wedged, health, env, "\n".join(raw_parts), notes, xml_driver)
