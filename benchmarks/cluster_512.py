"""Aggregating 512 simulated nodes: bounded time and memory, and how it scales from 16.

Simulates what `srun --label` returns from N nodes (each node's `trainmedic probe --json`,
indented, one labelled line at a time, a few faulty nodes), then times the whole local side:
attributing the output to nodes, comparing them, and rendering the table. Prints the wall time
and peak Python memory for 16 and 512 nodes, and the ratio of the 512-node time to the 16-node
time scaled linearly (x32): about 1.0 means linear, well above means something quadratic.

Run: .venv/bin/python benchmarks/cluster_512.py
"""

from __future__ import annotations

import copy
import json
import sys
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from trainmedic.cluster.aggregate import aggregate  # noqa: E402
from trainmedic.cluster.fanout import FanoutRun, parse_srun_output  # noqa: E402
from trainmedic.commands.probe_nodes import render_text  # noqa: E402

FIXTURE = ROOT / "tests" / "fixtures" / "cluster" / "healthy-node.json"
REPEATS = 5


def node_payload(base: dict, host: str, index: int) -> dict:
    payload = copy.deepcopy(base)
    payload["host"] = host
    facts = {p["name"]: p["facts"] for p in payload["probes"]}
    facts["gpu"]["max_memory_used_mib"] = 52000.0 + (index % 7) * 300  # realistic spread
    if index % 97 == 5:
        facts["gpu"].update(count=7, missing=1)
    if index % 131 == 7:
        facts["versions"]["nccl"] = "2.18.3"
    if index % 173 == 9:
        facts["env"]["ib_disabled"] = True
    return payload


def srun_stdout(nodes: list[str], base: dict) -> str:
    width = len(str(len(nodes) - 1))
    lines = []
    for task, host in enumerate(nodes):
        text = json.dumps(node_payload(base, host, task), indent=2)
        lines.extend(f"{task:>{width}}: {line}" for line in text.splitlines())
    return "\n".join(lines) + "\n"


def measure(count: int, base: dict) -> tuple[float, float, int]:
    nodes = [f"gpu{i:04d}" for i in range(count)]
    stdout = srun_stdout(nodes, base)
    best = float("inf")
    for _ in range(REPEATS):
        started = time.perf_counter()
        answers = parse_srun_output(nodes, stdout, "", timed_out=False, timeout=60,
                                    returncode=0, duration=1.0)
        result = aggregate(FanoutRun("srun", nodes, answers, [], 1.0), "bench")
        render_text(result, width=80)
        best = min(best, time.perf_counter() - started)
    tracemalloc.start()
    answers = parse_srun_output(nodes, stdout, "", timed_out=False, timeout=60, returncode=0,
                                duration=1.0)
    result = aggregate(FanoutRun("srun", nodes, answers, [], 1.0), "bench")
    render_text(result, width=80)
    _current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return best, peak / 2**20, len(result.bad_nodes)


def main() -> int:
    base = json.loads(FIXTURE.read_text().split("\n", 1)[1])
    render_text(aggregate(FanoutRun("srun", [], [], [], 0.0)), width=80)  # warm the imports
    t16, m16, bad16 = measure(16, base)
    t512, m512, bad512 = measure(512, base)
    print(f" 16 nodes: {t16 * 1000:8.1f} ms  peak {m16:6.1f} MiB  ({bad16} bad)")
    print(f"512 nodes: {t512 * 1000:8.1f} ms  peak {m512:6.1f} MiB  ({bad512} bad)")
    ratio = t512 / (t16 * 32)
    print(f"ratio vs 16 nodes scaled x32: {ratio:.2f} (1.0 = linear)")
    print(f"input: {len(srun_stdout([f'gpu{i:04d}' for i in range(512)], base)) / 2**20:.1f} "
          "MiB of srun output")
    return 0


if __name__ == "__main__":
    sys.exit(main())
