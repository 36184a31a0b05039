"""Cross-validation of the never-silent guess's tree over the corpus's tune incidents only.

k folds (stratified by tree, fixed seeds): the word model is learned on k-1 folds
(`scripts/learn_words.py`'s text and counting) and measured on the held fold, for each way of
choosing the tree (`METHODS`: the signature words alone, as before; the learned words alone;
blends, always or gated on how many words of the error the model knows well). Measures, each
the mean over the folds (pooled hits/cases beside it):

- guess: the tree guessed from what the guess would read if no signature knew the log
  (`guess_input`: its last error line and frame), over the incidents that have one; guess-node:
  the tree and the node. The signature words were written from these very cases, so `sig` is
  flattered here; the learned model, held out, is not.
- guess-tail: the same over the held cases whose signature no other fold's case uses, with those
  signatures (and their words) left out: messages the tune data saw once, the closest thing here
  to the long tail of messages an unseen log brings, where the guess is what answers.
- e2e-all: triage's top finding (tree, node) on the whole excerpt with that guess plugged in.
  Signatures cover almost every tune case, so the guess rarely decides here.
- e2e-unseen: the same with the held fold's own signatures left out, as in guess-tail.

    PYTHONPATH=src python benchmarks/guess_cv.py [--folds 5] [--seed 0] [--repeats 1]
                                                 [--alpha A] [--method NAME ...] [--no-e2e]

Holdout cases are never read (their header is read to skip them).
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "tests" / "corpus"))

from learn_words import guess_input, learn, tune_incidents  # noqa: E402

from trainmedic.triage import signatures as signature_module  # noqa: E402
from trainmedic.triage.signatures import SignatureSet, best_of, forest_signatures  # noqa: E402
from trainmedic.triage.words import ALPHA  # noqa: E402

Choice = Callable[[dict[str, float], dict[str, float]], tuple[str | None, float]]


def sig_only(scores, _posterior):
    return best_of(scores)


def learned_only(_scores, posterior):
    return best_of(posterior)


def fallback(scores, posterior):
    """The signature words where they know a word; the learned words where they know none."""
    return best_of(scores) if scores else best_of(posterior)


def mix(weight: float) -> Choice:
    """(1 - weight) x the signature scores as shares + weight x the learned posterior."""
    def choose(scores, posterior):
        total = sum(scores.values())
        shares = {t: s / total for t, s in scores.items()} if total else {}
        both = {t: (1 - weight) * shares.get(t, 0.0) + weight * posterior.get(t, 0.0)
                for t in set(shares) | set(posterior)}
        tree, _ = best_of(both)
        return tree, scores.get(tree, 0.0) if tree else 0.0
    choose.__name__ = f"mix{weight:g}"
    return choose


# name -> (how the tree is chosen, whether the learned words may name a node in it, how many
# well-known words an error needs before the learned words join in: 0 always)
METHODS: dict[str, tuple[Choice, bool, int]] = {
    "sig": (sig_only, False, 0),  # before: the signature words alone, the tree's start
    "learned": (learned_only, True, 0),
    "fallback": (fallback, True, 0),
    **{f"mix{w:g}": (mix(w), True, 0) for w in (0.15, 0.25, 0.35, 0.5)},
    **{f"mix0.25-gate{k}": (mix(0.25), True, k) for k in (1, 2, 3, 4)},
    "shipped-nonode": (signature_module.combine, False, signature_module.LEARNED_MIN_WORDS),
    # what triage uses: LEARNED_WEIGHT, LEARNED_MIN_WORDS, NODE_MIN_SHARE
    "shipped": (signature_module.combine, True, signature_module.LEARNED_MIN_WORDS),
}


def folds_of(cases, k: int, seed: int) -> list[int]:
    """A fold per case, stratified by tree: each tree's cases shuffled, dealt round-robin."""
    rng = random.Random(seed)
    by_tree: dict[str, list[int]] = defaultdict(list)
    for i, case in enumerate(cases):
        by_tree[case.tree].append(i)
    fold = [0] * len(cases)
    start = 0
    for tree in sorted(by_tree):
        idx = by_tree[tree]
        rng.shuffle(idx)
        for j, i in enumerate(idx):
            fold[i] = (start + j) % k
        start += len(idx)  # the next tree's first case goes to the next fold
    return fold


