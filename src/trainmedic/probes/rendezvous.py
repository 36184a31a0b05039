"""The `rendezvous` probe: can this node reach the rendezvous address and port?

"Connection refused", "Name or service not known" and "Address already in use" at start-up are
rendezvous problems: MASTER_ADDR does not resolve, nothing listens on MASTER_PORT yet, or a
stale process on the master still holds the port. Nothing is ever sent on the connection.
"""

from __future__ import annotations

import os
import socket
import threading
from urllib.parse import urlsplit

from trainmedic.probes.base import NO_CONTEXT, Budget, ProbeContext, ProbeResult
from trainmedic.redact import redact_text

NAME = "rendezvous"
DEFAULT_PORT = 29500  # torchrun's default --master-port


def _host_of(value: str) -> str:
    value = value.strip()
    if "://" in value:
        return urlsplit(value).hostname or ""
    if value.count(":") == 1:
        return value.split(":")[0]
    return value.strip("[]")


def resolve(host: str, seconds: float) -> tuple[list[str] | None, str]:
    """Addresses of `host` within `seconds` (getaddrinfo cannot be cancelled: run it aside)."""
    addrs: list[str] = []
    box: dict[str, str] = {}  # "error": why the lookup failed

    def work() -> None:
        try:
            infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
            addrs.extend(sorted({str(info[4][0]) for info in infos}))
        except OSError as exc:
            box["error"] = str(exc)

    thread = threading.Thread(target=work, name="rendezvous-dns", daemon=True)
    thread.start()
    thread.join(max(0.0, seconds))
    if thread.is_alive():
        return None, f"DNS lookup of {host} did not finish within {seconds:.2g}s"
    if "error" in box:
        return None, f"{host} does not resolve: {box['error']}"
    return addrs, ""


def _local_addresses(seconds: float) -> set[str]:
    """This node's own addresses; the lookup is bounded like MASTER_ADDR's (DNS may be down)."""
    own, _why = resolve(socket.gethostname(), seconds)
    return {"127.0.0.1", "::1", "0.0.0.0", *(own or [])}


def port_answers(addr: str, port: int, seconds: float) -> tuple[bool, str]:
    family = socket.AF_INET6 if ":" in addr else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            sock.settimeout(max(0.05, seconds))
            sock.connect((addr, port))
        return True, f"{addr}:{port} accepts connections"
    except ConnectionRefusedError:
        return False, f"{addr}:{port} refused: nothing listens there (yet)"
    except TimeoutError:
        return (
            False,
            f"{addr}:{port} did not answer within {seconds:.2g}s (firewall? wrong address?)",
        )
    except OSError as exc:
        return False, f"{addr}:{port}: {exc.strerror or exc}"


def port_taken_here(port: int) -> bool:
    """True when binding the port on this node fails with 'address already in use'."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind(("", port))
        return False
    except OSError:
        return True


def check(env: dict[str, str], budget: Budget) -> ProbeResult:
    raw_addr = env.get("MASTER_ADDR", "").strip()
    port_text = env.get("MASTER_PORT", "").strip()
    if not raw_addr:
        return ProbeResult(
            NAME,
            "unavailable",
            "MASTER_ADDR is not set (torchrun sets it from --rdzv-endpoint; with srun, export "
            "MASTER_ADDR=$(scontrol show hostnames $SLURM_JOB_NODELIST | head -n1))",
        )
    try:
        port = int(port_text) if port_text else DEFAULT_PORT
        if not 0 < port < 65536:
            raise ValueError
    except ValueError:
        return ProbeResult(
            NAME,
            "fail",
            f"MASTER_PORT={port_text!r} is not a port number",
            facts={"port": 0},
            evidence={"port": f"MASTER_PORT={port_text}"},
        )
    host = _host_of(raw_addr)
    shown = redact_text(raw_addr)
    addrs, why = resolve(host, min(budget.remaining() * 0.6, 3.0))
    facts: dict[str, object] = {"port": port, "port_in_use_locally": port_taken_here(port)}
    evidence = {
        "port": f"MASTER_PORT={port_text or f'(unset, torchrun default {DEFAULT_PORT})'}",
        "port_in_use_locally": f"port {port} on this node is "
        + (
            "taken (Address already in use for a new master here)"
            if facts["port_in_use_locally"]
            else "free"
        ),
    }
    if addrs is None or not addrs:
        facts.update(master_addr_resolves=False, master_port_open=False, master_is_local=False)
        evidence["master_addr_resolves"] = why or f"{host} resolves to nothing"
        return ProbeResult(
            NAME,
            "fail",
            f"MASTER_ADDR={shown}: {evidence['master_addr_resolves']}",
            facts,
            evidence=evidence,
        )
    facts["master_addr_resolves"] = True
    evidence["master_addr_resolves"] = f"{host} -> {', '.join(addrs[:4])}"
    local = bool(set(addrs) & _local_addresses(min(budget.remaining() * 0.3, 1.0)))
    facts["master_is_local"] = local
    is_open, line = port_answers(addrs[0], port, min(max(budget.remaining() - 0.1, 0.05), 2.0))
    facts["master_port_open"] = is_open
    evidence["master_port_open"] = line
    where = "this node is the master; " if local else ""
    if is_open:
        return ProbeResult(
            NAME,
            "ok",
            f"{where}{host}:{port} resolves and accepts connections",
            facts,
            evidence=evidence,
        )
    return ProbeResult(NAME, "warn", f"{where}{host} resolves but {line}", facts, evidence=evidence)


def probe(budget: Budget, _context: ProbeContext = NO_CONTEXT) -> ProbeResult:
    return check(dict(os.environ), budget)
