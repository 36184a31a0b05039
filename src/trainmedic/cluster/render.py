"""The cluster result as a terminal table: node x key facts, only what differs by default.

Healthy nodes collapse into one row under their compressed host list, so 512 nodes still fit a
screen; every bad node gets its own row and a one-line verdict under the table. Rich is imported
only here, when something is printed.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from trainmedic.cluster.aggregate import node_facts
from trainmedic.cluster.hostlist import compress

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


def _env_cell(host: str, findings: list[dict]) -> str:
    """Names of the variables that differ on this node (values are in its verdict line)."""
    return " ".join(
        f["fact"].partition(".")[2]
        for f in findings
        if f["host"] == host and f["kind"] == "environment"
    )


def _chosen_columns(result: dict, facts: dict[str, Facts], all_columns: bool) -> list[Column]:
    if all_columns:
        return list(COLUMNS)
    named = {f.get("fact", "") for f in result["findings"]}

    def relevant(column: Column) -> bool:
        if any(fact.startswith(column.facts) for fact in named if fact):
            return True
        return not column.noisy and len({column.value(f) for f in facts.values()}) > 1

    return [column for column in COLUMNS if relevant(column)]


def table_rows(result: dict, all_columns: bool = False) -> tuple[list[str], list[list[str]]]:
    """Header and rows (plain strings): bad nodes one by one, the healthy rest in one row."""
    answers = {node["host"]: node for node in result["nodes"]}
    facts = {h: node_facts(a.get("result")) for h, a in answers.items() if a["state"] == "ok"}
    columns = _chosen_columns(result, facts, all_columns)
    findings = result["findings"]
    show_env = all_columns or any(f["kind"] == "environment" for f in findings)
    header = ["node", "state", *(c.header for c in columns)] + (["env"] if show_env
                                                                 else [])
    bad = set(result["bad_nodes"])

    def row(label: str, state: str, node_facts_: Facts | None, host: str | None) -> list[str]:
        cells = [c.value(node_facts_) if node_facts_ else "—" for c in columns]
        env = [_env_cell(host, findings) if host else ""] if show_env else []
        return [label, state, *(cell or "—" for cell in cells), *env]

    rows: list[list[str]] = []
    healthy = [h for h in answers if h not in bad]
    for host, answer in answers.items():
        if host in bad or all_columns:
            state = "bad" if host in bad and answer["state"] == "ok" else _STATE_TEXT.get(
                answer["state"], answer["state"])
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


def render_text(result: dict, *, all_columns: bool = False, width: int | None = None) -> str:
    """The table, the verdicts and the splits as the terminal shows them."""
    from rich import box
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    header, rows = table_rows(result, all_columns)
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, padding=(0, 1),
                  collapse_padding=True)
    widest_node = max((len(cells[0]) for cells in rows), default=4)
    for i, name in enumerate(header):
        if i == 0:  # the node name is what people copy: never folded unless huge
            table.add_column(name, no_wrap=True, min_width=min(widest_node, 28),
                             overflow="fold")
        elif name == "env":
            table.add_column(name, overflow="fold")
        else:  # a cut value must look cut: "2.21…", never a plausible "2.21"
            table.add_column(name, no_wrap=True, overflow="ellipsis")
    for cells in rows:
        style = None if cells[1] == "ok" else "bold red"
        # values come from the nodes: a "[/]" in one must print, not raise a MarkupError
        table.add_row(*(Text(cell) for cell in cells), style=style)
    if all_columns:  # everything was asked for: let the table take its natural width
        width = max(width or 0, 240)
    console = Console(width=width, record=True, highlight=False, soft_wrap=False,
                      force_terminal=None)
    with console.capture() as capture:
        answered, total = result["answered"], result["node_count"]
        console.print(f"{total} nodes via {result['method']}: {answered} answered, "
                      f"{len(result['bad_nodes'])} bad ({result['wall_s']:.1f}s)")
        console.print(table)
        if result["verdicts"]:
            console.print("Bad nodes:", style="bold")
            for line in result["verdicts"]:  # one line each, unwrapped: people grep them
                console.print(f"  {line}", markup=False, soft_wrap=True)
        for split in result["splits"]:
            groups = "; ".join(f"{_value(k)} on {hosts}" for k, hosts in split["groups"].items())
            console.print(f"Inconsistent, no majority: {split['fact']}: {groups}", markup=False,
                          soft_wrap=True)
        if not result["verdicts"] and not result["splits"]:
            console.print("All nodes agree; no faulty node found.")
    return "".join(line.rstrip() + "\n" for line in capture.get().splitlines())


def _value(key: str) -> str:
    try:
        value = json.loads(key)
    except ValueError:
        return key
    return "unset" if value in ("", None) else str(value)
