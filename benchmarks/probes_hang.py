"""Ten probes of which three hang: the set must finish in about one timeout, not three.

Two kinds of hang are measured: an external program that never exits (killed with its process
group at the timeout) and a probe thread stuck in Python that never returns (abandoned at its
deadline). Reference: the single per-probe timeout. Prints wall time / timeout; budget <= ~1.3.
Run: .venv/bin/python benchmarks/probes_hang.py
"""

from __future__ import annotations

import os
import tempfile
import threading
import time
from pathlib import Path

from trainmedic.probes.base import Budget, ProbeContext, ProbeResult
from trainmedic.probes.registry import ProbeSpec
from trainmedic.probes.runner import run_specs
from trainmedic.probes.subproc import run_cmd

TIMEOUT = 2.0
NEVER = threading.Event()


def quick(i: int) -> ProbeSpec:
    def probe(budget: Budget, _context: ProbeContext) -> ProbeResult:
        res = run_cmd(["hangbench-quick"], budget.remaining())
        return ProbeResult(f"quick{i}", "ok" if res.ok else "fail", res.stdout.strip())

    return ProbeSpec(f"quick{i}", "finishes at once", TIMEOUT, {}, func=probe)


def hanging_program(i: int) -> ProbeSpec:
    def probe(budget: Budget, _context: ProbeContext) -> ProbeResult:
        res = run_cmd(["hangbench-sleep"], budget.remaining())
        return ProbeResult(f"hang{i}", "unavailable", res.error)

    return ProbeSpec(f"hang{i}", "program never exits", TIMEOUT, {}, func=probe)


def stuck_thread(i: int) -> ProbeSpec:
    def probe(budget: Budget, _context: ProbeContext) -> ProbeResult:
        NEVER.wait()  # ignores its budget entirely
        return ProbeResult(f"stuck{i}", "ok", "never")

    return ProbeSpec(f"stuck{i}", "thread never returns", TIMEOUT, {}, func=probe)


def measure(specs: list[ProbeSpec]) -> tuple[float, list[ProbeResult]]:
    start = time.monotonic()
    results = run_specs(specs)
    return time.monotonic() - start, results


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for name, body in (("hangbench-quick", "echo fine"), ("hangbench-sleep", "exec sleep 600")):
            path = folder / name
            path.write_text(f"#!/bin/sh\n{body}\n")
            path.chmod(0o755)
        os.environ["PATH"] = f"{folder}{os.pathsep}{os.environ.get('PATH', '')}"

        cases = {
            "3 hanging programs": [*(quick(i) for i in range(7)),
                                   *(hanging_program(i) for i in range(3))],
            "3 stuck threads": [*(quick(i) for i in range(7)),
                                *(stuck_thread(i) for i in range(3))],
        }
        worst = 0.0
        for label, specs in cases.items():
            specs = specs[::2] + specs[1::2]  # interleave hangs among quick probes
            wall, results = measure(specs)
            hung = sum(r.status in ("unavailable", "unknown") for r in results)
            ok = sum(r.status == "ok" for r in results)
            ratio = wall / TIMEOUT
            worst = max(worst, ratio)
            print(f"{label}: 10 probes, {ok} ok, {hung} timed out; wall {wall:.2f}s "
                  f"vs single timeout {TIMEOUT:.1f}s -> ratio {ratio:.2f} "
                  f"(serial would be {3 * TIMEOUT / TIMEOUT:.1f})")
        print(f"probes_hang: worst ratio wall/timeout = {worst:.2f} (budget: about 1, <= 1.3)")


if __name__ == "__main__":
    main()
