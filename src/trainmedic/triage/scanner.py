"""The streaming scan: candidate lines in, bounded per-signature hits out.

Memory is bounded whatever the log size: per signature a count, a rank set, the first time and
at most `MAX_EVIDENCE` lines; the loss series is downsampled; the rank view keeps two lines per
rank; the error tracker one line per source. Every other line is dropped as soon as it is read.

Which signatures exist, where they lead and what their hooks do come from the trees
(`signatures.SignatureSet`); nothing here names a signature.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, BinaryIO

from trainmedic.redact import redact_text
from trainmedic.trees.spec import NEAR_LINES
from trainmedic.triage import launcher, lineinfo, trends, unmatched
from trainmedic.triage.analyses import LOSS_ANALYSES
from trainmedic.triage.hooks import LineContext
from trainmedic.triage.launcher import LauncherTracker
from trainmedic.triage.loss_series import LossTracker
from trainmedic.triage.rank_compare import RankCompare
from trainmedic.triage.signatures import (
    SERIES_NEEDLES,
    TRAINING_STARTED,
    Signature,
    SignatureSet,
    forest_signatures,
)
from trainmedic.triage.sources import (
    Source,
    candidates,
    grep_available,
    grep_candidates,
    python_candidates,
    trie_pattern,
)

MAX_EVIDENCE = 5
MAX_RANKS = 4096
MAX_HOSTS = 256
RECENT = 24  # candidate lines of a source kept for times and `near` routes
MAX_PENDING = 16  # matches waiting for the lines below them (`near` routes)


@dataclass
class _Match:
    """One line a signature recognised, before it is counted (routing may wait for the lines
    below it)."""

    sig: Signature
    text: str
    file: str
    idx: int
    lineno: int
    rank: int | None
    host: str | None
    outcome: str | None
    details: dict[str, Any]
    named: list[int]
    when: tuple[datetime | None, bool, bool]
    before: tuple[tuple[int, str], ...] = ()
    after: set[str] = field(default_factory=set)


@dataclass
class Hit:
    """Aggregated matches of one signature (and the node it was routed to)."""

    sig: Signature
    tree: str
    node: str | None
    count: int = 0
    ranks: set[int] = field(default_factory=set)
    hosts: set[str] = field(default_factory=set)
    first_time: datetime | None = None
    time_has_year: bool = True
    time_inferred: bool = False
    first_order: tuple[int, int] = (1 << 30, 0)
    evidence: list[tuple[str, int, str, int | None, str | None]] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)


class Scanner:
    """Feed it sources (or text); read `hits`, `loss`, `ranks` and `known_ranks` afterwards."""

    def __init__(self, *, use_grep: bool = True, signatures: SignatureSet | None = None) -> None:
        self.signatures = signatures if signatures is not None else forest_signatures()
        sig_needles = self.signatures.needles()
        self._index = self.signatures.index
        self._near = frozenset(self.signatures.near_needles)
        # Needles that make a line worth Python's time: signatures, the words routes look for
        # above a match, errors no signature knows, the launcher's summary, progress lines.
        watch = {*sig_needles, *self._near, *unmatched.NEEDLES, *launcher.NEEDLES,
                 *trends.NEEDLES}
        self.needles = sorted(watch | set(SERIES_NEEDLES), key=lambda n: (-len(n), n))
        self._combined_b = trie_pattern(self.needles)
        # Progress lines are recognised by the loss tracker's own checks; leaving out their very
        # common first letters (" ", "l", "o") keeps this per-line scan fast. A lookahead finds
        # needles that overlap ("exits with return code = -9" holds two); the trie takes the
        # longest at each position, so the needles it starts with are added back by `_prefixes`.
        trie = trie_pattern(sorted(watch, key=len, reverse=True)).pattern.decode()
        self._combined_s = re.compile(f"(?=({trie}))")
        self._prefixes = {n: [p for p in watch if n.startswith(p)] for n in watch}
        self._error_needles = frozenset(unmatched.NEEDLES)
        self._launcher_needles = frozenset(launcher.NEEDLES)
        self._trend_needles = frozenset(trends.NEEDLES)
        self.use_grep = use_grep
        self.hits: dict[tuple[str, str, str | None], Hit] = {}
        self.loss = LossTracker()
        self.ranks = RankCompare()
        self.launcher = LauncherTracker()
        self.errors = unmatched.ErrorTracker()
        self.steptimes = trends.StepTimes()  # one series: the first source that prints one
        self.known_ranks: set[int] = set()
        self.hosts: set[str] = set()
        self.candidate_lines = 0
        self.files: list[str] = []
        self.redact = redact_text
        self._loss_marks = (0, 0, 0, 0)
        self._started_in_source = False
        self._progress_in_source = False
        self._pending: deque[_Match] = deque()

    # ---- driving -------------------------------------------------------------------------
    def scan(self, source: Source) -> None:
        self._scan(source, candidates(source, self.needles, self._combined_b,
                                      use_grep=self.use_grep))

    def scan_stream(self, stream: BinaryIO, name: str) -> None:
        """Scan any binary file-like object (tests feed generated streams of any size)."""
        grep = grep_available() if self.use_grep else None
        lines = (grep_candidates(None, self.needles, grep, stream=stream) if grep
                 else python_candidates(stream, self._combined_b))
        self._scan(Source(name=name), lines)

    def finish(self) -> None:
        """Call once after the last source."""
        self.errors.finish()

    def _scan(self, source: Source, lines: Iterator[tuple[int, bytes]]) -> None:
        self.files.append(source.name)
        idx = len(self.files) - 1
        if source.rank is not None:
            self.known_ranks.add(source.rank)
        recent: deque[tuple[int, str]] = deque(maxlen=RECENT)
        self._started_in_source = self._progress_in_source = False
        self.errors.new_source()
        self.launcher.new_source()
        try:
            for lineno, raw in lines:
                self.candidate_lines += 1
                text = raw.decode("utf-8", "replace")
                for seg in lineinfo.segments(text):
                    self._line(lineinfo.clean(seg), source, idx, lineno, recent)
        finally:
            self._flush_pending()

    def _line(self, text: str, source: Source, idx: int, lineno: int,
              recent: deque[tuple[int, str]]) -> None:
        if lineno == 1 and text.startswith(("# source:", "# synthetic", "# assembled")):
            return  # provenance header of a fixture / saved excerpt
        found = dict.fromkeys(p for n in self._combined_s.findall(text) for p in self._prefixes[n])
        recent.append((lineno, text))  # times are parsed lazily: only a finding needs one
        if self._pending:
            self._watch_pending(text, lineno)
        sigs: list[Signature] = []
        for needle in found:
            for sig in self._index.get(needle, ()):
                if sig not in sigs:
                    sigs.append(sig)
        rank: int | None = None
        host: str | None = None
        resolved = False
        covered = False
        for sig in sigs:
            if sig.confirm is not None and not sig.confirm.search(text):
                continue
            if sig.exclude is not None and sig.exclude.search(text):
                continue
            if not resolved:
                rank, host, resolved = *self._who(text, source), True
            self._hit(sig, text, source, idx, lineno, rank, host, recent)
            covered = True
        if "WorkNCCL(" in text or "last enqueued" in text:
            if not resolved:
                rank, host, resolved = *self._who(text, source), True
            self.ranks.feed(text, rank, (source.name, lineno))
        if found and not self._error_needles.isdisjoint(found):
            if not resolved:
                rank, host, resolved = *self._who(text, source), True
            self.errors.feed(text, source.name, lineno, covered=covered, rank=rank, host=host)
        if found and not self._launcher_needles.isdisjoint(found):
            self.launcher.feed(text, source.name, lineno)
        if found and not self._trend_needles.isdisjoint(found) and (
                self.steptimes.first is None or self.steptimes.first[0] == source.name):
            self.steptimes.feed(text, source.name, lineno)
        if self.loss.feed(text):
            self._progress_in_source = True
            self._loss_evidence(text, source, lineno, recent)
        elif not found and any(m in text for m in TRAINING_STARTED):
            self._started_in_source = True

    def _who(self, text: str, source: Source) -> tuple[int | None, str | None]:
        rank = lineinfo.line_rank(text)
        if rank is None:
            rank = source.rank
        if rank is not None and len(self.known_ranks) < MAX_RANKS:
            self.known_ranks.add(rank)
        host = lineinfo.line_host(text)
        if host is not None and len(self.hosts) < MAX_HOSTS:
            self.hosts.add(host)
        return rank, host

    # ---- recording -----------------------------------------------------------------------
    def _route(self, m: _Match) -> tuple[str, str | None]:
        """Where this match leads: the first route whose conditions all hold, else the node
        the signature is declared on."""
        for route in m.sig.routes:
            if route.outcome is not None and route.outcome != m.outcome:
                continue
            if route.line is not None and not route.line.search(m.text):
                continue
            if route.near and not (m.after & set(route.near) or any(
                    n in line for ln, line in m.before if m.lineno - ln <= NEAR_LINES
                    for n in route.near)):
                continue
            return route.tree, route.node
        return m.sig.tree, m.sig.node

    def _hit(self, sig: Signature, text: str, source: Source, idx: int, lineno: int,
             rank: int | None, host: str | None, recent: deque[tuple[int, str]]) -> None:
        details: dict[str, Any] = {}
        outcome = None
        named: list[int] = []
        if sig.hook is not None:
            ctx = LineContext(self._started_in_source, self._progress_in_source)
            result = sig.hook.read(text, ctx)
            outcome, details, named = result.outcome, result.details, result.ranks[:MAX_RANKS]
            if named:  # the line names ranks (a desync report): those are the ones, not its own
                rank = None
                self.known_ranks.update(named)
        m = _Match(sig, text, source.name, idx, lineno, rank, host, outcome, details, named,
                   _time_of(recent))
        if any(r.near for r in sig.routes):
            # `near` also looks below the match (IPython prints the exception above the frames):
            # decide once the lines that follow are read
            m.before = tuple(recent)
            self._pending.append(m)
            if len(self._pending) > MAX_PENDING:
                self._record(self._pending.popleft())
            return
        self._record(m)

    def _watch_pending(self, text: str, lineno: int) -> None:
        while self._pending and lineno - self._pending[0].lineno > NEAR_LINES:
            self._record(self._pending.popleft())
        for m in self._pending:
            if m.lineno != lineno:
                for route in m.sig.routes:
                    m.after.update(n for n in route.near if n in text)

    def _flush_pending(self) -> None:
        while self._pending:
            self._record(self._pending.popleft())

    def _record(self, m: _Match) -> None:
        sig = m.sig
        tree, node = self._route(m)
        key = (sig.id, tree, node)
        hit = self.hits.get(key)
        if hit is None:
            hit = self.hits[key] = Hit(sig, tree, node, details=m.details)
        elif m.details and sig.hook is not None and sig.hook.merge is not None:
            sig.hook.merge(hit.details, m.details)
        hit.ranks.update(m.named)
        hit.count += 1
        if m.rank is not None and len(hit.ranks) < MAX_RANKS:
            hit.ranks.add(m.rank)
        if m.host is not None and len(hit.hosts) < MAX_HOSTS:
            hit.hosts.add(m.host)
        when, has_year, inferred = m.when
        if when is not None and (hit.first_time is None or _earlier(when, has_year, hit)):
            hit.first_time, hit.time_has_year, hit.time_inferred = when, has_year, inferred
        hit.first_order = min(hit.first_order, (m.idx, m.lineno))
        line = (m.file, m.lineno, self.redact(m.text.strip())[:2000], m.rank, m.host)
        if len(hit.evidence) < MAX_EVIDENCE:
            hit.evidence.append(line)
        elif (m.rank is not None and all(e[3] != m.rank for e in hit.evidence)
              and len(hit.ranks) <= 2):
            hit.evidence[-1] = line  # keep one line of a second rank: who else saw it

    def _loss_evidence(self, text: str, source: Source, lineno: int,
                       recent: deque[tuple[int, str]]) -> None:
        a = self.loss.analysis
        marks = (len(a.spikes), a.nan_count + a.grad_norm_nan_count, len(a.grad_explosions),
                 int(a.loss_scale_collapsed))
        if marks == self._loss_marks:
            return
        for i, name in enumerate(LOSS_ANALYSES):
            sig = self.signatures.derived.get(name)
            if marks[i] == self._loss_marks[i] or sig is None:
                continue
            key = (sig.id, sig.tree, sig.node)
            hit = self.hits.get(key)
            if hit is None:
                hit = self.hits[key] = Hit(sig, sig.tree, sig.node)
                hit.first_order = (len(self.files) - 1, lineno)
                hit.first_time, hit.time_has_year, _ = _time_of(recent)
            hit.count += 1
            if len(hit.evidence) < MAX_EVIDENCE:
                hit.evidence.append((source.name, lineno, self.redact(text.strip())[:2000],
                                     None, None))
        self._loss_marks = marks


def _time_of(recent: deque[tuple[int, str]]) -> tuple[datetime | None, bool, bool]:
    """(time, has a year, inferred): the line's own time (the last of `recent`), else the
    nearest earlier candidate line's."""
    for back, (_ln, text) in enumerate(reversed(recent)):
        if back >= 8:
            break
        t, has_year = lineinfo.line_time_year(text)
        if t is not None:
            return t, has_year, back > 0
    return None, True, False


def _earlier(when: datetime, has_year: bool, hit: Hit) -> bool:
    if hit.first_time is None:
        return True
    if has_year != hit.time_has_year:
        return False  # not comparable without a year; keep the first seen
    return when < hit.first_time
