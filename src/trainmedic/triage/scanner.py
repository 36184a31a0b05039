"""The streaming scan: candidate lines in, bounded per-signature hits out.

Memory is bounded whatever the log size: per signature a count, a rank set, the first time and
at most `MAX_EVIDENCE` lines; the loss series is downsampled; the rank view keeps two lines per
rank. Every other line is dropped as soon as it is read.

Each source is sniffed first: a metrics file (trainer_state.json, CSV, JSONL, TensorBoard
events) goes to the loss readers only; a file of Megatron-style iteration lines has those read
in blocks by the loss package's fast reader while grep looks for the signature needles only
(started first, so both run at once); any other log goes line by line through one prefilter.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from itertools import pairwise
from typing import BinaryIO

from trainmedic.errors import UsageError
from trainmedic.redact import redact_text
from trainmedic.textsafe import inert, inert_line
from trainmedic.triage import lineinfo
from trainmedic.triage.loss import LossTracker
from trainmedic.triage.rank_compare import RankCompare
from trainmedic.triage.signatures import (
    SIGNATURES,
    TRAINING_STARTED,
    Signature,
    all_needles,
    needle_index,
    side_needles,
)
from trainmedic.triage.sources import (
    InputCut,
    Source,
    grep_available,
    grep_candidates,
    python_candidates,
    start_candidates,
    trie_pattern,
)

SNIFF_BYTES = 64 << 10
_MEGATRON_LINE = re.compile(rb"\biteration\s+\d+\s*/\s*\d+\s*\|[^\n]*?(?:loss|skipped)")

MAX_EVIDENCE = 5
MAX_RANKS = 4096
# Longer lines (a base64 payload, a JSON record with a dump inside) keep their head, the part
# around the first failure signature and their tail; every regex after that sees at most this.
LINE_CAP = 8192
EVIDENCE_CAP = 2000
# Xid code -> the hardware tree's node for it (NVIDIA's Xid catalogue, research §3f); codes
# not listed stay at the `xid` question.
XID_NODES: dict[int, str] = {
    **dict.fromkeys((13, 31, 43), "app-fault"),
    79: "fallen-off-bus",
    **dict.fromkeys((48, 63, 64, 92, 94, 95), "ecc"),
    **dict.fromkeys((74, 144, 145, 146, 147, 148, 149, 150), "nvlink"),
    **dict.fromkeys((119, 120), "gsp"),
    **dict.fromkeys((8, 46, 61, 62, 140, 143, 154), "gpu-reset"),
}

_SIZE = r"(\d+(?:\.\d+)?) ?(bytes|KiB|MiB|GiB|TiB)"
_UNITS = {"bytes": 1 / 2**20, "KiB": 1 / 1024, "MiB": 1.0, "GiB": 1024.0, "TiB": 1024.0**2}
_OOM_FIELDS = {
    "tried_mib": re.compile(r"Tried to allocate " + _SIZE),
    "total_mib": re.compile(r"total capaci?ty of " + _SIZE + r"|" + _SIZE + r" total capacity"),
    "free_mib": re.compile(r"of which " + _SIZE + r" is free|" + _SIZE + r" free\b"),
    "unallocated_mib": re.compile(_SIZE + r" is reserved by PyTorch but unallocated"),
    "allocated_mib": re.compile(_SIZE + r" is allocated by PyTorch|" + _SIZE
                                + r" already allocated"),
    "reserved_mib": re.compile(_SIZE + r" reserved in total by PyTorch"),
}
_OOM_OTHER = re.compile(r"Process (\d+) has " + _SIZE + r" memory in use")
_OOM_GPU = re.compile(r"\bGPU (\d+)\b")
_XID = re.compile(r"NVRM: Xid \(PCI:([^)]*)\):\s*(\d+)")
_NAMED_RANKS = re.compile(r"missing ranks: \{([\d, ]+)\}|ranks \[([\d, ]+)\] are the lagging")


def _mib(groups: tuple[str | None, ...]) -> float | None:
    vals = [g for g in groups if g is not None]
    if len(vals) < 2:
        return None
    return round(float(vals[0]) * _UNITS[vals[1]], 2)


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
class Hit:
    """Aggregated matches of one signature (and resolved node)."""

    sig: Signature
    node: str | None
    count: int = 0
    ranks: set[int] = field(default_factory=set)
    first_time: datetime | None = None
    time_has_year: bool = True
    time_inferred: bool = False
    first_order: tuple[int, int] = (1 << 30, 0)
    evidence: list[tuple[str, int, str, int | None]] = field(default_factory=list)
    details: dict = field(default_factory=dict)


class Scanner:
    """Feed it sources (or text); read `hits`, `loss`, `ranks` and `known_ranks` afterwards."""

    def __init__(self, *, use_grep: bool = True) -> None:
        self.needles = all_needles()
        self.side_needles = side_needles()
        self._index = needle_index()
        self._combined_b = trie_pattern(self.needles)
        self._side_b = trie_pattern(self.side_needles)
        # Signature needles only: progress lines are recognised by the loss tracker's own checks,
        # and leaving out their very common first letters (" ", "l", "o") keeps this scan fast.
        sig_needles = sorted({n for sig in SIGNATURES for n in sig.needles}, key=len, reverse=True)
        self._combined_s = re.compile(trie_pattern(sig_needles).pattern.decode())
        self.use_grep = use_grep
        self.hits: dict[tuple[str, str | None], Hit] = {}
        self.loss = LossTracker()
        self.ranks = RankCompare()
        self.known_ranks: set[int] = set()
        self.candidate_lines = 0
        self.files: list[str] = []
        self.notes: list[str] = []  # sources read only in part, and why
        self.redact = self.evidence_text
        self._started_in_source = False
        self._progress_in_source = False

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

            lines = start_candidates(source, self.side_needles, self._side_b,
                                     use_grep=self.use_grep, exclude=GREP_EXCLUDE)
            idx, recent = self._begin(source)
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
                raise
            self._scan_lines(source, idx, lines, recent)
            return
        self._scan(source, start_candidates(source, self.needles, self._combined_b,
                                            use_grep=self.use_grep))

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
        lines = (grep_candidates(None, self.needles, grep, stream=stream) if grep
                 else python_candidates(stream, self._combined_b))
        self._scan(Source(name=inert_line(name)), lines)

    def _scan(self, source: Source, lines: Iterator[tuple[int, bytes]]) -> None:
        idx, recent = self._begin(source)
        self._scan_lines(source, idx, lines, recent)

    def _begin(self, source: Source) -> tuple[int, list[str]]:
        self.files.append(source.name)
        if source.rank is not None:
            self.known_ranks.add(source.rank)
        self._started_in_source = self._progress_in_source = False
        return len(self.files) - 1, []  # the last few candidate lines of this source

    def evidence_text(self, text: str) -> str:
        """A log line as evidence: secrets redacted (before any cut, so no half secret is
        left), cut to EVIDENCE_CAP around its signature, control characters made visible."""
        text = redact_text(text)
        if len(text) > EVIDENCE_CAP:
            found = self._combined_s.search(text)
            text = shorten(text, EVIDENCE_CAP, found.start() if found else None)
        return inert(text)

    def _scan_lines(self, source: Source, idx: int, lines: Iterator[tuple[int, bytes]],
                    recent: list[str]) -> None:
        try:
            for lineno, raw in lines:
                self._raw_line(raw.decode("utf-8", "replace"), source, idx, lineno, recent)
        except InputCut as cut:
            self.notes.append(inert_line(str(cut)))

    def _raw_line(self, text: str, source: Source, idx: int, lineno: int, recent: list[str],
                  *, loss: bool = True) -> None:
        self.candidate_lines += 1
        for seg in lineinfo.segments(text):
            if len(seg) > LINE_CAP:  # keep head, the part around a signature, and tail
                found = self._combined_s.search(seg)
                seg = shorten(seg, LINE_CAP, found.start() if found else None)
            self._line(lineinfo.clean(seg), source, idx, lineno, recent, loss=loss)

    def _line(self, text: str, source: Source, idx: int, lineno: int, last_time: list,
              *, loss: bool = True) -> None:
        if lineno == 1 and text.startswith(("# source:", "# synthetic", "# assembled")):
            return  # provenance header of a fixture / saved excerpt
        found = self._combined_s.findall(text)
        last_time.append(text)  # times are parsed lazily: only a finding needs one
        if len(last_time) > 8:
            del last_time[0]
        sigs: list[Signature] = []
        for needle in dict.fromkeys(found):
            for sig in self._index.get(needle, ()):
                if sig not in sigs:
                    sigs.append(sig)
        rank: int | None = None
        resolved = False
        for sig in sigs:
            if sig.confirm is not None and not sig.confirm.search(text):
                continue
            if sig.exclude is not None and sig.exclude.search(text):
                continue
            if not resolved:
                rank, resolved = self._rank(text, source), True
            self._hit(sig, text, source, idx, lineno, rank, last_time)
        if "WorkNCCL(" in text or "last enqueued" in text:
            if not resolved:
                rank, resolved = self._rank(text, source), True
            self.ranks.feed(text, rank, (source.name, lineno))
        if loss and self.loss.feed(text, lineno):
            self._progress_in_source = True
        elif not found and any(m in text for m in TRAINING_STARTED):
            self._started_in_source = True

    def _rank(self, text: str, source: Source) -> int | None:
        rank = lineinfo.line_rank(text)
        if rank is None:
            rank = source.rank
        if rank is not None and len(self.known_ranks) < MAX_RANKS:
            self.known_ranks.add(rank)
        return rank

    # ---- recording -----------------------------------------------------------------------
    def _hit(self, sig: Signature, text: str, source: Source, idx: int, lineno: int,
             rank: int | None, recent: list[str]) -> None:
        node = sig.node
        details: dict = {}
        if sig.id == "cuda-oom":
            node, details = _oom(text)
            first = self.loss.lines.first_progress_line
            progressed = self._progress_in_source or (first is not None and first < lineno)
            if node is None and self._started_in_source and not progressed:
                node = "first-iteration"  # training began but no step finished: it cannot fit
        elif sig.id == "xid":
            m = _XID.search(text)
            code = int(m.group(2)) if m else None
            node = XID_NODES.get(code, node) if code is not None else node
            details = {"codes": [code] if code is not None else [],
                       "pci": [inert_line(m.group(1)[:64])] if m else []}
        elif sig.id == "lagging-ranks":
            # fr_trace "missing ranks: {1, 3}" / desync report "ranks [2, 5] are the lagging ranks"
            m = _NAMED_RANKS.search(text)
            if m:
                named = [int(r) for r in re.findall(r"\d+", m.group(1) or m.group(2))]
                details = {"named_ranks": named}
                rank = None
                hit = self.hits.get((sig.id, node))
                for r in named:
                    self.known_ranks.add(r)
                if hit is not None:
                    hit.ranks.update(named)
                else:
                    self.hits[(sig.id, node)] = Hit(sig, node, ranks=set(named), details=details)
        key = (sig.id, node)
        hit = self.hits.get(key)
        if hit is None:
            hit = self.hits[key] = Hit(sig, node, details=details)
        elif sig.id == "xid" and details.get("codes"):
            for k in ("codes", "pci"):
                for v in details[k]:
                    if v not in hit.details[k] and len(hit.details[k]) < 32:
                        hit.details[k].append(v)
        elif sig.id == "cuda-oom" and not hit.details.get("tried_mib") and details:
            hit.details = details
        hit.count += 1
        if rank is not None and len(hit.ranks) < MAX_RANKS:
            hit.ranks.add(rank)
        when, has_year, inferred = _time_of(recent)
        if when is not None and (hit.first_time is None or _earlier(when, has_year, hit)):
            hit.first_time, hit.time_has_year, hit.time_inferred = when, has_year, inferred
        order = (idx, lineno)
        hit.first_order = min(hit.first_order, order)
        if len(hit.evidence) < MAX_EVIDENCE:
            hit.evidence.append((source.name, lineno, self.redact(text.strip()), rank))
        elif rank is not None and all(e[3] != rank for e in hit.evidence) and len(hit.ranks) <= 2:
            # keep one line of a second rank so the evidence shows who else saw it
            hit.evidence[-1] = (source.name, lineno, self.redact(text.strip()), rank)


def _open_plain(source: Source):
    import io

    if source.data is not None:
        return io.BytesIO(source.data)
    assert source.path is not None
    return open(source.path, "rb")


def _time_of(recent: list[str]) -> tuple[datetime | None, bool, bool]:
    """(time, has a year, inferred): the line's own time (the last of `recent`), else the
    nearest earlier candidate line's."""
    for back, text in enumerate(reversed(recent)):
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