def without(sigs: SignatureSet, drop: set[str]) -> SignatureSet:
    """`sigs` less the signatures `drop` names (their needles leave the guess's words too)."""
    n = len(sigs.signatures)
    keep = [i for i, s in enumerate(sigs.signatures) if s.id not in drop]
    index: dict[str, list] = {}
    for i in keep:
        for needle in sigs.signatures[i].needles:
            index.setdefault(needle, []).append(sigs.signatures[i])
    # compile_forest lists one wording entry per signature, in order, then the trees' own
    wording = tuple(sigs.wording[i] for i in keep) + sigs.wording[n:]
    return dataclasses.replace(sigs, signatures=tuple(sigs.signatures[i] for i in keep),
                               index=index, wording=wording)


def run_triage(text: str, name: str, sigs: SignatureSet):
    from trainmedic.triage import _finish
    from trainmedic.triage.scanner import Scanner
    from trainmedic.triage.sources import Source

    scanner = Scanner(use_grep=False, signatures=sigs)
    source = Source(name=name, data=text.encode("utf-8", "replace"))
    scanner.scan(source)
    return _finish(scanner, sources=[source])


def used_signatures(report) -> set[str]:
    out = set()
    for f in report.findings:
        out.add(f.signature)
        out.update(a["signature"] for a in f.details.get("also", ()))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeats", type=int, default=1,
                    help="run the k folds this many times, seeds seed, seed+1, ...")
    ap.add_argument("--alpha", type=float, default=ALPHA, help="the model's smoothing")
    ap.add_argument("--method", action="append", default=[], choices=sorted(METHODS))
    ap.add_argument("--no-e2e", action="store_true", help="the guess measures only")
    args = ap.parse_args()
    methods = {m: METHODS[m] for m in (args.method or METHODS)}
    t0 = time.perf_counter()
    base = dataclasses.replace(forest_signatures(), words=None)
    from trainmedic.trees.forest import load_forest

    nodes = {tid: set(t.nodes) for tid, t in load_forest([]).trees.items()}
    cases = tune_incidents(set(nodes))
    inputs = [guess_input(c.excerpt) for c in cases]
    derived = {s.id for s in base.derived.values()}
    used = [used_signatures(run_triage(c.excerpt, c.name, base)) - derived for c in cases]
    acc: dict[tuple[str, str], list[tuple[int, int]]] = defaultdict(list)  # per fold
    patched = ("combine", "NODE_MIN_SHARE", "LEARNED_MIN_WORDS")
    saved = {name: getattr(signature_module, name) for name in patched}
    runs = [(seed, f) for seed in range(args.seed, args.seed + args.repeats)
            for f in range(args.folds)]
    try:
        for seed, f in runs:
            fold = folds_of(cases, args.folds, seed)
            held = [i for i, g in enumerate(fold) if g == f]
            model = learn([c for c, g in zip(cases, fold, strict=True) if g != f],
                          alpha=args.alpha)
            drop = set().union(*(used[i] for i in held)) - set().union(
                *(used[i] for i, g in enumerate(fold) if g != f))
            tail = [i for i in held if used[i] & drop]  # their signature is theirs alone
            sigs = dataclasses.replace(base, words=model)
            unseen = dataclasses.replace(without(base, drop), words=model)
            for name, (choose, names_node, min_words) in methods.items():
                signature_module.combine = choose
                signature_module.LEARNED_MIN_WORDS = min_words
                signature_module.NODE_MIN_SHARE = (saved["NODE_MIN_SHARE"] if names_node
                                                   else float("inf"))
                for label, s, which in (("guess", sigs, held), ("guess-tail", unseen, tail)):
                    _guesses(acc, name, label, s, [i for i in which if inputs[i]], cases,
                             inputs, nodes)
                if args.no_e2e:
                    continue
                for label, s in (("e2e-all", sigs), ("e2e-unseen", unseen)):
                    _end_to_end(acc, name, label, s, held, cases, nodes)
            worded = sum(bool(inputs[i]) for i in held)
            print(f"seed {seed} fold {f}: {len(held)} held, {worded} with a guess input; "
                  f"{len(tail)} use {len(drop)} signatures no other fold uses", flush=True)
    finally:
        for name, value in saved.items():
            setattr(signature_module, name, value)
    measures = ["guess", "guess-node", "guess-tail", "guess-tail-node"] + (
        [] if args.no_e2e else
        ["e2e-all-tree", "e2e-all-node", "e2e-unseen-tree", "e2e-unseen-node"])
    print(f"\n{len(cases)} tune incidents, {sum(bool(x) for x in inputs)} with a guess input; "
          f"{args.folds} folds x {args.repeats} (seeds from {args.seed}), alpha {args.alpha:g}; "
          "mean over folds "
          "(pooled hits/cases in brackets)")
    print(f"{'method':15}" + "".join(f"{m:>20}" for m in measures))
    for name in methods:
        row = []
        for m in measures:
            per = acc[(name, m)]
            mean = _mean(per)
            hits, total = sum(h for h, _t in per), sum(t for _h, t in per)
            row.append(f"{100 * mean:5.1f}% ({hits:3d}/{total:3d})")
        print(f"{name:15}" + "".join(f"{r:>20}" for r in row))
    if args.repeats > 1:
        print("\nper seed: the mean over one seed's folds; mean +/- sample standard deviation "
              "over the seeds")
        print(f"{'method':15}" + "".join(f"{m:>20}" for m in measures))
        for name in methods:
            row = []
            for m in measures:
                per_seed = [_mean(acc[(name, m)][r * args.folds:(r + 1) * args.folds])
                            for r in range(args.repeats)]
                mean = statistics.fmean(per_seed)
                row.append(f"{100 * mean:5.1f}% +/- {100 * statistics.stdev(per_seed):3.1f}")
            print(f"{name:15}" + "".join(f"{r:>20}" for r in row))
    print(f"({time.perf_counter() - t0:.0f} s)")
    return 0


