"""Triage accuracy on the public incident corpus (tests/corpus): by area, tune vs holdout.

For each real case, the top finding of `triage` on its excerpt is compared with the case's
expected `tree#node`: tree-level (the right tree), node-level (the right node, over the cases
whose expected node exists), and for the healthy logs the false-alarm rate (any finding at all).
Cases whose tree is not in the forest yet are counted as pending, by area. Groups: `tune` (the
signatures were written against it), `holdout` (batch 1, never read while tuning) and `holdout-2`
(batch 2: collected later, run blind once, then reported apart). The target: >= 95% tree-level,
>= 80% node-level, 0 false alarms.

    python benchmarks/triage_accuracy.py [--trees DIR] [--misses]

`--misses` lists the tune cases that miss; holdout cases are only ever counted.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests" / "corpus"))

from corpus import Score, judge, load_cases, pending  # noqa: E402

FLOOR_TREE, FLOOR_NODE = 0.95, 0.80


def evaluate(trees: list[str]) -> tuple[dict[tuple[str, str], Score], list, float]:
    from trainmedic.trees.forest import load_forest
    from trainmedic.triage import triage_text

    forest = load_forest(trees)
    nodes = {tid: set(t.nodes) for tid, t in forest.trees.items()}
    cases = load_cases()
    scores: dict[tuple[str, str], Score] = defaultdict(Score)
    t0 = time.perf_counter()
    for case in cases:
        if not case.healthy and case.tree not in nodes:
            continue
        report = triage_text(case.excerpt, name=case.name, trees=tuple(trees))
        score = judge(case, [f.link for f in report.findings], nodes)
        if score is not None:
            scores[(case.group, case.area)].add(score)
    return scores, pending(cases, nodes), time.perf_counter() - t0


def _pct(hits: int, total: int) -> str:
    return f"{hits:3d}/{total:<3d} {100 * hits / total:5.1f}%" if total else "      -      "


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trees", action="append", default=[], metavar="DIR")
    ap.add_argument("--misses", action="store_true", help="list the tune cases that miss")
    args = ap.parse_args()
    scores, waiting, seconds = evaluate(args.trees)
    print(f"{'split':9} {'area':15} {'tree-level':>14} {'node-level':>14}")
    totals: dict[str, Score] = defaultdict(Score)
    for (split, area), s in sorted(scores.items()):
        totals[split].add(s)
        totals["all"].add(s)
        if area == "healthy":
            print(f"{split:9} {area:15} false alarms {s.false_alarms}/{s.healthy}")
            continue
        print(f"{split:9} {area:15} {_pct(s.tree_hits, s.cases):>14} "
              f"{_pct(s.node_hits, s.node_cases):>14}")
    totals["batch 1"].add(totals["tune"])
    totals["batch 1"].add(totals["holdout"])
    print()
    for split in ("tune", "holdout", "holdout-2", "batch 1", "all"):
        s = totals[split]
        print(f"{split:9} {'TOTAL':15} {_pct(s.tree_hits, s.cases):>14} "
              f"{_pct(s.node_hits, s.node_cases):>14}   false alarms "
              f"{s.false_alarms}/{s.healthy}")
    by_area: dict[str, int] = defaultdict(int)
    for case in waiting:
        by_area[case.tree or "?"] += 1
    if waiting:
        print(f"\npending (tree not in the forest yet): {len(waiting)} cases: "
              + ", ".join(f"{a} {n}" for a, n in sorted(by_area.items())))
    for name in ("batch 1", "all"):
        s = totals[name]
        ok = (s.tree_rate >= FLOOR_TREE and s.node_rate >= FLOOR_NODE and s.false_alarms == 0)
        print(f"floor on {name:7} (>= {FLOOR_TREE:.0%} tree, >= {FLOOR_NODE:.0%} node, "
              f"0 false alarms): {'OK' if ok else 'MISSED'}")
    print(f"({seconds:.1f} s)")
    if args.misses:
        print("\ntune misses:")
        for (split, _area), sc in sorted(scores.items()):
            if split == "tune":
                for miss in sc.misses:
                    print("  " + miss)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
