"""The streaming scan: candidate lines in, bounded per-signature hits out.

Memory is bounded whatever the log size: per signature a count, a rank set, the first time and
at most `MAX_EVIDENCE` lines; the loss series is downsampled; the rank view keeps two lines per
rank; the error tracker one line per source. Every other line is dropped as soon as it is read.

Each source is sniffed first: a metrics file (trainer_state.json, CSV, JSONL, TensorBoard
events) goes to the loss readers only; a file of Megatron-style iteration lines has those read
in blocks by the loss package's fast reader while grep looks for the other needles only
(started first, so both run at once); any other log goes line by line through one prefilter.

Which signatures exist, where they lead and what their hooks do come from the trees
(`signatures.SignatureSet`); nothing here names a signature.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from itertools import pairwise
from typing import Any, BinaryIO

from trainmedic.errors import UsageError
from trainmedic.redact import redact_text
from trainmedic.textsafe import inert, inert_line
from trainmedic.trees.spec import NEAR_LINES
from trainmedic.triage import launcher, lineinfo, trends, unmatched
from trainmedic.triage.hooks import WRAP_LINES, WRAP_NEEDLES, LineContext
from trainmedic.triage.launcher import LauncherTracker
from trainmedic.triage.loss import LossTracker
from trainmedic.triage.rank_compare import RankCompare
from trainmedic.triage.signatures import (
    SERIES_NEEDLES,
    SIDE_NEEDLES,
    TRAINING_STARTED,
    Signature,
    SignatureSet,
    evaluation_started,
    forest_signatures,
)
from trainmedic.triage.sources import (
    InputCut,
    LastMatches,
    SideLines,
    Source,
    grep_available,
    grep_candidates,
    python_candidates,
    start_candidates,
    trie_pattern,
)

SNIFF_BYTES = 64 << 10
TABLE_ROW_CAP = 4096  # a table row longer than this is no row of numbers
_MEGATRON_LINE = re.compile(rb"\biteration\s+\d+\s*/\s*\d+\s*\|[^\n]*?(?:loss|skipped)")
# an iteration line the block reader already read (a prefilter without grep's exclusion
# passes it on when a signature needle is on it too)
_ITERATION_TEXT = re.compile(r"^.{0,40}iteration\s+\d+\s*/\s*\d+\s*\|")

_FRAME_NEEDLE = '", line '  # a traceback's frame line: no error by itself
# an iteration line as grep's exclusion finds it (`megatron.GREP_EXCLUDE`): the block reader's
_BLOCK_READ = re.compile(rb"^.{0,40}iteration\s+\d+\s*/\s*\d+\s*\|")

MAX_EVIDENCE = 5
MAX_RANKS = 4096
# Longer lines (a base64 payload, a JSON record with a dump inside) keep their head, the part
# around the first failure signature and their tail; every regex after that sees at most this.
LINE_CAP = 8192
EVIDENCE_CAP = 2000
MAX_HOSTS = 256
RECENT = 24  # candidate lines of a source kept for times and `near` routes
MAX_PENDING = 16  # matches waiting for the lines below them (`near` routes)


def shorten(text: str, limit: int, focus: int | None = None) -> str:
    """`text` cut to about `limit` characters: its head, `focus` (an index) with some context,
    and its tail, each cut said in place (`…[1234 characters cut]…`)."""
    if len(text) <= limit:
        return text
    n = len(text)
    head, tail = limit // 4, limit // 8
    spans = [(0, head)]
    if focus is not None and head < focus < n - tail:
        start = max(head, focus - limit // 4)
        spans.append((start, min(n - tail, start + limit // 2)))
    else:
        spans[0] = (0, limit - tail)
    spans.append((n - tail, n))
    out = [text[spans[0][0] : spans[0][1]]]
    for (_, prev_end), (start, end) in pairwise(spans):
        if start > prev_end:
            out.append(f" \u2026[{start - prev_end} characters cut]\u2026 ")
        out.append(text[max(start, prev_end) : end])
    return "".join(out)


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
    # a message wrapped over the lines below (its hook says so): those lines, and what the
    # hook knew when it read the first one
    wrapped: list[str] | None = None
    ctx: LineContext | None = None


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
    more_ranks: bool = False  # ranks beyond MAX_RANKS were left out of `ranks`


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
                 *trends.NEEDLES, *trends.IB_NEEDLES, *trends.WORLD_NEEDLES, *WRAP_NEEDLES}
        self.needles = _minimal(watch | set(SERIES_NEEDLES))
        # Megatron-style logs: the loss package reads the iteration lines in blocks, so the
        # prefilter looks for everything but the progress lines
        self.side_needles = _minimal(watch | set(SIDE_NEEDLES))
        self._error_needles = frozenset(unmatched.NEEDLES)
        # error words nothing else looks for: a line with only these takes the short path
        self._error_only = self._error_needles - set(self._index) - self._near \
            - set(launcher.NEEDLES) - set(trends.NEEDLES)
        # The first pass leaves out the lines whose only needle is such a word (a retry loop's
        # warning, a frame line): the error tracker gets the last of them when it needs them
        # (`SideLines`). `needles`/`side_needles` stay every needle triage looks for.
        first = watch - (self._error_only - set(trends.IB_NEEDLES))
        self.first_needles = _minimal(first | set(SERIES_NEEDLES))
        self.first_side_needles = _minimal(first | set(SIDE_NEEDLES))
        self.error_needles = _minimal(set(unmatched.NEEDLES))
        # Progress lines are recognised by the loss tracker's own checks; leaving out their very
        # common first letters (" ", "l", "o") keeps this per-line scan fast. A lookahead finds
        # needles that overlap ("exits with return code = -9" holds two); the trie takes the
        # longest at each position, so the needles it starts with are added back by `_prefixes`.
        trie = trie_pattern(sorted(watch, key=len, reverse=True)).pattern.decode()
        self._combined_s = re.compile(f"(?=({trie}))")
        self._prefixes = {n: [n[:k] for k in range(1, len(n) + 1) if n[:k] in watch]
                          for n in watch}  # each needle's own prefixes: O(length), not O(n²)
        self._launcher_needles = frozenset(launcher.NEEDLES)
        self._trend_needles = frozenset(trends.NEEDLES)
        self._ib_needles = frozenset(trends.IB_NEEDLES)
        self._world_needles = frozenset(trends.WORLD_NEEDLES)
        self.use_grep = use_grep
        self.hits: dict[tuple[str, str, str | None], Hit] = {}
        # what the user said they saw (`--symptom`), set before the findings are built: a hook
        # may keep a finding only when the run was in trouble
        self.reported: str | None = None
        self.loss = LossTracker()
        self.ranks = RankCompare()
        self.launcher = LauncherTracker()
        self.errors = unmatched.ErrorTracker()
        self.steptimes = trends.StepTimes()  # one series: the first source that prints one
        self.ib = trends.IbExpected()
        self.world = trends.WorldJoin()  # Lightning's DDP set-up: who joined
        self.known_ranks: set[int] = set()
        self.hosts: set[str] = set()
        self.candidate_lines = 0
        self.files: list[str] = []
        # sources read only in part, and why; user-tree signatures left out, and why
        self.notes: list[str] = [inert_line(n) for n in self.signatures.notes]
        self.redact = self.evidence_text
        self._started_in_source = False
        self._progress_in_source = False
        self._evaluating_in_source = False  # an evaluation began after the last progress line
        self._pending: deque[_Match] = deque()
        self._block_read = False  # this source's iteration lines go to the block reader

    # The Python prefilters' patterns are built when first needed: with grep on a large file
    # (the common case for a big log) they are not needed at all.
    @functools.cached_property
    def _combined_b(self) -> re.Pattern[bytes]:
        return trie_pattern(self.needles)

    @functools.cached_property
    def _side_b(self) -> re.Pattern[bytes]:
        return trie_pattern(self.side_needles)

    @functools.cached_property
    def _first_b(self) -> re.Pattern[bytes]:
        return trie_pattern(self.first_needles)

    @functools.cached_property
    def _first_side_b(self) -> re.Pattern[bytes]:
        return trie_pattern(self.first_side_needles)

    @functools.cached_property
    def _errors_b(self) -> re.Pattern[bytes]:
        return trie_pattern(self.error_needles)

    # ---- driving -------------------------------------------------------------------------
    def scan(self, source: Source) -> None:
        # A file name is shown as it is; a hostile one must not carry escape sequences.
        name = inert_line(source.name)
        if name != source.name:
            source = dataclasses.replace(source, name=name)
        self.loss.begin(source.name)
        kind, megatron = self._sniff(source)
        if kind is not None:
            self._scan_metrics(source, kind)
            return
        if megatron and (source.data is not None or (source.path is not None and not source.gz)):
            # grep looks for the needles on every other line while Python reads the iteration
            # lines in blocks; lines with more than an iteration line on them come back here
            from trainmedic.triage.loss.megatron import GREP_EXCLUDE

            side = self._side_lines(megatron=True)
            lines = start_candidates(source, self.first_side_needles, lambda: self._side_b,
                                     use_grep=self.use_grep, exclude=GREP_EXCLUDE, side=side)
            idx, recent = self._begin(source, side, megatron=True)
            try:
                stream = _open_plain(source)
                with stream:
                    self.loss.read_megatron(
                        stream, source.name,
                        lambda lineno, text: self._raw_line(text, source, idx, lineno, recent,
                                                            loss=False),
                        path=source.path if source.data is None else None)
            except BaseException:
                close = getattr(lines, "close", None)  # a generator: stops its grep
                if close is not None:
                    close()
                side.abandon()
                raise
            self._block_read = True
            self.errors.grep_lines_begin()
            try:
                self._scan_lines(source, idx, lines, recent, side)
            finally:
                self._block_read = False
            return
        side = self._side_lines(megatron=False)
        self._scan(source, start_candidates(source, self.first_needles,
                                            lambda: self._combined_b, use_grep=self.use_grep,
                                            side=side), side)
        if self.loss.lines.table_waiting() and (source.data is not None or (
                source.path is not None and not source.gz)):
            self._read_table(source)

    def _read_table(self, source: Source) -> None:
        """The rows of a table of numbers under a header the loss reader knows (Chainer's
        PrintReport): no needle finds them, so they are read again from the header on."""
        start = self.loss.lines.table_line or 0
        lineno = 0
        try:
            with _open_plain(source) as stream:
                while raw := stream.readline(TABLE_ROW_CAP):
                    lineno += 1
                    if not raw.endswith(b"\n") and len(raw) == TABLE_ROW_CAP:
                        while raw and not raw.endswith(b"\n"):  # no row is this long
                            raw = stream.readline(TABLE_ROW_CAP)
                        continue
                    if lineno > start:
                        self.loss.lines.table_row(
                            lineinfo.clean(raw.decode("utf-8", "replace").rstrip("\r\n")),
                            lineno)
        except OSError:
            return  # the first pass has read what it could; a rerun reports the error

    def _sniff(self, source: Source) -> tuple[str | None, bool]:
        """(metrics kind or None, whether the text is Megatron-style iteration lines)."""
        from trainmedic.triage.loss.metrics import sniff

        if source.data is not None:
            head = source.data[:SNIFF_BYTES]
        elif source.path is not None and not source.gz:
            try:
                with open(source.path, "rb") as f:
                    head = f.read(SNIFF_BYTES)
            except OSError:
                return None, False  # candidates() reports it
        else:
            return None, False  # stdin and .gz: read once, line by line
        kind = sniff(head, source.name)
        return kind, kind is None and _MEGATRON_LINE.search(head) is not None

    def _scan_metrics(self, source: Source, kind: str) -> None:
        self.files.append(source.name)
        try:
            stream = _open_plain(source)
        except OSError as exc:
            raise UsageError(f"{source.name}: cannot read: {exc.strerror or exc}") from exc
        with stream:
            n = self.loss.read_metrics(kind, stream, source.name)
        self.candidate_lines += n

    def scan_stream(self, stream: BinaryIO, name: str) -> None:
        """Scan any binary file-like object (tests feed generated streams of any size)."""
        grep = grep_available() if self.use_grep else None
        side = self._side_lines(megatron=False)
        tee = LastMatches.start(self.error_needles) if grep else None
        if grep is not None and tee is not None:
            side.tail = tee
            lines = grep_candidates(None, self.first_needles, grep, stream=stream, tee=tee)
        else:
            lines = python_candidates(stream, self._combined_b, side=side)
        self._scan(Source(name=inert_line(name)), lines, side)

    def _scan(self, source: Source, lines: Iterator[tuple[int, bytes]],
              side: SideLines) -> None:
        idx, recent = self._begin(source, side)
        self._scan_lines(source, idx, lines, recent, side)

    def _side_lines(self, *, megatron: bool) -> SideLines:
        """Where this source's lines left aside go (their last SIDE_KEEP), and come from."""
        return SideLines(self.error_needles, lambda: self._errors_b,
                         (lambda: self._first_side_b) if megatron else (lambda: self._first_b))

    def _aside(self, side: SideLines, megatron: bool) -> list[unmatched.Entry]:
        """The error tracker's entries for the lines `side` set aside, read as the first pass
        would have read them."""
        entries: list[unmatched.Entry] = []
        found_again = side.last()  # searched again: iteration lines were the block reader's
        for lineno, raw in [*side.taken, *found_again]:
            if megatron and found_again and _BLOCK_READ.match(raw):
                continue
            text = raw.decode("utf-8", "replace")
            for seg in lineinfo.segments(text):
                if len(seg) > LINE_CAP:
                    found = self._combined_s.search(seg)
                    seg = shorten(seg, LINE_CAP, found.start() if found else None)
                seg = lineinfo.clean(seg)
                if lineno == 1 and seg.startswith(("# source:", "# synthetic", "# assembled")):
                    continue
                if not self._error_needles.isdisjoint(
                        p for n in self._combined_s.findall(seg) for p in self._prefixes[n]):
                    entries.append((seg, lineno, None, None, None))
        return entries

    def finish(self) -> None:
        """Call once after the last source."""
        self.errors.finish()

    def _begin(self, source: Source, side: SideLines | None = None, *, megatron: bool = False,
               ) -> tuple[int, deque[tuple[int, str]]]:
        self.files.append(source.name)
        if source.rank is not None:
            add_ranks(self.known_ranks, (source.rank,))
        self._started_in_source = self._progress_in_source = False
        self._evaluating_in_source = False
        self.errors.new_source(source.name, lambda text: _who_of(text, source),
                               None if side is None else functools.partial(self._aside, side,
                                                                           megatron))
        self.launcher.new_source()
        # the last few candidate lines of this source: times, and `near` routes
        return len(self.files) - 1, deque(maxlen=RECENT)

    def evidence_text(self, text: str) -> str:
        """A log line as evidence: secrets redacted (before any cut, so no half secret is
        left), cut to EVIDENCE_CAP around its signature, control characters made visible."""
        text = redact_text(text)
        if len(text) > EVIDENCE_CAP:
            found = self._combined_s.search(text)
            text = shorten(text, EVIDENCE_CAP, found.start() if found else None)
        return inert(text)

    def _scan_lines(self, source: Source, idx: int, lines: Iterator[tuple[int, bytes]],
                    recent: deque[tuple[int, str]], side: SideLines | None = None) -> None:
        try:
            for lineno, raw in lines:
                self._raw_line(raw.decode("utf-8", "replace"), source, idx, lineno, recent)
        except InputCut as cut:
            self.notes.append(inert_line(str(cut)))
        except BaseException:
            if side is not None:
                side.abandon()
            raise
        finally:
            self._flush_pending()
        if side is not None:
            # a cause found: the guess, the only reader of the lines left aside, is not made
            side.collect(needed=not self._cause_found())

    def _cause_found(self) -> bool:
        return any(hit.sig.kind == "cause" for hit in self.hits.values())

    def _raw_line(self, text: str, source: Source, idx: int, lineno: int,
                  recent: deque[tuple[int, str]], *, loss: bool = True) -> None:
        self.candidate_lines += 1
        for seg in lineinfo.segments(text):
            if len(seg) > LINE_CAP:  # keep head, the part around a signature, and tail
                found = self._combined_s.search(seg)
                seg = shorten(seg, LINE_CAP, found.start() if found else None)
            self._line(lineinfo.clean(seg), source, idx, lineno, recent, loss=loss)

    def _line(self, text: str, source: Source, idx: int, lineno: int,
              recent: deque[tuple[int, str]], *, loss: bool = True) -> None:
        if lineno == 1 and text.startswith(("# source:", "# synthetic", "# assembled")):
            return  # provenance header of a fixture / saved excerpt
        found = dict.fromkeys(p for n in self._combined_s.findall(text) for p in self._prefixes[n])
        recent.append((lineno, text))  # times are parsed lazily: only a finding needs one
        if self._pending:
            self._watch_pending(text, lineno)
        if found and found.keys() <= self._error_only and "WorkNCCL(" not in text \
                and "last enqueued" not in text:
            # only an error word (a retry loop's warning, a frame line): kept raw, read only
            # if it turns out to be the last error of its source; its rank is still seen
            self.errors.add(text, lineno, frame_only=len(found) == 1 and _FRAME_NEEDLE in found)
            self._seen_rank(text)
            if loss and not (self._block_read and _ITERATION_TEXT.search(text)) \
                    and self.loss.feed(text, lineno):
                self._progress_in_source = True
            return
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
            if covered:
                self.errors.add_covered(text, lineno, rank, host)
            else:
                self.errors.add(text, lineno, frame_only=all(
                    n == _FRAME_NEEDLE for n in found if n in self._error_needles))
                if not resolved:
                    self._seen_rank(text)
        if found and not self._launcher_needles.isdisjoint(found):
            self.launcher.feed(text, source.name, lineno)
        if found and not self._ib_needles.isdisjoint(found):
            self.ib.feed(text, source.name, lineno)
        if found and not self._world_needles.isdisjoint(found):
            self.world.feed(text, source.name, lineno)
        if found and not self._trend_needles.isdisjoint(found) and (
                self.steptimes.first is None or self.steptimes.first[0] == source.name):
            self.steptimes.feed(text, source.name, lineno)
        if evaluation_started(text):
            self._evaluating_in_source = True
        elif loss and not (self._block_read and _ITERATION_TEXT.search(text)) \
                and self.loss.feed(text, lineno):
            self._progress_in_source = True
            self._evaluating_in_source = False  # training goes on: the evaluation is over
        elif not found and any(m in text for m in TRAINING_STARTED):
            self._started_in_source = True

    def _seen_rank(self, text: str) -> None:
        """The rank that printed a line no finding needs yet: it still counts as seen (a rank
        that only printed an error is not silent). Its host is only read if a finding needs it."""
        rank = lineinfo.line_rank(text)
        if rank is not None and len(self.known_ranks) < MAX_RANKS:
            self.known_ranks.add(rank)

    def _who(self, text: str, source: Source) -> tuple[int | None, str | None]:
        """The rank and host that printed a line a finding quotes (both count as seen)."""
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
            first = self.loss.lines.first_progress_line
            progressed = self._progress_in_source or (first is not None and first < lineno)
            ctx = LineContext(self._started_in_source, progressed, self._evaluating_in_source)
            result = sig.hook.read(text, ctx)
            outcome, details, named = result.outcome, result.details, result.ranks[:MAX_RANKS]
            if named:  # the line names ranks (a desync report): those are the ones, not its own
                rank = None
                add_ranks(self.known_ranks, named)
        m = _Match(sig, text, source.name, idx, lineno, rank, host, outcome, details, named,
                   _time_of(recent))
        wrapped = sig.hook is not None and sig.hook.wraps is not None and sig.hook.wraps(text)
        if wrapped:
            m.wrapped, m.ctx = [], ctx
        if wrapped or any(r.near for r in sig.routes):
            # `near` also looks below the match (IPython prints the exception above the frames),
            # and a wrapped message goes on there: decide once the lines that follow are read
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
                hook = m.sig.hook
                if m.wrapped is not None and len(m.wrapped) < WRAP_LINES and hook is not None \
                        and hook.wraps is not None and hook.wraps(" ".join((m.text, *m.wrapped))):
                    m.wrapped.append(text)

    def _flush_pending(self) -> None:
        while self._pending:
            self._record(self._pending.popleft())

    def _record(self, m: _Match) -> None:
        sig = m.sig
        if m.wrapped and m.ctx is not None and sig.hook is not None:
            result = sig.hook.read(" ".join((m.text, *m.wrapped)), m.ctx)
            m.outcome, m.details = result.outcome, result.details
        tree, node = self._route(m)
        key = (sig.id, tree, node)
        hit = self.hits.get(key)
        if hit is None:
            hit = self.hits[key] = Hit(sig, tree, node, details=m.details)
        elif m.details and sig.hook is not None and sig.hook.merge is not None:
            sig.hook.merge(hit.details, m.details)
        if not add_ranks(hit.ranks, m.named if m.rank is None else (*m.named, m.rank)):
            hit.more_ranks = True
        hit.count += 1
        if m.host is not None and len(hit.hosts) < MAX_HOSTS:
            hit.hosts.add(m.host)
        when, has_year, inferred = m.when
        if when is not None and (hit.first_time is None or _earlier(when, has_year, hit)):
            hit.first_time, hit.time_has_year, hit.time_inferred = when, has_year, inferred
        hit.first_order = min(hit.first_order, (m.idx, m.lineno))
        line = (m.file, m.lineno, self.redact(m.text.strip()), m.rank, m.host)
        if len(hit.evidence) < MAX_EVIDENCE:
            hit.evidence.append(line)
        elif (m.rank is not None and all(e[3] != m.rank for e in hit.evidence)
              and len(hit.ranks) <= 2):
            hit.evidence[-1] = line  # keep one line of a second rank: who else saw it


