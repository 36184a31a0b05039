"""Failure signatures, compiled from the trees: the messages triage looks for and where they lead.

The knowledge lives in the tree YAML, on the node each signature leads to (`signatures:`; see
docs/tree-format.md). This module turns the loaded forest into the fast form the scanner needs:
regexes compiled once, every needle indexed for the one-pass prefilter, routes resolved to real
nodes, hooks looked up by name. A user tree under `--trees` adds its signatures the same way.

`kind` orders findings: a *cause* (OOM, Xid, bad config) outranks a *symptom* (watchdog
timeout, remote error) that other ranks print because of it; a *guess* (an error no signature
knows) comes after both, and *context* (a launcher's summary) last.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING

from trainmedic.trees.paths import builtin_tree_dir
from trainmedic.triage.hooks import HOOKS, Hook
from trainmedic.triage.words import builtin_words

if TYPE_CHECKING:
    from trainmedic.trees.forest import Forest
    from trainmedic.trees.model import LogSignature, Tree
    from trainmedic.triage.words import LearnedWords

KIND_ORDER = {"cause": 0, "symptom": 1, "guess": 2, "context": 3}

# Training-progress lines the line readers parse (Megatron family, HF dicts and tqdm bars,
# DeepSpeed, Lightning/NeMo, torchtitan, verl, DLLogger, plain "step N loss X").
PROGRESS_NEEDLES: tuple[str, ...] = (
    " iteration ", "'loss': ", "oss:", "oss =", "oss=", "Loss ", "loss ", "step=", "step:",
    "DLLL", "it/s", "s/it",
)
# An evaluation pass begins (an OOM after it and before the next training progress line happened
# while evaluating): the HF Trainer's banner, Megatron-LM's `Evaluating on N samples` /
# `Evaluating iter i/n`, detectron2's `Start inference on N batches`, mmengine's per-iteration
# `Epoch(val) [1][ 50/500]` lines (mmcv 1.x's `Epoch(val) [1][2]` is the result once it is over),
# Lightning's validation and test bars, and a script's own "starting evaluation". The needles
# feed the prefilter (case-sensitive); EVALUATION_STARTED decides.
EVALUATION_NEEDLES: tuple[str, ...] = (
    "***** Running Evaluation *****", "Evaluating on ", "Evaluating iter ", "Evaluating:",
    "Start inference on ", "Epoch(val)", "Epoch(test)", "Validation DataLoader",
    "Testing DataLoader", "Validating:", "tart evaluation", "tarting evaluation",
    "tart Evaluation", "tarting Evaluation", "unning evaluation", "egin evaluation",
    "tart validation", "tarting validation", "unning validation",
)
EVALUATION_STARTED = re.compile(
    r"\*\*\*\*\* Running Evaluation \*\*\*\*\*|Evaluating (?:on \d+ samples|iter \d)|Evaluating:"
    r"|Start inference on \d|Epoch\((?:val|test)\) ?\[\d+\]\[ *\d+/\d+\]"
    r"|(?:Validation|Testing) DataLoader \d|Validating:"
    r"|(?i:(?:start(?:ing)?|running|begin(?:ning)?) (?:the )?(?:evaluation|validation)"
    r"(?![A-Za-z0-9_]))")


def evaluation_started(text: str) -> bool:
    """Whether a line says an evaluation pass begins (a cheap test first: most lines are not)."""
    return ("valuat" in text or "alidat" in text or "Epoch(" in text or "DataLoader" in text
            or "inference on" in text) and EVALUATION_STARTED.search(text) is not None


# Lines read besides the signatures whatever the format: checkpoint saves and intervals (for
# the rollback), framework hints (which flags the recovery may use), the rank comparison, and
# the start of training (an OOM before any progress line then means the config cannot fit).
SIDE_NEEDLES: tuple[str, ...] = (
    "save_interval", "save-interval", "save_steps", "log_interval", "log-interval",
    "logging_steps", "saved checkpoint", "Saving model checkpoint", "saving model to",
    "Saving checkpoint", "eepSpeed", "deepspeed", "megatron.core", "megatron/core",
    "Megatron-Core", "last enqueued", "Timeout at NCCL work", "WorkNCCL(",
    "before the start of training step", "***** Running training *****",
    *EVALUATION_NEEDLES,
)
SERIES_NEEDLES = PROGRESS_NEEDLES + SIDE_NEEDLES
TRAINING_STARTED = ("before the start of training step", "***** Running training *****")

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_]{2,}")
_STOP = frozenset((
    "the", "and", "for", "with", "from", "not", "was", "were", "has", "have", "this", "that",
    "are", "but", "its", "into", "out", "all", "any", "can", "one", "two", "per", "had", "set",
    "get", "use", "used", "using", "error", "errors", "failed", "fail", "after", "before",
    "when", "while", "than", "then", "them", "they", "their", "there", "which", "what", "your",
    "you", "our",
))
# The trees' own prose (questions, answers, help, fix titles, myths) speaks of the same failures
# as the signatures but loosely: its words count at this fraction of a signature word, and
# alone (no signature word of any tree in the error) only when two or more of them agree, so
# that one common word ("called", "instance") does not name a tree.
KNOWLEDGE_WEIGHT = 0.25
KNOWLEDGE_MIN_WORDS = 2
# The words learned from the corpus's tune cases (`trainmedic.triage.words`) weigh this much in
# the guess, the signature words the rest, and only where the error holds LEARNED_MIN_WORDS
# words the model knows well (`LearnedWords.known`). Chosen in
# cross-validation over the tune incidents (benchmarks/guess_cv.py): with the model's words
# unweighted, blending always lost on the messages no other tune case shares (the long tail
# that unseen logs bring) and a gate of 3 was chosen; with each word weighted by how few trees
# hold it (`LearnedWords.posterior`), one well-known word is enough, and gates of 2 and 3 did
# worse on both measures over seeds 0..4.
LEARNED_WEIGHT = 0.25
LEARNED_MIN_WORDS = 1
# The guess names a node inside its tree only when the learned words give that node this share
# of the tree's incidents: in cross-validation such picks were right about 3 times in 4, against
# 1 in 5 for the tree's most frequent node; below it the guess leads to the tree's start.
NODE_MIN_SHARE = 0.9


@dataclass(frozen=True, eq=False)
class Route:
    tree: str
    node: str | None
    line: re.Pattern[str] | None = None
    near: tuple[str, ...] = ()
    outcome: str | None = None


@dataclass(frozen=True, eq=False)
class Signature:
    id: str
    tree: str
    node: str | None  # None: the tree's start
    kind: str
    weight: float  # decisiveness among findings of the same kind (higher first)
    confidence: float
    title: str
    needles: tuple[str, ...] = ()
    confirm: re.Pattern[str] | None = None  # must match the line (after a needle hit)
    exclude: re.Pattern[str] | None = None  # a match here vetoes the line (known noise)
    short: str | None = None
    hook: Hook | None = None
    derive: str | None = None
    routes: tuple[Route, ...] = ()


@dataclass
class SignatureSet:
    """Every signature of a forest, ready for the scanner."""

    signatures: tuple[Signature, ...]
    derived: dict[str, Signature] = field(default_factory=dict)  # analysis name -> signature
    index: dict[str, list[Signature]] = field(default_factory=dict)  # needle -> signatures
    near_needles: tuple[str, ...] = ()  # words routes look for above a match
    # (tree, its signatures' needles and titles, its own tags and title): `vocabulary`'s input
    wording: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # (tree, the prose of its nodes): `knowledge`'s input
    prose: tuple[tuple[str, tuple[str, ...]], ...] = ()
    notes: tuple[str, ...] = ()  # what was left out of a user tree (an unsafe regex), and why
    words: LearnedWords | None = None  # the words learned from real incidents, if shipped
    nodes: dict[str, frozenset[str]] = field(default_factory=dict)  # tree -> its node ids

    @functools.cached_property
    def vocabulary(self) -> dict[str, Counter[str]]:
        """Tree -> the words of its signatures and tags. Only a guess needs it, so it is counted
        then, not at start-up."""
        vocabulary: dict[str, Counter[str]] = {}
        for tree, texts in self.wording:
            vocabulary.setdefault(tree, Counter()).update(
                w.lower() for text in texts for w in _WORD.findall(text))
        for vocab in vocabulary.values():
            for stop in _STOP & set(vocab):
                del vocab[stop]
        return vocabulary

    @functools.cached_property
    def knowledge(self) -> dict[str, frozenset[str]]:
        """Tree -> the words of its prose that its signatures and tags do not already hold."""
        out: dict[str, set[str]] = {}
        for tree, texts in self.prose:
            out.setdefault(tree, set()).update(
                w.lower() for text in texts for w in _WORD.findall(text))
        return {tree: frozenset(words - _STOP - set(self.vocabulary.get(tree, ())))
                for tree, words in out.items()}

    def needles(self) -> list[str]:
        """Every signature needle, longest first (so the alternation prefers the specific one)."""
        return sorted(self.index, key=lambda n: (-len(n), n))

    def guess_tree(self, text: str) -> tuple[str | None, float]:
        """The tree whose words best match `text`: the signature words' score (`word_scores`),
        and where a learned model is loaded, its words (`combine`)."""
        disowned = self.disowned(text)
        scores = self.word_scores(text, disowned)
        posterior: dict[str, float] = {}
        # the learned words speak only where they know the message: of a kind of message no
        # tune incident had they know the common words alone ("RuntimeError", "failed")
        if self.words is not None and self.words.known(text) >= LEARNED_MIN_WORDS:
            posterior = {tree: p for tree, p in self.words.posterior(text).items()
                         if tree not in disowned}
        return combine(scores, posterior)

    def guess_node(self, text: str, tree: str) -> str | None:
        """The node of `tree` the learned words point to, when they give it at least
        `NODE_MIN_SHARE` of the tree's incidents (and the tree has that node); else None, the
        tree's start."""
        if self.words is None or self.words.known(text) < LEARNED_MIN_WORDS:
            return None
        posterior = self.words.node_posterior(text, tree)
        best = max(posterior, key=lambda n: (posterior[n], n), default=None)
        if best is None or posterior[best] < NODE_MIN_SHARE \
                or best not in self.nodes.get(tree, ()):
            return None
        return best

    def disowned(self, text: str) -> set[str]:
        """Trees whose own signature holds a needle of `text` and excludes it ("this looks like
        me but is not": Triton's shared-memory limit is not a CUDA OOM)."""
        return {s.tree for s in self.signatures if s.exclude is not None
                and any(n in text for n in s.needles) and s.exclude.search(text)}

    def word_scores(self, text: str, disowned: set[str] | None = None) -> dict[str, float]:
        """Tree -> how well its words match `text` (rarer words weigh more; a word of a tree's
        prose a quarter of a word of its signatures); trees with no word, and `disowned` ones,
        left out."""
        # sorted: a float sum in set order differs from run to run in its last bit, and two
        # trees' exact tie then went either way
        words = sorted({w.lower() for w in _WORD.findall(text)} - _STOP)
        if not words or not self.vocabulary:
            return {}
        disowned = self.disowned(text) if disowned is None else disowned
        knowledge = self.knowledge
        spread = Counter(w for tree in set(self.vocabulary) | set(knowledge)
                         for w in set(self.vocabulary.get(tree, ())) | knowledge.get(tree, set()))
        signed = any(w in vocab for vocab in self.vocabulary.values() for w in words)
        out: dict[str, float] = {}
        for tree in sorted(set(self.vocabulary) | set(knowledge)):
            if tree in disowned:
                continue
            vocab, prose = self.vocabulary.get(tree, Counter()), knowledge.get(tree, frozenset())
            s = sum(1.0 / spread[w] for w in words if w in vocab)
            loose = [w for w in words if w in prose]
            if signed or len(loose) >= KNOWLEDGE_MIN_WORDS:
                s += sum(KNOWLEDGE_WEIGHT / spread[w] for w in loose)
            if s > 0:
                out[tree] = s
        return out


