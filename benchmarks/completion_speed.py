"""How long a Tab takes: `trainmedic __complete KIND PREFIX`, and `trainmedic completion bash`.

Budget (issue 19): under 100 ms a call, without Textual. For each call it prints the median wall
time and the median CPU time (user + system) over several runs, with a warm index as at every
Tab after the first, and a bare Python start for reference. The verdict reads CPU time, the
time the program itself needs: on an idle machine the wall time is that plus a few ms, while on a
shared, loaded one the wall time also counts waiting for a free core (compare the bare start's
two numbers to see how loaded the machine is). Exit 1 if a call is over the budget.

It runs trainmedic as its installed console script does (`from trainmedic.cli import main`), with
byte-code caching on (in a temporary PYTHONPYCACHEPREFIX) as pip leaves an install: a checkout
run under PYTHONDONTWRITEBYTECODE would time the compiler, not the program.

    python benchmarks/completion_speed.py [--runs 15]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

BUDGET_S = 0.100
CONSOLE_SCRIPT = "import sys; from trainmedic.cli import main; sys.exit(main())"
CASES = [
    ("__complete trees ''", ["__complete", "trees", ""]),
    ("__complete targets oom#", ["__complete", "targets", "oom#"]),
    ("__complete probes ''", ["__complete", "probes", ""]),
    ("__complete walks ''", ["__complete", "walks", ""]),
    ("completion bash", ["completion", "bash"]),
]


def medians(argv: list[str], runs: int, env: dict[str, str]) -> tuple[float, float]:
    """Median wall time and median CPU time (user + system) of running argv."""
    walls, cpus = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, env=env, timeout=60)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(walls), statistics.median(cpus)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "XDG_CACHE_HOME": os.path.join(tmp, "cache"),
               "XDG_STATE_HOME": os.path.join(tmp, "state"),
               "PYTHONPYCACHEPREFIX": os.path.join(tmp, "pycache")}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        trainmedic = [sys.executable, "-c", CONSOLE_SCRIPT]
        for _name, argv in CASES:  # the first Tab builds the index; byte code gets written
            subprocess.run([*trainmedic, *argv], check=True, env=env, stdout=subprocess.DEVNULL)
        wall, cpu = medians([sys.executable, "-c", "pass"], args.runs, env)
        print(f"{'':<36}{'wall':>9}{'cpu':>9}")
        print(f"{'python -c pass':<36}{wall * 1000:7.1f}ms{cpu * 1000:7.1f}ms")
        worst = 0.0
        for name, argv in CASES:
            wall, cpu = medians([*trainmedic, *argv], args.runs, env)
            worst = max(worst, cpu)
            print(f"{'trainmedic ' + name:<36}{wall * 1000:7.1f}ms{cpu * 1000:7.1f}ms")
    verdict = "within" if worst <= BUDGET_S else "OVER"
    print(f"slowest {worst * 1000:.0f} ms of CPU: {verdict} the {BUDGET_S * 1000:.0f} ms budget")
    return 0 if worst <= BUDGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
