"""Words learned from real incidents: which tree an error message's words point to.

The never-silent guess (`SignatureSet.guess_tree`) names a tree for an error no signature knows.
Hand-written signature words fit the messages they were written from; this model is counted
from the public corpus's tune cases (`scripts/learn_words.py` writes `trees/learned/words.json`):
per expected place (`tree#node`), in how many of its incidents' error lines each word occurs,
read as a multinomial naive Bayes model with additive smoothing, over trees and over the nodes
of one tree. It only ever ranks places for a guess: it never makes a finding by itself, so a
healthy log stays silent whatever the words.

The file is data, read by one tolerant reader: a missing, garbled or mistyped file (or entry)
means "no learned words" (or leaves that entry out), never a traceback.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

FORMAT = 1
# Identifiers as a library spells them (NCCL, cudaMalloc, ibv_reg_mr, ZeRO), lower-cased; a word
# is split at dots, slashes and dashes, so a module path or a file path gives its parts.
_TOKEN = re.compile(r"[A-Za-z][A-Za-z0-9_]+")
# Hex ids and addresses (0x7f3a..., a commit, a pointer printed bare) say nothing of the cause.
_HEXISH = re.compile(r"^(?:0x)?[0-9a-f]*\d[0-9a-f]*$")
# A launcher's numbering glued to a word ([rank3]:, [default0]:, node12, gpu7): who, not why.
_NUMBERED = re.compile(r"^(?:rank|default|node|gpu|worker)\d+$")
# Words every kind of log holds: a path's furniture, Python's own traceback words.
NOISE = frozenset((
    "py", "usr", "lib", "lib64", "local", "home", "site", "packages", "dist", "python",
    "python3", "opt", "conda", "envs", "anaconda3", "miniconda3", "root", "venv", "line", "file",
    "self", "in", "the", "of", "to", "and", "is", "at", "for", "on", "with", "by", "an", "or",
    "be", "it", "this", "that", "not", "are", "was", "from", "as", "if", "you", "can",
    "cpp", "cc", "hpp", "cu", "cuh", "txt", "json", "yaml",
))
# additive smoothing: the best of 0.1, 0.25 and 0.5 in benchmarks/guess_cv.py's cross-validation
# (all three within a point)
ALPHA = 0.25
MAX_TOKENS = 400  # words read from one text: a guess's input is one line and its frame


def tokens(text: str, limit: int | None = MAX_TOKENS) -> list[str]:
    """The words of `text` that may tell a cause (the first `limit`): library and API names kept
    whole; numbers, hex ids, one-letter words and path furniture dropped."""
    out = []
    for raw in _TOKEN.findall(text):
        word = raw.lower().strip("_")
        if len(word) < 2 or word in NOISE or _HEXISH.match(word) or _NUMBERED.match(word):
            continue
        if sum(c.isdigit() for c in word) * 2 > len(word):
            continue  # mostly digits: an id, a size, a version
        out.append(word)
        if limit is not None and len(out) >= limit:
            break
    return out


# The parts of a CamelCase name: "CheckpointingException" -> Checkpointing, Exception;
# "NCCLError" -> NCCL, Error; "ZeRORuntimeException" -> Ze, RO, Runtime, Exception.
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+")


def features(text: str, limit: int | None = MAX_TOKENS) -> list[str]:
    """The words the model counts and reads: `tokens(text, limit)`, then the parts of each
    CamelCase name in `text` (an exception class, a library's type) that are not words of it
    already, so that an exception class no tune incident raised still shares its parts
    ("HeaderTooLarge": header, large) with those that did. In the cross-validation
    (benchmarks/guess_cv.py, seeds 0..4) the parts raised the guess on messages one tune case
    had by about 3 points; splitting snake_case names too (ibv_create_cq) and word pairs
    (bigrams) did not help, or not enough for the larger file."""
    out = tokens(text, limit)
    have = set(out)
    for raw in _TOKEN.findall(text):
        if "_" in raw:
            continue
        parts = _CAMEL.findall(raw)
        if len(parts) < 2:
            continue
        for word in tokens(" ".join(parts), None):
            if word not in have:
                have.add(word)
                out.append(word)
    return out


@dataclass(frozen=True)
class LearnedWords:
    """Per expected place (`tree#node`, `tree#?` where only the tree is known), word counts over
    its incidents' texts, with where they came from."""

    counts: dict[str, dict[str, int]]  # place -> word -> incidents whose text holds it
    docs: dict[str, int]  # place -> incidents it was counted from
    alpha: float = ALPHA  # additive smoothing
    provenance: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "provenance": dict(sorted(self.provenance.items())),
            "alpha": self.alpha,
            "docs": dict(sorted(self.docs.items())),
            "counts": {place: dict(sorted(words.items()))
                       for place, words in sorted(self.counts.items())},
        }

    @classmethod
    def from_dict(cls, data: object) -> LearnedWords | None:
        """The model in `data`, leaving out entries of the wrong type; None when nothing of it
        is usable (not a mapping, another format, no place with a word)."""
        if not isinstance(data, Mapping) or data.get("format") != FORMAT:
            return None
        counts: dict[str, dict[str, int]] = {}
        raw_counts = data.get("counts")
        for place, words in (raw_counts.items() if isinstance(raw_counts, Mapping) else ()):
            if not isinstance(place, str) or not place.partition("#")[0] \
                    or not isinstance(words, Mapping):
                continue
            kept = {w: n for w, n in words.items() if isinstance(w, str) and _count(n)}
            if kept:
                counts[place] = kept
        if not counts:
            return None
        raw_docs = data.get("docs")
        docs = {p: n for p, n in (raw_docs.items() if isinstance(raw_docs, Mapping) else ())
                if p in counts and _count(n)}
        alpha = data.get("alpha")
        if not isinstance(alpha, (int, float)) or isinstance(alpha, bool) \
                or not math.isfinite(alpha) or not alpha > 0:
            alpha = ALPHA
        raw_prov = data.get("provenance")
        provenance = {k: v for k, v in (raw_prov.items() if isinstance(raw_prov, Mapping)
                                        else ()) if isinstance(k, str) and isinstance(v, str)}
        return cls(counts, docs, float(alpha), provenance)

    @cached_property
    def _by_tree(self) -> dict[str, dict[str, int]]:
        out: dict[str, Counter[str]] = {}
        for place, words in self.counts.items():
            out.setdefault(place.partition("#")[0], Counter()).update(words)
        return {tree: dict(words) for tree, words in out.items()}

    @cached_property
    def _size(self) -> int:
        return len({w for words in self.counts.values() for w in words})

    def known(self, text: str, max_trees: int = 3, min_incidents: int = 2) -> int:
        """How many distinct words of `text` the model knows well enough to tell trees apart:
        seen in `min_incidents` incidents or more, of `max_trees` trees at most. A message of a
        kind no tune incident had holds few (its own words are new; the rest, "RuntimeError",
        "cuda", is everywhere)."""
        spread, seen = self._spread
        return sum(1 for w in set(features(text))
                   if seen[w] >= min_incidents and 0 < spread[w] <= max_trees)

    @cached_property
    def _spread(self) -> tuple[Counter[str], Counter[str]]:
        """(word -> trees whose incidents hold it, word -> incidents that hold it)."""
        spread: Counter[str] = Counter()
        seen: Counter[str] = Counter()
        for words in self._by_tree.values():
            spread.update(words.keys())
            seen.update(words)
        return spread, seen

    def posterior(self, text: str) -> dict[str, float]:
        """Tree -> P(tree | the words of `text`), uniform prior (a tree's share of the corpus
        says how many threads were collected for it, not how often it happens); only words the
        model has seen count, each weighted by how few trees' incidents hold it (`_idf`: a word
        of every tree, "runtimeerror", weighs nothing). Empty when `text` has none."""
        return _posterior(self._by_tree, features(text), self.alpha, self._size, self._idf)

    @cached_property
    def _idf(self) -> dict[str, float]:
        """Word -> log(trees / trees whose incidents hold it). Unweighted, a word any tree has
        counted for the trees whose few incidents make every word likely; in the
        cross-validation (benchmarks/guess_cv.py) the weights raised both the guess and the
        guess on messages one tune case had."""
        spread, _seen = self._spread
        trees = len(self._by_tree)
        return {w: math.log(trees / n) for w, n in spread.items()}

    def node_posterior(self, text: str, tree: str) -> dict[str, float]:
        """Node of `tree` -> P(node | the words of `text`, the tree), over the nodes its
        incidents named; each word weighted 1 + log(nodes / nodes whose incidents hold it), so
        that the tree's own words ("checkpoint" in every checkpoint node) weigh less than the
        words of one node. In the cross-validation (benchmarks/guess_cv.py, seeds 0..4) the
        weights raised the tree-and-node guess by about 4 points; weighting by the log alone
        (the tree's words at 0) did less well."""
        nodes = self._nodes.get(tree, {})
        return _posterior(nodes, features(text), self.alpha, self._size, self._node_idf.get(tree))

    @cached_property
    def _nodes(self) -> dict[str, dict[str, Mapping[str, int]]]:
        """Tree -> node -> its word counts, over the nodes its incidents named."""
        out: dict[str, dict[str, Mapping[str, int]]] = {}
        for place, words in self.counts.items():
            tree, _, node = place.partition("#")
            if node not in ("", "?"):
                out.setdefault(tree, {})[node] = words
        return out

    @cached_property
    def _node_idf(self) -> dict[str, dict[str, float]]:
        """Tree -> word -> 1 + log(the tree's nodes / those whose incidents hold the word)."""
        out = {}
        for tree, nodes in self._nodes.items():
            held: Counter[str] = Counter()
            for words in nodes.values():
                held.update(words.keys())
            out[tree] = {w: 1.0 + math.log(len(nodes) / n) for w, n in held.items()}
        return out


