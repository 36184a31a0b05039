"""Run every benchmark, one after another, and print each one's ratio against its reference.

    python benchmarks/run_all.py            # the budgets of DESIGN.md, full size (minutes)
    python benchmarks/run_all.py --quick    # smaller inputs and fewer runs, for a smoke check

Each benchmark is its own script and can be run alone; this only sequences them (they would
disturb each other's timings if run together) and collects their closing lines.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

# script, full-size arguments, quick arguments, the budget it checks
BENCHMARKS = [
    ("lint_scale.py", [], ["--runs", "5"],
     "lint (every check run) within 1.3x of importing yaml+networkx; linear"),
    ("tui_startup.py", [], ["--runs", "7"], "first painted home within 1.15x of a minimal app"),
    ("triage_throughput.py", ["--size", "2G"], ["--size", "200M"], ">= 0.5x grep -E -c"),
    ("probes_hang.py", [], [], "all probes within about one timeout, however many hang"),
    ("cluster_512.py", [], [], "512 nodes aggregate in bounded time and memory"),
    ("memory_speed.py", [], ["--runs", "7"], "memory --json within a bare Python start + 50 ms"),
    ("hostile_input.py", [], ["--quick"], "1 MB line < 1 s, 2 GB line < 100 MiB, linear export"),
    ("memory_accuracy.py", [], [], "allocated model vs Megatron CI peaks: issue 17's floor"),
    ("completion_speed.py", [], ["--runs", "5"], "a Tab (`__complete`) under 100 ms"),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller inputs, fewer runs")
    args = parser.parse_args()
    failed = 0
    for script, full, quick, budget in BENCHMARKS:
        print(f"== {script}: {budget}", flush=True)
        start = time.perf_counter()
        result = subprocess.run([sys.executable, str(HERE / script), *(quick if args.quick
                                                                        else full)],
                                capture_output=True, text=True, check=False)
        output = (result.stdout + result.stderr).rstrip().splitlines()
        for line in output[-5:]:
            print(f"   {line}")
        print(f"   ({time.perf_counter() - start:.0f} s, exit {result.returncode})", flush=True)
        failed += result.returncode != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
