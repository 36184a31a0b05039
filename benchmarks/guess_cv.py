"""Cross-validation of the never-silent guess's tree over the corpus's tune incidents only.

k folds (stratified by tree, fixed seed): the word model is learned on k-1 folds
(`scripts/learn_words.py`'s text and counting) and measured on the held fold, for each way of
choosing the tree (`METHODS`: the signature words alone, as before; the learned words alone;
combinations). Three measures, averaged over the folds:

- guess: the tree guessed from what the guess would read if no signature knew the log
  (`guess_input`: its last error line and frame), over the incidents that have one. The
  signature words were written from these very cases, so `sig` is flattered here; the learned
  model, held out, is not.
- end-to-end, all signatures: triage's top finding (tree, node) with that guess plugged in.
  Signatures cover almost every tune case, so the guess rarely decides here.
- end-to-end, unseen signatures: the same, with the signatures that only held-fold cases use
  left out (as if those cases had not been seen when the signatures were written): the guess
  decides where a new log would meet no signature.

    PYTHONPATH=src python benchmarks/guess_cv.py [--folds 5] [--seed 0] [--method NAME ...]
                                                 [--no-e2e]

Holdout cases are never read (their header is read to skip them).
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "tests" / "corpus"))

from learn_words import guess_input, learn, tune_incidents  # noqa: E402

from trainmedic.triage import signatures as signature_module  # noqa: E402
from trainmedic.triage.signatures import SignatureSet, forest_signatures  # noqa: E402

Choice = Callable[[dict[str, float], dict[str, float]], tuple[str | None, float]]


def _best(scores: dict[str, float]) -> tuple[str | None, float]:
    best, top = None, 0.0
    for tree, s in sorted(scores.items()):
        if s > top:
            best, top = tree, s
    return best, top


def sig_only(scores, _posterior):
    return _best(scores)


def learned_only(_scores, posterior):
    return _best(posterior)


def fallback(scores, posterior):
    """The signature words where they know a word; the learned words where they know none."""
    return _best(scores) if scores else _best(posterior)


def mix(weight: float) -> Choice:
    """(1 - weight) x the signature scores as shares + weight x the learned posterior."""
    def choose(scores, posterior):
        total = sum(scores.values())
        shares = {t: s / total for t, s in scores.items()} if total else {}
        both = {t: (1 - weight) * shares.get(t, 0.0) + weight * posterior.get(t, 0.0)
                for t in set(shares) | set(posterior)}
        tree, _ = _best(both)
        return tree, scores.get(tree, 0.0) if tree else 0.0
    choose.__name__ = f"mix{weight:g}"
    return choose


METHODS: dict[str, Choice] = {
    "sig": sig_only, "learned": learned_only, "fallback": fallback,
    **{f"mix{w:g}": mix(w) for w in (0.15, 0.25, 0.35, 0.5, 0.75)},
    "shipped": signature_module.combine,  # what triage uses (LEARNED_WEIGHT)
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
    ap.add_argument("--method", action="append", default=[], choices=sorted(METHODS))
    ap.add_argument("--no-e2e", action="store_true", help="the guess measure only")
    args = ap.parse_args()
    methods = {m: METHODS[m] for m in (args.method or METHODS)}
    t0 = time.perf_counter()
    base = dataclasses.replace(forest_signatures(), words=None)
    from trainmedic.trees.forest import load_forest

    forest = load_forest([])
    nodes = {tid: set(t.nodes) for tid, t in forest.trees.items()}
    cases = tune_incidents(set(nodes))
    fold = folds_of(cases, args.folds, args.seed)
    inputs = [guess_input(c.excerpt) for c in cases]
    derived = {s.id for s in base.derived.values()}
    used = [] if args.no_e2e else [used_signatures(run_triage(c.excerpt, c.name, base)) - derived
                                    for c in cases]
    # per method, per measure: per fold (hits, total)
    acc: dict[tuple[str, str], list[tuple[int, int]]] = defaultdict(list)
    original = signature_module.combine
    try:
        for f in range(args.folds):
            train = [c for c, g in zip(cases, fold, strict=True) if g != f]
            held = [i for i, g in enumerate(fold) if g == f]
            model = learn(train)
            sigs = dataclasses.replace(base, words=model)
            unseen_drop = set().union(*(used[i] for i in held)) - set().union(
                *(used[i] for i, g in enumerate(fold) if g != f)) if used else set()
            unseen = dataclasses.replace(without(base, unseen_drop), words=model)
            for name, choose in methods.items():
                for label, s in (("guess", sigs), ("guess-unseen", unseen)):
                    hits = total = node_hits = node_total = 0
                    for i in held:
                        if inputs[i] is None:
                            continue
                        disowned = s.disowned(inputs[i])
                        post = {t: p for t, p in model.posterior(inputs[i]).items()
                                if t not in disowned}
                        tree, _ = choose(s.word_scores(inputs[i], disowned), post)
                        total += 1
                        hits += tree == cases[i].tree
                        if cases[i].node in nodes.get(cases[i].tree or "", ()):
                            node_total += 1
                            node_hits += tree == cases[i].tree and (
                                s.guess_node(inputs[i], tree) == cases[i].node)
                    acc[(name, label)].append((hits, total))
                    acc[(name, f"{label}-node")].append((node_hits, node_total))
                if args.no_e2e:
                    continue
                signature_module.combine = choose
                for label, s in (("e2e-all", sigs), ("e2e-unseen", unseen)):
                    tree_hits = node_hits = node_total = 0
                    for i in held:
                        report = run_triage(cases[i].excerpt, cases[i].name, s)
                        top = report.findings[0] if report.findings else None
                        tree_hits += bool(top and top.tree == cases[i].tree)
                        if cases[i].node in nodes.get(cases[i].tree or "", ()):
                            node_total += 1
                            node_hits += bool(top and top.link == cases[i].expect)
                    acc[(name, f"{label}-tree")].append((tree_hits, len(held)))
                    acc[(name, f"{label}-node")].append((node_hits, node_total))
                signature_module.combine = original
            print(f"fold {f}: {len(held)} held, {sum(inputs[i] is not None for i in held)} with "
                  f"a guess input, {len(unseen_drop)} signatures only they use", flush=True)
    finally:
        signature_module.combine = original
    measures = ["guess", "guess-node"] + ([] if args.no_e2e else [
        "guess-unseen", "e2e-all-tree", "e2e-all-node", "e2e-unseen-tree", "e2e-unseen-node"])
    print(f"\n{len(cases)} tune incidents, {sum(x is not None for x in inputs)} with a guess "
          f"input; {args.folds} folds, seed {args.seed}; mean over folds (pooled in brackets)")
    print(f"{'method':10}" + "".join(f"{m:>22}" for m in measures))
    for name in methods:
        row = []
        for m in measures:
            per = acc[(name, m)]
            mean = sum(h / t for h, t in per if t) / max(1, sum(1 for _h, t in per if t))
            pooled = Counter()
            for h, t in per:
                pooled["h"] += h
                pooled["t"] += t
            row.append(f"{100 * mean:6.1f}% ({pooled['h']:3d}/{pooled['t']:3d})")
        print(f"{name:10}" + "".join(f"{r:>22}" for r in row))
    print(f"({time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