def combine(scores: dict[str, float], posterior: dict[str, float]) -> tuple[str | None, float]:
    """The guessed tree and its signature-word score. Without a learned posterior, the best
    signature-word score (the first tree, by name, among equals); with one, the best blend of
    the two as shares: `LEARNED_WEIGHT` x the posterior + the rest x each tree's share of the
    signature-word scores (benchmarks/guess_cv.py chose the form and the weight)."""
    if not posterior:
        return best_of(scores)
    total = sum(scores.values())
    blend = {tree: LEARNED_WEIGHT * posterior.get(tree, 0.0)
             + (1 - LEARNED_WEIGHT) * (scores.get(tree, 0.0) / total if total else 0.0)
             for tree in set(scores) | set(posterior)}
    best, _ = best_of(blend)
    return best, scores.get(best, 0.0) if best is not None else 0.0


def best_of(scores: dict[str, float]) -> tuple[str | None, float]:
    """The tree of the highest positive score (the first by name among equals), and its score."""
    best, top = None, 0.0
    for tree, s in sorted(scores.items()):
        if s > top:
            best, top = tree, s
    return best, top


def compile_forest(forest: Forest) -> SignatureSet:
    """The forest's signatures, compiled; nodes and routes that do not resolve fall back to the
    tree's start (lint reports them)."""
    sigs: list[Signature] = []
    derived: dict[str, Signature] = {}
    index: dict[str, list[Signature]] = {}
    near: dict[str, None] = {}
    wording: list[tuple[str, tuple[str, ...]]] = []
    notes: list[str] = []
    builtin = str(builtin_tree_dir())
    for spec in forest.signatures():
        tree = forest.trees.get(spec.tree)
        if tree is None:
            continue
        # built-in trees are linted clean; a user tree's regex may hang a search on one line
        unsafe = _unsafe if not spec.src.file.startswith(builtin) else _never
        sig = _compile(spec, forest, tree.nodes, unsafe, notes)
        if sig is None:
            continue
        sigs.append(sig)
        if sig.derive:
            derived.setdefault(sig.derive, sig)
        for needle in sig.needles:
            index.setdefault(needle, []).append(sig)
        for route in sig.routes:
            near.update(dict.fromkeys(route.near))
        wording.append((spec.tree, (*spec.needles, str(spec.title))))
    wording += ((tree.id, (*tree.tags, str(tree.title))) for tree in forest.trees.values())
    prose = tuple((tree.id, tuple(_prose(tree))) for tree in forest.trees.values())
    return SignatureSet(tuple(sigs), derived, index, tuple(near), tuple(wording), prose,
                        tuple(notes), builtin_words(),
                        {tid: frozenset(tree.nodes) for tid, tree in forest.trees.items()})


