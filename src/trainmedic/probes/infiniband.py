"""The `infiniband` probe: InfiniBand/RoCE port states and rates from ibstat (or ibv_devinfo).

One port down or trained at half rate makes every multi-node collective wait for the slowest
link; NCCL then reports timeouts or "remote process exited", far from the cause.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from trainmedic.probes.base import NO_CONTEXT, Budget, ProbeContext, ProbeResult, Status
from trainmedic.probes.subproc import run_cmd

NAME = "infiniband"


@dataclass
class Port:
    ca: str
    port: str
    state: str = ""
    physical: str = ""
    rate_gbps: float | None = None
    link_layer: str = ""

    @property
    def active(self) -> bool:
        return self.state.upper() in {"ACTIVE", "PORT_ACTIVE"}

    def label(self) -> str:
        extra = ", ".join(x for x in (self.link_layer, self.physical or self.state) if x)
        return f"{self.ca}/{self.port} ({extra})"


def parse_ibstat(text: str) -> list[Port]:
    ports: list[Port] = []
    ca = ""
    current: Port | None = None
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            continue
        if m := re.match(r"^CA '([^']+)'", stripped):
            ca, current = m.group(1), None
        elif m := re.match(r"^Port (\d+):$", stripped):
            if ca:
                current = Port(ca, m.group(1))
                ports.append(current)
        elif current is not None and ":" in stripped:
            key, _, value = stripped.partition(":")
            value = value.strip()
            key = key.strip().lower()
            if key == "state":
                current.state = value
            elif key == "physical state":
                current.physical = value
            elif key == "rate":
                num = re.match(r"\d+(?:\.\d+)?", value)
                current.rate_gbps = float(num.group(0)) if num else None
            elif key == "link layer":
                current.link_layer = value
    return ports


def parse_ibv_devinfo(text: str) -> list[Port]:
    """Ports of plain `ibv_devinfo` (it gives states and link layers, not rates)."""
    ports: list[Port] = []
    ca = ""
    current: Port | None = None
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            continue
        if m := re.match(r"^hca_id:\s*(\S+)", stripped):
            ca, current = m.group(1), None
        elif m := re.match(r"^port:\s*(\d+)", stripped):
            current = Port(ca, m.group(1))
            ports.append(current)
        elif current is not None and ":" in stripped:
            key, _, value = stripped.partition(":")
            key, value = key.strip(), value.strip()
            if key == "state":
                current.state = value.split()[0] if value else ""
            elif key == "phys_state":
                current.physical = value.split()[0] if value else ""
            elif key == "link_layer":
                current.link_layer = value
    return ports


def build_result(ports: list[Port], raw: str, tool: str) -> ProbeResult:
    if not ports:
        return ProbeResult(NAME, "unavailable", f"{tool} lists no port", raw=raw)
    down = [p for p in ports if not p.active]
    ib_down = [p for p in down if p.link_layer.lower() == "infiniband"]
    active_rates = [p.rate_gbps for p in ports if p.active and p.rate_gbps is not None]
    ib_rates = [
        p.rate_gbps
        for p in ports
        if p.active and p.rate_gbps is not None and p.link_layer.lower() == "infiniband"
    ]
    facts: dict[str, object] = {
        "ports": len(ports),
        "ports_down": len(down),
        "ib_ports_down": len(ib_down),
        "down_ports": [p.label() for p in down],
    }
    if active_rates:  # unknown rates (plain ibv_devinfo) must not read as 0 Gb/s
        facts["min_rate_gbps"] = float(min(active_rates))
    slow = [
        p
        for p in ports
        if p.active
        and ib_rates
        and p.rate_gbps is not None
        and p.link_layer.lower() == "infiniband"
        and p.rate_gbps < max(ib_rates)
    ]
    evidence = {
        "ports_down": "; ".join(p.label() for p in down) or "every port is Active",
        "ib_ports_down": "; ".join(p.label() for p in ib_down) or "every InfiniBand port is Active",
        "min_rate_gbps": (
            "; ".join(f"{p.ca}/{p.port} at {p.rate_gbps:g} Gb/s vs {max(ib_rates):g}" for p in slow)
            if slow
            else f"active rates: {sorted(set(active_rates))} Gb/s"
        ),
    }
    evidence["down_ports"] = evidence["ports_down"]
    parts = [f"{len(ports) - len(down)}/{len(ports)} port(s) Active"]
    if down:
        parts.append("down: " + ", ".join(p.label() for p in down[:4]))
    if slow:
        parts.append(f"{len(slow)} InfiniBand port(s) below the others' rate")
    status: Status = "fail" if ib_down else "warn" if (down or slow) else "ok"
    return ProbeResult(NAME, status, f"{tool}: " + "; ".join(parts), facts, raw, evidence=evidence)


def probe(budget: Budget, _context: ProbeContext = NO_CONTEXT) -> ProbeResult:
    reasons: list[str] = []
    for argv, parser in ((["ibstat"], parse_ibstat), (["ibv_devinfo"], parse_ibv_devinfo)):
        if budget.remaining() <= 0.05:
            break
        res = run_cmd(argv, budget.remaining())
        ports = parser(res.stdout) if res.stdout else []
        if ports:
            return build_result(ports, res.stdout, argv[0])
        reasons.append(
            res.first_error_line()
            if (res.error or res.returncode)
            else f"{argv[0]}: no port in its output"
        )
        if res.timed_out:
            break
    if all("not found" in r for r in reasons) and reasons:
        summary = "no ibstat/ibv_devinfo: not an InfiniBand node, or infiniband-diags missing"
    else:
        summary = "cannot read InfiniBand ports: " + " | ".join(reasons)[:200]
    return ProbeResult(NAME, "unavailable", summary, raw="\n".join(reasons))
