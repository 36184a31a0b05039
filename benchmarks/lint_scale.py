"""Lint speed: how time grows with forest size, and `trainmedic lint` against its imports.

Prints (1) lint time for generated forests of 1,250 to 10,000 nodes and the time per node, which
must stay about flat (near-linear growth); (2) the ratio of `trainmedic lint` on the built-in
trees to `python -c "import yaml, networkx"` (budget: 1.3x), medians over several runs.

    python benchmarks/lint_scale.py [--runs 15]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from trainmedic.trees.forest import load_forest
from trainmedic.trees.lint import lint_forest


def write_forest(folder: Path, nodes: int, per_tree: int = 250) -> None:
    """Binary-ish trees: each question has two answers; cross-tree links every few trees."""
    trees = max(1, nodes // per_tree)
    for t in range(trees):
        lines = [f"id: t{t}", f"title: Generated tree {t}", "summary: Generated for the benchmark.",
                 "start: n0", "nodes:"]
        questions = per_tree // 2
        for i in range(questions):
            lines += [f"  n{i}:", f"    question: Question {i} of tree {t}?", "    answers:"]
            for child in (2 * i + 1, 2 * i + 2):
                target = f"n{child}" if child < per_tree else f"f{child}"
                lines += [f"      - text: Answer leading to {target}", f"        goto: {target}"]
            if i == 0 and t + 1 < trees:
                lines += ["      - text: Into the next tree", f"        goto: t{t + 1}"]
        for i in range(questions, per_tree):
            lines += [f"  n{i}:", f"    fix: Fix {i}", "    why: Generated.", "    steps:",
                      "      - do: Run it.", f"        code: echo {i}"]
        for child in range(per_tree, 2 * questions + 1):
            lines += [f"  f{child}:", f"    fix: Fix {child}", "    why: Generated.", "    steps:",
                      "      - do: Run it.", f"        code: echo {child}"]
        (folder / f"t{t}.yaml").write_text("\n".join(lines) + "\n")


def time_lint(folder: Path, runs: int) -> tuple[float, int]:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        forest = load_forest([folder], builtin=False)
        problems = lint_forest(forest, {})
        samples.append(time.perf_counter() - start)
        assert not [p for p in problems if p.severity == "error"], problems[:3]
    return statistics.median(samples), sum(len(t.nodes) for t in forest.trees.values())


def time_commands(commands: dict[str, tuple[list[str], dict[str, str]]], runs: int
                  ) -> dict[str, float]:
    """Median wall time of each command, interleaved so machine noise hits all alike."""
    samples: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, (argv, env) in commands.items():
            start = time.perf_counter()
            subprocess.run(argv, check=False, capture_output=True, env={**os.environ, **env})
            samples[name].append(time.perf_counter() - start)
    return {name: statistics.median(times) for name, times in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    print("forest size   lint time   per node")
    base = None
    for size in (1250, 2500, 5000, 10000):
        with tempfile.TemporaryDirectory() as tmp:
            write_forest(Path(tmp), size)
            seconds, nodes = time_lint(Path(tmp), max(3, args.runs // 2))
        per_node = seconds / nodes * 1e6
        base = base or per_node
        print(f"{nodes:>11,}  {seconds * 1000:8.1f} ms  {per_node:6.1f} µs  "
              f"({per_node / base:.2f}x the smallest forest's cost per node)")
    lint = [sys.executable, "-m", "trainmedic", "lint"]
    subprocess.run(lint, check=False, capture_output=True)  # warm the parse cache once
    times = time_commands({
        "reference": ([sys.executable, "-c", "import yaml, networkx"], {}),
        "lint": (lint, {}),
        "lint, cache off": (lint, {"TRAINMEDIC_NO_CACHE": "1"}),
    }, args.runs)
    reference = times["reference"]
    print(f"\npython -c 'import yaml, networkx':     {reference * 1000:.0f} ms")
    print(f"trainmedic lint (built-in trees):      {times['lint'] * 1000:.0f} ms")
    print(f"trainmedic lint, parse cache off:      {times['lint, cache off'] * 1000:.0f} ms")
    print(f"ratio: {times['lint'] / reference:.2f}x (budget 1.30x); "
          f"cold parse: {times['lint, cache off'] / reference:.2f}x")


if __name__ == "__main__":
    main()