def _mean(per: list[tuple[int, int]]) -> float:
    """The mean rate over folds that hold a case."""
    rates = [h / t for h, t in per if t]
    return sum(rates) / len(rates) if rates else 0.0


def _guesses(acc, name: str, label: str, sigs: SignatureSet, which: list[int], cases, inputs,
             nodes) -> None:
    """The guess alone on each case's `guess_input`: the tree, and the tree and node."""
    hits = node_hits = node_total = 0
    for i in which:
        text, case = inputs[i], cases[i]
        tree, _ = sigs.guess_tree(text)
        hits += tree == case.tree
        if case.node in nodes.get(case.tree or "", ()):
            node_total += 1
            node_hits += tree == case.tree and sigs.guess_node(text, tree) == case.node
    acc[(name, label)].append((hits, len(which)))
    acc[(name, f"{label}-node")].append((node_hits, node_total))


def _end_to_end(acc, name: str, label: str, sigs: SignatureSet, held: list[int], cases,
                nodes) -> None:
    """triage's top finding on each held case's whole excerpt: the tree, and the node."""
    tree_hits = node_hits = node_total = 0
    for i in held:
        case = cases[i]
        report = run_triage(case.excerpt, case.name, sigs)
        top = report.findings[0] if report.findings else None
        tree_hits += bool(top and top.tree == case.tree)
        if case.node in nodes.get(case.tree or "", ()):
            node_total += 1
            node_hits += bool(top and top.link == case.expect)
    acc[(name, f"{label}-tree")].append((tree_hits, len(held)))
    acc[(name, f"{label}-node")].append((node_hits, node_total))


if __name__ == "__main__":
    sys.exit(main())