def _who_of(text: str, source: Source) -> tuple[int | None, str | None]:
    """The rank and host that printed a line, without counting them as seen (an error the
    tracker resolves: the lines it reads were counted when read, and those left aside are not
    read as candidates)."""
    rank = lineinfo.line_rank(text)
    return (source.rank if rank is None else rank), lineinfo.line_host(text)


def add_ranks(into: set[int], ranks: Iterable[int]) -> bool:
    """Add `ranks` while `into` holds fewer than MAX_RANKS (a line may name thousands, and a
    log thousands of such lines); False when some were left out."""
    new = [r for r in dict.fromkeys(ranks) if r not in into]
    room = MAX_RANKS - len(into)
    into.update(new[:room])
    return len(new) <= room


def _minimal(needles: set[str]) -> list[str]:
    """The needles a prefilter needs: one that holds another is redundant (a line with it has
    the shorter one too), and fewer alternatives keep grep fast. Longest first, so an
    alternation prefers the specific one."""
    keep: list[str] = []
    for needle in sorted(needles, key=len):
        if not any(k in needle for k in keep):
            keep.append(needle)
    return sorted(keep, key=lambda n: (-len(n), n))


def _open_plain(source: Source):
    import io

    if source.data is not None:
        return io.BytesIO(source.data)
    assert source.path is not None
    return open(source.path, "rb")


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
