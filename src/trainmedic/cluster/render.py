"""The cluster result as table rows: node x key facts, only what differs by default.

Healthy nodes collapse into one row under their compressed host list, so 512 nodes still fit a
screen; every bad node gets its own row. Plain strings only: the command line and the app's
cluster screen each draw them their own way.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from trainmedic.cluster.aggregate import node_facts
from trainmedic.cluster.hostlist import compress
from trainmedic.cluster.result import ClusterResult, NodeFinding

Facts = dict[str, object]


def _num(facts: Facts, fact: str) -> float | None:
    value = facts.get(fact)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _gpus(facts: Facts) -> str:
    count, expected = _num(facts, "gpu.count"), _num(facts, "gpu.expected")
    if count is None:
        return ""
    return f"{count:g}/{expected:g}" if expected else f"{count:g}"


def _mem(facts: Facts) -> str:
    used = _num(facts, "gpu.max_memory_used_mib")
    return "" if used is None else f"{used / 1024:.0f}G"


def _xid(facts: Facts) -> str:
    codes = facts.get("kernel-xid.codes")
    if isinstance(codes, list):
        return ",".join(str(c) for c in codes) or "-"
    return ""


def _ib(facts: Facts) -> str:
    ports, down = _num(facts, "infiniband.ports"), _num(facts, "infiniband.ports_down")
    if ports is None:
        return ""
    return f"{ports - (down or 0):g}/{ports:g}"


def _plain(fact: str) -> Callable[[Facts], str]:
    def get(facts: Facts) -> str:
        value = facts.get(fact)
        return "" if value is None else str(value)

    return get


@dataclass(frozen=True)
class Column:
    header: str
    value: Callable[[Facts], str]
    facts: tuple[str, ...]  # fact prefixes whose findings make this column relevant
    noisy: bool = False  # values vary on healthy nodes: show only when a finding names it


COLUMNS = (
    Column("GPUs", _gpus, ("gpu.missing", "gpu.count", "gpu.expected")),
    Column("mem", _mem, ("gpu.max_memory_used_mib",), noisy=True),
    Column("procs", _plain("gpu-processes.count"), ("gpu-processes.",)),
    Column("ECC", _plain("gpu.ecc_uncorrected"), ("gpu.ecc_uncorrected",)),
    Column("Xid", _xid, ("kernel-xid.",)),
    Column("driver", _plain("gpu.driver_version"), ("gpu.driver_version",)),
    Column("CUDA", _plain("versions.torch_cuda"), ("versions.torch_cuda",)),
    Column("NCCL", _plain("versions.nccl"), ("versions.nccl",)),
    Column("torch", _plain("versions.torch"), ("versions.torch",)),
    Column("IB", _ib, ("infiniband.",)),
)

_STATE_TEXT = {"ok": "ok", "no-answer": "silent", "unreachable": "down",
               "garbage": "garbage", "error": "error"}


def _env_cell(host: str, findings: list[NodeFinding]) -> str:
    """Names of the variables that differ on this node (values are in its verdict line)."""
    return " ".join(
        f.fact.partition(".")[2]
        for f in findings
        if f.host == host and f.kind == "environment"
    )


def _chosen_columns(result: ClusterResult, facts: dict[str, Facts],
                    all_columns: bool) -> list[Column]:
    if all_columns:
        return list(COLUMNS)
    named = {f.fact for f in result.findings}

    def relevant(column: Column) -> bool:
        if any(fact.startswith(column.facts) for fact in named if fact):
            return True
        return not column.noisy and len({column.value(f) for f in facts.values()}) > 1

    return [column for column in COLUMNS if relevant(column)]


def table_rows(result: ClusterResult,
               all_columns: bool = False) -> tuple[list[str], list[list[str]]]:
    """Header and rows (plain strings): bad nodes one by one, the healthy rest in one row."""
    answers = {node.host: node for node in result.nodes}
    facts = {h: node_facts(a.payload) for h, a in answers.items() if a.state == "ok"}
    columns = _chosen_columns(result, facts, all_columns)
    findings = result.findings
    show_env = all_columns or any(f.kind == "environment" for f in findings)
    header = ["node", "state", *(c.header for c in columns)] + (["env"] if show_env
                                                                 else [])
    bad = set(result.bad_nodes)

    def row(label: str, state: str, node_facts_: Facts | None, host: str | None) -> list[str]:
        cells = [c.value(node_facts_) if node_facts_ else "—" for c in columns]
        env = [_env_cell(host, findings) if host else ""] if show_env else []
        return [label, state, *(cell or "—" for cell in cells), *env]

    rows: list[list[str]] = []
    healthy = [h for h in answers if h not in bad]
    for host, answer in answers.items():
        if host in bad or all_columns:
            state = "bad" if host in bad and answer.state == "ok" else _STATE_TEXT.get(
                answer.state, answer.state)
            rows.append(row(host, state, facts.get(host), host))
    if healthy and not all_columns:
        typical = _typical(columns, [facts[h] for h in healthy if h in facts])
        label = f"{compress(healthy)} ({len(healthy)})"
        rows.append([label, "ok", *(v or "—" for v in typical), *([""] if show_env else [])])
    return header, rows


def _typical(columns: list[Column], facts: list[Facts]) -> list[str]:
    out = []
    for column in columns:
        counts = Counter(column.value(f) for f in facts)
        out.append(counts.most_common(1)[0][0] if counts else "")
    return out


def value_text(key: str) -> str:
    """A split's group key (the JSON of a value) as people read it."""
    try:
        value = json.loads(key)
    except ValueError:
        return key
    return "unset" if value in ("", None) else str(value)
