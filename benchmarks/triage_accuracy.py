"""Triage accuracy on the public incident corpus (tests/corpus): by area, tune vs holdout.

For each real case, the top finding of `triage` on its excerpt is compared with the case's
expected `tree#node`: tree-level (the right tree), node-level (the right node, over the cases
whose expected node exists), both over incidents only, and for the healthy logs, apart, the
false-alarm rate (any finding at all). "tree in top 3" counts the right tree among the first
three findings, what a user reads on one screen; it is reported, never a floor. A third table
splits the log-only incidents by the kind of the top finding (cause, symptom, guess, context,
none for a silent log): how far each kind of answer can be trusted, and how many misses are
logs only the user's `--symptom` can decide. Where a second labeller labelled cases blind
(`tests/corpus/second_labels.tsv`, batch 4), one line says how often the two labels agree and
how triage's node-level reads against each.
Cases whose tree is not in the forest yet are counted as pending, by area. Groups: `tune` (the
signatures were written against it), `holdout` (batch 1, never read while tuning), `tune-2`
(batch 2: collected later, run blind once, then opened for tuning) and any later blind batch
(`holdout-3`, ...) as its own group. The target: >= 95% tree-level, >= 80% node-level, 0 false
alarms.

A second table, "with the reported symptom", runs each non-healthy case with `--symptom` set to
what its thread's author said they saw (`# reported:`, taken from the title), unless that is
`unknown` (then the log alone, as in the first table); healthy logs run without a symptom, so
their false alarms are the first table's.

    python benchmarks/triage_accuracy.py [--trees DIR] [--group G] [--log-only]
                                         [--misses [--symptom]]

`--misses` lists the tune cases (batch 2's included) that miss (log only; with `--symptom`, with
the reported symptom); holdout cases are only ever counted.
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

from corpus import Case, Score, judge, load_cases, pending, second_labels  # noqa: E402

FLOOR_TREE, FLOOR_NODE = 0.95, 0.80


Scores = dict[tuple[str, str], Score]
# (group, kind of the top finding) -> [incidents, right tree, right node]: how far to trust
# each kind of answer; `none` is a silent log (a quiet hang, a slow run: only --symptom helps)
Trust = dict[tuple[str, str], list[int]]


def reported_symptom(case) -> str | None:
    """The `--symptom` a case runs with in the second table: none for a healthy log or an
    author who did not say."""
    return None if case.healthy or case.reported == "unknown" else case.reported


def evaluate(trees: list[str], *, symptoms: bool = True, groups: tuple[str, ...] = (),
             trust: Trust | None = None,
             tops: dict[str, str | None] | None = None) -> tuple[Scores, Scores, list, float]:
    """Log-only scores and scores with the reported symptom, by (group, area); only the
    `groups` named, if any (tune alone while developing: the holdout groups run once)."""
    from trainmedic.trees.forest import load_forest
    from trainmedic.triage import triage_text

    forest = load_forest(trees)
    nodes = {tid: set(t.nodes) for tid, t in forest.trees.items()}
    cases = load_cases()
    scores: Scores = defaultdict(Score)
    said: Scores = defaultdict(Score)
    t0 = time.perf_counter()
    for case in cases:
        if (not case.healthy and case.tree not in nodes) or (groups and case.group not in groups):
            continue
        report = triage_text(case.excerpt, name=case.name, trees=tuple(trees))
        score = judge(case, [f.link for f in report.findings], nodes)
        if score is None:
            continue
        scores[(case.group, case.area)].add(score)
        if tops is not None and not case.healthy:
            tops[case.name] = report.findings[0].link if report.findings else None
        if trust is not None and not case.healthy:
            kind = report.findings[0].kind if report.findings else "none"
            row = trust.setdefault((case.group, kind), [0, 0, 0])
            row[0] += 1
            row[1] += score.tree_hits
            row[2] += score.node_hits
        if not symptoms:
            continue
        symptom = reported_symptom(case)
        if symptom is not None:
            report = triage_text(case.excerpt, name=case.name, trees=tuple(trees),
                                 symptom=symptom)
            score = judge(case, [f.link for f in report.findings], nodes)
            assert score is not None
        said[(case.group, case.area)].add(score)
    return scores, said, pending(cases, nodes), time.perf_counter() - t0


def _pct(hits: int, total: int) -> str:
    return f"{hits:3d}/{total:<3d} {100 * hits / total:5.1f}%" if total else "      -      "


def _groups(scores: Scores) -> list[str]:
    """tune, holdout, tune-2, holdout-3, ...: every group present, by batch."""
    found = {group for group, _area in scores}
    later = sorted((g for g in found if g.partition("-")[2].isdigit()),
                   key=lambda g: int(g.partition("-")[2]))
    return [g for g in ("tune", "holdout") if g in found] + later


def _table(title: str, scores: Scores) -> dict[str, Score]:
    print(title)
    print(f"{'split':9} {'area':15} {'tree-level':>14} {'node-level':>14} {'tree in top 3':>14}")
    totals: dict[str, Score] = defaultdict(Score)
    for (split, area), s in sorted(scores.items()):
        totals[split].add(s)
        totals["all"].add(s)
        if area == "healthy":
            print(f"{split:9} {area:15} false alarms {s.false_alarms}/{s.healthy}")
            continue
        print(f"{split:9} {area:15} {_pct(s.tree_hits, s.cases):>14} "
              f"{_pct(s.node_hits, s.node_cases):>14} {_pct(s.tree_near, s.cases):>14}")
    totals["batch 1"].add(totals["tune"])
    totals["batch 1"].add(totals["holdout"])
    print()
    for split in (*_groups(scores), "batch 1", "all"):
        s = totals[split]
        print(f"{split:9} {'TOTAL':15} {_pct(s.tree_hits, s.cases):>14} "
              f"{_pct(s.node_hits, s.node_cases):>14} {_pct(s.tree_near, s.cases):>14}"
              f"   false alarms {s.false_alarms}/{s.healthy}")
    return totals


def _trust_table(trust: Trust) -> None:
    print("\nlog only, by the kind of the top finding (incidents; node-level over all of them)")
    kinds = ("cause", "symptom", "guess", "context", "none")
    for group in sorted({g for g, _k in trust}, key=lambda g: (g.partition("-")[2], g)):
        cells = []
        for kind in kinds:
            n, tree, node = trust.get((group, kind), [0, 0, 0])
            if n:
                cells.append(f"{kind} {n}: tree {100 * tree / n:3.0f}% node {100 * node / n:3.0f}%")
        print(f"{group:9} " + "; ".join(cells))


def _second_label_table(tops: dict[str, str | None]) -> None:
    """Where a second labeller labelled the cases blind (tests/corpus/second_labels.tsv): how
    often the two labels agree, and triage's top finding against each and against either; one
    line per group (each batch was labelled twice by different people)."""
    cases = {c.name: c for c in load_cases()}
    by_group: dict[str, list[tuple[Case, str]]] = defaultdict(list)
    for name, label in second_labels().items():
        if name in tops:
            by_group[cases[name].group].append((cases[name], label))
    for group, pairs in sorted(by_group.items(), key=lambda kv: (kv[0].partition("-")[2], kv[0])):
        _second_label_line(group, pairs, tops)


def _second_label_line(group: str, pairs: list[tuple[Case, str]],
                       tops: dict[str, str | None]) -> None:
    n = len(pairs)
    same_tree = sum(c.tree == b.partition("#")[0] for c, b in pairs)
    named = [(c, b) for c, b in pairs if c.node is not None and not b.endswith("#?")]
    same_node = sum(c.expect == b for c, b in named)

    def hits(label_of) -> tuple[int, int]:
        scored = [(c, lab) for c, b in pairs for lab in [label_of(c, b)] if lab]
        return sum(tops[c.name] in lab for c, lab in scored), len(scored)

    first = hits(lambda c, b: {c.expect} if c.node is not None else set())
    second = hits(lambda c, b: {b} if not b.endswith("#?") else set())
    either = hits(lambda c, b: {x for x in (c.expect, b) if not x.endswith("#?")})
    print(f"\n{group}: against a second, blind labeller ({n} incidents): the labels agree on "
          f"the tree {_pct(same_tree, n).strip()}, on the node "
          f"{_pct(same_node, len(named)).strip()} (where both name one); triage's node-level "
          f"against the first label {_pct(*first).strip()}, the second {_pct(*second).strip()}, "
          f"either {_pct(*either).strip()}")


def _compare(log_only: dict[str, Score], said: dict[str, Score], groups: list[str]) -> None:
    print("\nlog only -> with the reported symptom (tree-level, node-level)")
    for split in (*groups, "batch 1", "all"):
        a, b = log_only[split], said[split]
        print(f"{split:9} tree {_pct(a.tree_hits, a.cases)} -> {_pct(b.tree_hits, b.cases)}   "
              f"node {_pct(a.node_hits, a.node_cases)} -> {_pct(b.node_hits, b.node_cases)}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trees", action="append", default=[], metavar="DIR")
    ap.add_argument("--misses", action="store_true", help="list the tune cases that miss")
    ap.add_argument("--symptom", action="store_true",
                    help="with --misses: the tune misses with the reported symptom")
    ap.add_argument("--log-only", action="store_true",
                    help="only the first table (no run with the reported symptom)")
    ap.add_argument("--group", action="append", default=[], metavar="GROUP",
                    help="only this group (tune, holdout, tune-2, holdout-3, ...); repeatable")
    args = ap.parse_args()
    trust: Trust = {}
    tops: dict[str, str | None] = {}
    scores, said, waiting, seconds = evaluate(args.trees, symptoms=not args.log_only,
                                              groups=tuple(args.group), trust=trust, tops=tops)
    totals = _table("log only", scores)
    _trust_table(trust)
    _second_label_table(tops)
    by_area: dict[str, int] = defaultdict(int)
    for case in waiting:
        by_area[case.tree or "?"] += 1
    if waiting:
        print(f"\npending (tree not in the forest yet): {len(waiting)} cases: "
              + ", ".join(f"{a} {n}" for a, n in sorted(by_area.items())))
    for name in ("batch 1", "all"):
        s = totals[name]
        if not s.cases:
            continue  # not run (--group): an empty group passes nothing
        ok = (s.tree_rate >= FLOOR_TREE and s.node_rate >= FLOOR_NODE and s.false_alarms == 0)
        print(f"floor on {name:7} (>= {FLOOR_TREE:.0%} tree, >= {FLOOR_NODE:.0%} node, "
              f"0 false alarms): {'OK' if ok else 'MISSED'}")
    if said:
        print()
        said_totals = _table("with the reported symptom (--symptom from each case's `reported`; "
                             "unknown and healthy: log only)", said)
        _compare(totals, said_totals, _groups(scores))
    print(f"({seconds:.1f} s)")
    if args.misses:
        which = said if args.symptom else scores
        print(f"\ntune misses{' with the reported symptom' if args.symptom else ''}:")
        for (split, _area), sc in sorted(which.items()):
            if split.partition("-")[0] == "tune":
                for miss in sc.misses:
                    print("  " + miss)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