def _oom(text: str) -> tuple[str | None, dict]:
    """Numbers of a CUDA OOM message and the node they point to."""
    d: dict = {}
    for key, rx in _OOM_FIELDS.items():
        m = rx.search(text)
        if m:
            val = _mib(m.groups())
            if val is not None:
                d[key] = val
    if "unallocated_mib" not in d and "reserved_mib" in d and "allocated_mib" in d:
        d["unallocated_mib"] = round(d["reserved_mib"] - d["allocated_mib"], 2)
    gpu = _OOM_GPU.search(text)
    if gpu:
        d["gpu"] = int(gpu.group(1))
    others = [(int(m.group(1)), _mib(m.groups()[1:])) for m in _OOM_OTHER.finditer(text)]
    if others:
        d["other_processes"] = [{"pid": pid, "mib": mib} for pid, mib in others]
    total = d.get("total_mib") or 0.0
    unalloc = d.get("unallocated_mib") or 0.0
    tried = d.get("tried_mib") or 0.0
    if "this process has" not in text and others:
        # Before PyTorch 2.2 the process itself is listed as "Process PID" too: drop the largest.
        others = sorted(others, key=lambda o: o[1] or 0.0)[:-1]
    foreign = sum(o[1] or 0.0 for o in others)
    if others and foreign >= max(1024.0, 0.1 * total):
        return "other-process", d
    if unalloc >= 1024.0 or (total and unalloc >= 0.1 * total) or (unalloc >= tried > 0
                                                                    and unalloc >= 256.0):
        return "fragmentation", d
    return None, d
