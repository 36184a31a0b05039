"""Timing commands against a reference on a shared, noisy machine (used by the start-up benchmarks).

Every command runs in turn, round after round (interleaved), so a burst of load elsewhere hits
the candidate and its reference alike; each one's median wall time and median CPU time (user +
system of the child) are kept. On an idle machine the wall time is the CPU time plus a few ms; on
a loaded one it also counts waiting for a core, which the CPU time leaves out. The budgets are
ratios, and both numbers are printed.

trainmedic runs as its installed console script does (`from trainmedic.cli import main`), with
byte-code caching on, in a temporary PYTHONPYCACHEPREFIX, as pip leaves an install: a checkout
run under PYTHONDONTWRITEBYTECODE would time the compiler, not the program. The cache and state
folders are temporary too, so nothing of the user's is read or changed.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

CONSOLE_SCRIPT = "import sys; from trainmedic.cli import main; sys.exit(main())"


def trainmedic(*args: str) -> list[str]:
    """The command line that runs `trainmedic ARGS` as the console script does."""
    return [sys.executable, "-c", CONSOLE_SCRIPT, *args]


def program_env(folder: Path) -> dict[str, str]:
    """The environment of an installed program: byte-code cached, caches of its own."""
    env = {**os.environ, "XDG_CACHE_HOME": str(folder / "cache"),
           "XDG_STATE_HOME": str(folder / "state"),
           "PYTHONPYCACHEPREFIX": str(folder / "pycache")}
    for name in ("PYTHONDONTWRITEBYTECODE", "TRAINMEDIC_NO_CACHE"):
        env.pop(name, None)
    return env


@dataclass
class Case:
    """One command to time; `before` runs ahead of each of its runs, untimed."""

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)  # added to the common environment
    before: Callable[[], None] | None = None


@dataclass
class Timing:
    wall: float  # median seconds
    cpu: float

    def ms(self) -> str:
        return f"{self.wall * 1000:6.1f} ms wall, {self.cpu * 1000:6.1f} ms CPU"


def interleaved(cases: dict[str, Case], runs: int, env: dict[str, str]) -> dict[str, Timing]:
    """Median wall and CPU time of every case over `runs` interleaved rounds, after one untimed
    round that fills the byte-code cache and shows that each command works (exit 0 or 1: a
    check that found problems still did all its work)."""
    for name, case in cases.items():
        done = subprocess.run(case.argv, check=False, capture_output=True, text=True,
                              env={**env, **case.env}, timeout=300)
        if done.returncode not in (0, 1):
            raise SystemExit(f"{name}: exit {done.returncode}: {done.stderr[-500:]}")
    walls: dict[str, list[float]] = {name: [] for name in cases}
    cpus: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(runs):
        for name, case in cases.items():
            wall, cpu = _run(case, env)
            walls[name].append(wall)
            cpus[name].append(cpu)
    return {name: Timing(statistics.median(walls[name]), statistics.median(cpus[name]))
            for name in cases}


def _run(case: Case, env: dict[str, str]) -> tuple[float, float]:
    if case.before is not None:
        case.before()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(case.argv, check=False, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, env={**env, **case.env}, timeout=300)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
