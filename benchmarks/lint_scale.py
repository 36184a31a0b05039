"""Lint speed: how time grows with forest size, and `trainmedic lint` against its imports.

Prints (1) lint time for generated forests of 1,250 to 10,000 nodes and the time per node, which
must stay about flat (near-linear growth); (2) `trainmedic lint` of the built-in trees against
`python -c "import yaml, networkx"`, medians of interleaved runs (see `_timing.py`), in three
states of its caches:

- checks run (the budgeted one, 1.3x): tree files parsed before (the per-file parse cache is
  warm), no remembered result, so every check runs. This is lint after any change to a tree or to
  trainmedic: the state whose cost the budget is about.
- nothing cached (TRAINMEDIC_NO_CACHE=1): every file parsed too, as on the first run after an
  install or upgrade.
- result remembered: unchanged trees and code, as a pre-commit hook or a re-run of CI sees them;
  it checks nothing, so it cannot stand for lint's cost, and is printed for information.

Exit 1 when the budgeted ratio (CPU time, the steadier of the two on a shared machine; the wall
ratio is printed beside it) is over 1.3.

    python benchmarks/lint_scale.py [--runs 15]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _timing import Case, interleaved, program_env, trainmedic

from trainmedic.trees.forest import load_forest
from trainmedic.trees.lint import lint_forest

BUDGET = 1.30  # DESIGN.md: lint of all built-in trees within 1.3x of importing yaml and networkx


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


def main() -> int:
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
    with tempfile.TemporaryDirectory() as tmp:
        env = program_env(Path(tmp))
        results = Path(tmp) / "cache" / "trainmedic" / "lint" / "results.json"

        def forget_result() -> None:
            results.unlink(missing_ok=True)

        lint = trainmedic("lint")
        times = interleaved({
            "reference": Case([sys.executable, "-c", "import yaml, networkx"]),
            "checks run": Case(lint, before=forget_result),
            "nothing cached": Case(lint, {"TRAINMEDIC_NO_CACHE": "1"}),
            "result remembered": Case(lint),
        }, args.runs, env)
    reference = times["reference"]
    print(f"\nmedians of {args.runs} interleaved runs")
    print(f"python -c 'import yaml, networkx':       {reference.ms()}")
    for name in ("checks run", "nothing cached", "result remembered"):
        t = times[name]
        print(f"trainmedic lint, {name + ':':19s}  {t.ms()}   ratio {t.cpu / reference.cpu:.2f}x "
              f"CPU, {t.wall / reference.wall:.2f}x wall")
    ratio = times["checks run"].cpu / reference.cpu
    print(f"budget: checks run within {BUDGET:.2f}x of the reference: {ratio:.2f}x "
          f"({'ok' if ratio <= BUDGET else 'OVER'})")
    return 0 if ratio <= BUDGET else 1


if __name__ == "__main__":
    sys.exit(main())