def _prose(tree: Tree) -> Iterable[str]:
    """What a tree's nodes say in words: questions, answers, help, fix titles, myths."""
    from trainmedic.trees.model import Question

    for node in tree.nodes.values():
        if isinstance(node, Question):
            yield str(node.question)
            yield from (str(a.text) for a in node.answers)
            if node.help:
                yield str(node.help)
        else:
            yield str(node.fix)
            if node.myth:
                yield str(node.myth)


def _never(_pattern: str) -> bool:
    return False


def _unsafe(pattern: str) -> bool:
    from trainmedic.trees.siglint import regex_risk

    return regex_risk(pattern) is not None


def _compile(spec: LogSignature, forest: Forest, nodes: Iterable[str],
             unsafe: Callable[[str], bool] = _never,
             notes: list[str] | None = None) -> Signature | None:
    """A signature, compiled. A regex `unsafe` flags is left out, with a note: a `match` or
    `exclude` leaves the whole signature without effect, a route's `line` only that route."""
    skipped = [key for key, pattern in (("match", spec.match), ("exclude", spec.exclude))
               if pattern and unsafe(pattern)]
    routes = []
    for r in spec.routes:
        ref = forest.resolve(spec.tree, r.goto)
        if ref is None:
            continue
        if r.line and unsafe(r.line):
            skipped.append("route 'line'")
            continue
        routes.append(Route(ref.tree, ref.node, re.compile(r.line) if r.line else None,
                            tuple(r.near), r.outcome))
    if skipped and notes is not None:
        what = ("left out" if {"match", "exclude"} & set(skipped)
                else "kept without the unsafe route")
        notes.append(f"{spec.src.file}:{spec.src.line}: signature '{spec.id}' {what}: its "
                     f"{', '.join(skipped)} regex could take minutes on one long line; run "
                     "`trainmedic lint` on the tree for the reason")
    if "match" in skipped or "exclude" in skipped:
        return None
    return Signature(
        id=spec.id, tree=spec.tree, node=spec.node if spec.node in nodes else None,
        kind=spec.kind, weight=spec.weight, confidence=spec.confidence, title=str(spec.title),
        needles=tuple(spec.needles),
        confirm=re.compile(spec.match) if spec.match else None,
        exclude=re.compile(spec.exclude) if spec.exclude else None,
        short=spec.short, hook=HOOKS.get(spec.hook) if spec.hook else None,
        derive=spec.derive, routes=tuple(routes),
    )


