"""The `pcie` probe: is any GPU's PCIe link narrower or slower than it should be?

A GPU that trained its link at x8 instead of x16, or at Gen3 on a Gen4/Gen5 slot, halves its
host-device and GPU-NIC bandwidth: one slow rank, a straggler every step. nvidia-smi -q -x
gives the current and maximum link generation and width per GPU, and the replay counter
(link-level retransmissions). GPUs lower their link generation (and sometimes width) when idle
to save power, so a low generation counts only while the GPU is busy.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass

from trainmedic.probes import nvsmi
from trainmedic.probes.base import NO_CONTEXT, Budget, ProbeContext, ProbeResult
from trainmedic.probes.subproc import run_cmd

NAME = "pcie"
ARGV = [nvsmi.NVIDIA_SMI, "-q", "-x"]
BUSY_PERCENT = 10.0  # below this the driver may have lowered the link to save power
CSV_HINT = ("nvidia-smi --query-gpu=index,pcie.link.gen.current,pcie.link.gen.max,"
            "pcie.link.width.current,pcie.link.width.max,utilization.gpu --format=csv")


@dataclass
class Link:
    index: int
    bus_id: str
    gen: int | None
    gen_max: int | None
    width: int | None
    width_max: int | None
    replays: int | None
    util: float | None

    @property
    def width_low(self) -> bool:
        return self.width is not None and self.width_max is not None and self.width < self.width_max

    @property
    def gen_low(self) -> bool:
        return self.gen is not None and self.gen_max is not None and self.gen < self.gen_max

    @property
    def busy(self) -> bool:
        return self.util is not None and self.util >= BUSY_PERCENT

    def label(self) -> str:
        def show(value: int | None) -> str:
            return "?" if value is None else str(value)

        load = f", {self.util:g}% busy" if self.util is not None else ""
        return (f"GPU {self.index} ({self.bus_id}): Gen{show(self.gen)} x{show(self.width)} "
                f"of Gen{show(self.gen_max)} x{show(self.width_max)}{load}")


def _int(node: ET.Element | None, tag: str) -> int | None:
    value = nvsmi.number(node.findtext(tag) if node is not None else None)
    return int(value) if value is not None else None


def parse_links(xml_text: str) -> list[Link]:
    """Per-GPU link state from `nvidia-smi -q -x`; raises ValueError on text that is not XML."""
    start = xml_text.find("<nvidia_smi_log")
    if start < 0:
        raise ValueError("no <nvidia_smi_log> element")
    try:
        root = ET.fromstring(xml_text[start:])  # DOCTYPE dropped: nothing external is read
    except ET.ParseError as exc:
        raise ValueError(f"malformed XML: {exc}") from exc
    links = []
    for i, gpu in enumerate(root.findall("gpu")):
        info = gpu.find("pci/pci_gpu_link_info")
        gen = info.find("pcie_gen") if info is not None else None
        widths = info.find("link_widths") if info is not None else None
        util = nvsmi.number(gpu.findtext("utilization/gpu_util"))
        links.append(
            Link(
                index=i,
                bus_id=gpu.get("id") or nvsmi.clean(gpu.findtext("pci/pci_bus_id")) or "?",
                gen=_int(gen, "current_link_gen"),
                gen_max=_int(gen, "max_link_gen"),
                width=_int(widths, "current_link_width"),
                width_max=_int(widths, "max_link_width"),
                replays=_int(gpu.find("pci"), "replay_counter"),
                util=util,
            )
        )
    return links


def build_result(links: list[Link], raw: str) -> ProbeResult:
    known = [link for link in links if link.width is not None or link.gen is not None]
    if not known:
        return ProbeResult(NAME, "unavailable", "nvidia-smi reports no PCIe link information "
                           "(a GPU behind NVLink-C2C, a VM or an old driver)", raw=raw)
    narrow = [link for link in known if link.width_low]
    slow = [link for link in known if link.gen_low and link.busy]
    idle_low = [link for link in known if link.gen_low and not link.busy]
    widths = [link.width for link in known if link.width is not None]
    gens = [link.gen for link in known if link.gen is not None]
    replays = sum(link.replays or 0 for link in known)
    degraded = [link.label() for link in narrow + [s for s in slow if s not in narrow]]
    facts: dict[str, object] = {
        "gpus": len(known),
        "width_degraded": len(narrow),
        "gen_degraded": len(slow),
        "replay_errors": replays,
        "degraded": degraded,
    }
    if widths:
        facts["min_width"] = min(widths)
    if gens:
        facts["min_gen"] = min(gens)
    width_line = "; ".join(link.label() for link in narrow) or "every link at its full width"
    gen_line = "; ".join(link.label() for link in slow) or (
        "no busy GPU below its maximum generation"
        + (f" ({len(idle_low)} idle GPU(s) at a lower generation: normal power saving; "
           "re-check under load)" if idle_low else "")
    )
    evidence = {
        "width_degraded": width_line,
        "min_width": width_line,
        "gen_degraded": gen_line,
        "min_gen": gen_line,
        "degraded": "; ".join(degraded) or "no degraded link",
        "replay_errors": f"PCIe replay counters sum to {replays} (link-level retransmissions; "
        "a counter that keeps growing points at a bad riser, slot or cable)",
        "gpus": f"{len(known)} GPU(s) report their PCIe link; compare: {CSV_HINT}",
    }
    problems = []
    if narrow:
        problems.append(f"{len(narrow)} GPU(s) below full link width")
    if slow:
        problems.append(f"{len(slow)} busy GPU(s) below their maximum PCIe generation")
    if problems:
        summary = "; ".join(problems) + ": " + "; ".join(degraded[:3])
        return ProbeResult(NAME, "warn", summary, facts, raw, evidence=evidence)
    summary = f"{len(known)} GPU(s): links at full width"
    if idle_low:
        summary += f"; {len(idle_low)} idle GPU(s) at a lower generation (power saving)"
    return ProbeResult(NAME, "ok", summary, facts, raw, evidence=evidence)


def probe(budget: Budget, _context: ProbeContext = NO_CONTEXT) -> ProbeResult:
    res = run_cmd(ARGV, budget.remaining())
    failed = nvsmi.failure(NAME, res)
    raw = f"$ {' '.join(ARGV)}\n{res.combined()[:20000]}"
    if failed is not None:
        failed.raw = raw
        return failed
    if res.returncode != 0:
        return ProbeResult(NAME, "fail", f"nvidia-smi -q -x failed: "
                           f"{res.first_error_line()[:160]}", raw=raw)
    try:
        links = parse_links(res.stdout)
    except ValueError as exc:
        return ProbeResult(NAME, "unknown", f"could not read nvidia-smi -q -x: {exc}", raw=raw)
    if not links:
        return ProbeResult(NAME, "unavailable", "nvidia-smi -q -x lists no GPU", raw=raw)
    return build_result(links, raw)