def _count(n: object) -> bool:
    return isinstance(n, int) and not isinstance(n, bool) and n > 0


def _posterior(classes: Mapping[str, Mapping[str, int]], words: list[str], alpha: float,
               size: int, weights: Mapping[str, float] | None = None) -> dict[str, float]:
    """Multinomial naive Bayes with a uniform prior over `classes` (class -> word counts), on
    the words any class has seen, each word's log-likelihood times its weight in `weights` if
    given (words of weight 0 left out); empty when there are none."""
    seen = [w for w in words if any(w in counts for counts in classes.values())]
    if weights is not None:
        seen = [w for w in seen if weights.get(w, 0.0) > 0]
    if not seen:
        return {}
    weight = (lambda w: 1.0) if weights is None else weights.__getitem__
    score = {}
    for name, counts in classes.items():
        total = math.log(sum(counts.values()) + alpha * size)
        score[name] = sum(weight(w) * (math.log(counts.get(w, 0) + alpha) - total)
                          for w in seen)
    top = max(score.values())
    odds = {name: math.exp(s - top) for name, s in score.items()}
    norm = sum(odds.values())
    return {name: w / norm for name, w in sorted(odds.items())}


def fit(docs: Iterable[tuple[str, str]], *, alpha: float = ALPHA,
        provenance: Mapping[str, str] | None = None) -> LearnedWords:
    """Count the words of (place, text) pairs (`tree#node`, `tree#?` or a bare tree); a word
    counts once per text, so one long paste does not outweigh many short ones."""
    counts: dict[str, Counter[str]] = {}
    ndocs: Counter[str] = Counter()
    for place, text in docs:
        words = set(features(text, None))
        if not words:
            continue
        counts.setdefault(place, Counter()).update(words)
        ndocs[place] += 1
    return LearnedWords({t: dict(c) for t, c in counts.items()}, dict(ndocs), alpha,
                        dict(provenance or {}))


def read_learned(path: Path) -> LearnedWords | None:
    """The model saved at `path`; None when it is missing or unreadable as one."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return None
    return LearnedWords.from_dict(data)


def builtin_words() -> LearnedWords | None:
    """The model shipped with the built-in trees (`trees/learned/words.json`)."""
    from trainmedic.trees.paths import builtin_tree_dir

    return read_learned(builtin_tree_dir() / "learned" / "words.json")