def forest_signatures(trees: tuple[str, ...] = ()) -> SignatureSet:
    """The built-in trees' signatures plus those of user tree folders: compiled once, and again
    when a tree file changes (the TUI lives long enough for a user to edit a tree)."""
    return _forest_signatures(trees, _stamp(trees))


@lru_cache(maxsize=8)
def _forest_signatures(trees: tuple[str, ...], _stamp: tuple) -> SignatureSet:
    from trainmedic.trees.forest import load_forest

    return compile_forest(load_forest(trees))


def _stamp(trees: tuple[str, ...]) -> tuple:
    """(path, size, mtime_ns) of every tree file, built-in and under `trees`."""
    from pathlib import Path

    from trainmedic.errors import UsageError
    from trainmedic.trees.paths import builtin_tree_dir, tree_files

    out = []
    try:
        for path in tree_files([builtin_tree_dir(), *map(Path, trees)]):
            try:
                st = path.stat()
            except OSError:
                continue
            out.append((str(path), st.st_size, st.st_mtime_ns))
    except UsageError:
        pass  # a missing folder: load_forest says so
    return tuple(out)


def lint_hooks():  # -> trainmedic.trees.siglint.Hooks
    """What `trainmedic lint` checks signatures against: hooks, their outcomes, analyses."""
    from trainmedic.trees.siglint import Hooks
    from trainmedic.triage.analyses import ANALYSES, OUTCOMES

    outcomes = {name: hook.outcomes for name, hook in HOOKS.items()}
    outcomes.update({name: OUTCOMES.get(name, frozenset()) for name in ANALYSES})
    return Hooks(outcomes, ANALYSES)
