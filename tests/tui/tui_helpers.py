"""Helpers shared by the TUI tests: the app on the fixture trees, stub and hanging probes."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from trainmedic.probes.base import ProbeResult
from trainmedic.trees import load_forest
from trainmedic.tui.app import TrainmedicApp

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "walk"


def fixture_forest():
    forest = load_forest([FIXTURES], builtin=False)
    assert not forest.errors, forest.errors
    return forest


def gpu_full(_names=None, _context=None):
    """A stub probe runner: one GPU nearly full (suggests answer 3 of mem#when)."""
    return [ProbeResult("gpu", "warn", "GPU 3 at 99 % memory",
                        facts={"max_memory_fraction": 0.99},
                        evidence={"max_memory_fraction": "GPU 3: 79.4 of 80.0 GiB used"})]


def make_app(**kwargs) -> TrainmedicApp:
    """The app on the fixture trees; probes are on only with a stand-in runner."""
    kwargs.setdefault("probes", "probe_runner" in kwargs)
    return TrainmedicApp(fixture_forest(), **kwargs)


class HangingProbes:
    """A probe runner that blocks until released: the UI must keep answering meanwhile."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.calls: list[list[str] | None] = []

    def __call__(self, names, _context=None):
        self.calls.append(names)
        self.release.wait(30)
        return gpu_full(names)


def run(coro):
    return asyncio.run(coro)


# -- cluster --------------------------------------------------------------------------------
CLUSTER_FIXTURES = FIXTURES.parent / "cluster"
SWEEP_TIME = "2026-11-29T08:00:00+00:00"


def node_payload(host: str, **changes: dict) -> dict:
    """tests/fixtures/cluster/healthy-node.json (first line: its provenance) for one host,
    with some facts changed: node_payload("n1", gpu={"count": 7})."""
    import copy
    import json

    text = (CLUSTER_FIXTURES / "healthy-node.json").read_text().split("\n", 1)[1]
    payload = copy.deepcopy(json.loads(text))
    payload["host"] = host
    for probe in payload["probes"]:
        key = probe["name"].replace("-", "_")
        if key in changes:
            probe["facts"].update(changes[key])
    return payload


def cluster_run(nodes: int = 16, bad: str = "node07"):
    """A fan-out of `nodes` healthy nodes except `bad`: 7 of 8 GPUs and Xid 79 in dmesg."""
    from trainmedic.cluster.fanout import FanoutRun, NodeAnswer

    hosts = [f"node{i:02d}" for i in range(1, nodes + 1)]
    answers = []
    for host in hosts:
        if host == bad:
            payload = node_payload(host, gpu={"count": 7, "missing": 1},
                                   kernel_xid={"count": 1, "codes": [79], "fatal": True,
                                               "fallen_off_bus": True})
        else:
            payload = node_payload(host)
        answers.append(NodeAnswer(host, "ok", payload, "", 0.8))
    return FanoutRun("srun", hosts, answers, [], 4.2)


def save_cluster_result(nodes: int = 16, bad: str = "node07", time: str = SWEEP_TIME):
    """Aggregate `cluster_run` as the CLI does and save it as the last result."""
    from trainmedic.cluster.aggregate import aggregate
    from trainmedic.cluster.store import save_last_result

    result = aggregate(cluster_run(nodes, bad), f"node[01-{nodes:02d}]")
    result.time = time
    save_last_result(result)
    return result


def screen_text(app) -> list[str]:
    """The screen as plain text lines (from the SVG screenshot), to check what is visible."""
    import html
    import re
    from collections import defaultdict

    rows: dict[float, list[tuple[float, str]]] = defaultdict(list)
    pattern = r'<text class="[^"]*" x="([\d.]+)" y="([\d.]+)"[^>]*>(.*?)</text>'
    for m in re.finditer(pattern, app.export_screenshot()):
        text = html.unescape(re.sub(r"<[^>]+>", "", m.group(3)))
        rows[float(m.group(2))].append((float(m.group(1)), text))
    lines = []
    for y in sorted(rows):
        line = ""
        for x, text in sorted(rows[y]):
            line = line.ljust(round(x / 12.2)) + text
        lines.append(line.replace("\xa0", " ").rstrip())
    return lines
