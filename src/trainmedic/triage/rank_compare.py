"""Rank-log comparison for hangs: who is behind, who entered a different collective.

From each rank's watchdog lines — `WorkNCCL(SeqNum=.., OpType=.., NumelIn=.., ...)` and
`last enqueued [NCCL] work: E, last completed [NCCL] work: C` — build a per-rank view:
ranks whose last completed collective is lower than the others' are behind; ranks that time
out on the same sequence number with a different op type or size entered a different
collective; ranks that time out at different sequence numbers of one group disagree on where
they are, and the ones at the lowest number are behind; ranks that have logs but never reported
a timeout were busy elsewhere (or dead). A pasted log whose newlines were lost holds several
ranks' records on one line (`[rank0]:[E...] ... [rank1]:[E...] ...`): each is read as its own.
"""

from __future__ import annotations

import re
from collections.abc import Set
from dataclasses import dataclass, field

_WORK = re.compile(
    r"WorkNCCL\((?:SeqNum=(\d+), )?OpType=(\w+)(?:, NumelIn=(\d+), NumelOut=(\d+))?"
    r"(?:, TensorShape=(\[[^\]]*\]))?(?:.*?Timeout\(ms\)=(\d+)\))?"
)
_PG_STATUS = re.compile(
    r"last enqueued (?:NCCL )?work: (-?\d+), last completed (?:NCCL )?work: (-?\d+)"
)
_PG = re.compile(r"\[PG (?:ID )?(\d+)")
# torchrun's per-rank prefix (--tee / TORCHELASTIC's log prefix): where a glued record begins
_RECORD = re.compile(r"\[rank(\d+)\]:")
_EVIDENCE_PER_RANK = 2
# the most collectives a rank enqueues past one that has not finished (asynchronous launches,
# FSDP's prefetch): ranks of one group that time out further apart are not compared
SEQ_GAP_MAX = 8


@dataclass
class RankState:
    rank: int
    seq: int | None = None  # the timed-out collective's sequence number
    op: str | None = None
    numel: int | None = None
    timeout_ms: int | None = None
    last_enqueued: int | None = None
    last_completed: int | None = None
    pg: str | None = None
    cut: bool = False  # the op type was cut off (a wrapped or clipped line): not compared
    evidence: list[tuple[str, int, str]] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"rank": self.rank, "seq": self.seq, "op": self.op, "numel": self.numel,
                "timeout_ms": self.timeout_ms, "last_enqueued": self.last_enqueued,
                "last_completed": self.last_completed, "pg": self.pg}


@dataclass
class RankVerdict:
    """What the comparison concluded; `kind` is 'behind', 'mismatch', 'silent' or 'uniform'."""

    kind: str
    ranks: list[int]
    summary: str
    evidence: list[tuple[str, int, str]]


class RankCompare:
    """Collects per-rank watchdog state; only the first timeout per rank (and PG 0 first) counts."""

    def __init__(self) -> None:
        self.states: dict[int, RankState] = {}
        self.ranks_seen: set[int] = set()  # every rank that printed anything we read

    def feed(self, text: str, rank: int | None, where: tuple[str, int]) -> bool:
        records = list(_RECORD.finditer(text))
        if len(records) > 1:  # several ranks' records glued into one line
            ends = [m.start() for m in records[1:]] + [len(text)]
            read = [self._feed_one(text[m.start():end], int(m.group(1)), where)
                    for m, end in zip(records, ends, strict=True)]
            return any(read)
        return self._feed_one(text, rank, where)

    def _feed_one(self, text: str, rank: int | None, where: tuple[str, int]) -> bool:
        if rank is None:
            return False
        if "WorkNCCL(" in text and "Watchdog caught" in text:
            m = _WORK.search(text)
            if not m:
                return False
            st = self.states.setdefault(rank, RankState(rank))
            if st.op is None:
                seq, op, n_in, _n_out, shape, ms = m.groups()
                st.seq = int(seq) if seq else None
                st.op = op
                # a terminal that wraps or clips the line cuts the op type short
                # ("OpType=_ALLGATHER_BA[451/1919]"): a different op only when it is whole
                st.cut = text[m.end(2):m.end(2) + 1] not in (",", ")")
                st.numel = int(n_in) if n_in else None
                if st.numel is None and shape:
                    st.op = f"{op}{shape}"
                st.timeout_ms = int(ms) if ms else None  # a cut line may end before it
                pg = _PG.search(text)
                st.pg = pg.group(1) if pg else st.pg
                self._evidence(st, where, text)
            return True
        if "last enqueued" in text:
            m = _PG_STATUS.search(text)
            if not m:
                return False
            st = self.states.setdefault(rank, RankState(rank))
            if st.last_completed is None:
                st.last_enqueued, st.last_completed = int(m.group(1)), int(m.group(2))
                pg = _PG.search(text)
                st.pg = pg.group(1) if pg else st.pg
                self._evidence(st, where, text)
            return True
        return False

    @staticmethod
    def _evidence(st: RankState, where: tuple[str, int], text: str) -> None:
        if len(st.evidence) < _EVIDENCE_PER_RANK:
            st.evidence.append((where[0], where[1], text.strip()))

    def verdicts(self, known_ranks: set[int],
                 stuck: Set[int] = frozenset()) -> list[RankVerdict]:
        """`stuck`: ranks whose watchdog said it was blocked in a NCCL/CUDA call - they are in
        the hang, so they do not count as silent without a timeout line of their own."""
        states = sorted(self.states.values(), key=lambda s: s.rank)
        if not states:
            return []
        out: list[RankVerdict] = []
        # 1. Different collectives (or sizes) at the same sequence number.
        by_seq: dict[int, dict[tuple[str | None, int | None], list[int]]] = {}
        for st in states:
            if st.seq is not None and not st.cut:
                by_seq.setdefault(st.seq, {}).setdefault((st.op, st.numel), []).append(st.rank)
        for seq, groups in sorted(by_seq.items()):
            if len(groups) < 2:
                continue
            ordered = sorted(groups.items(), key=lambda kv: -len(kv[1]))
            major_key, major = ordered[0]
            odd = sorted(r for _k, rs in ordered[1:] for r in rs)
            desc = ", ".join(f"rank{'s' if len(rs) > 1 else ''} {_fmt(rs)} entered {k[0]}"
                             f"{f' ({k[1]} elements)' if k[1] is not None else ''}"
                             for k, rs in ordered[1:])
            out.append(RankVerdict(
                "mismatch", odd,
                f"at collective #{seq} {desc}, while rank{'s' if len(major) > 1 else ''} "
                f"{_fmt(major)} entered {major_key[0]}"
                f"{f' ({major_key[1]} elements)' if major_key[1] is not None else ''}",
                _ev(states, odd + major[:1]),
            ))
        # 2. Behind: lower last-completed work than the rest.
        done = [st for st in states if st.last_completed is not None]
        if len(done) >= 2:
            top = max(st.last_completed or 0 for st in done)
            low = sorted(st.rank for st in done if (st.last_completed or 0) < top)
            if low and len(low) < len(done):
                lows = ", ".join(f"rank {st.rank} completed #{st.last_completed}"
                                 for st in done if st.rank in low)
                out.append(RankVerdict(
                    "behind", low,
                    f"{lows}, while the others completed #{top}: "
                    f"rank{'s' if len(low) > 1 else ''} {_fmt(low)} fell behind",
                    _ev(states, low),
                ))
        # 2b. Behind: in one process group, ranks time out at different sequence numbers; those
        # at the lowest one never got past a collective the others finished.
        if not any(v.kind == "behind" for v in out):
            # a rank whose lines do not name the group (older PyTorch, a cut line) counts as in
            # the one group the others name; with several named groups it is left out
            timed = [st for st in states if st.seq is not None]
            named = {st.pg for st in timed if st.pg is not None}
            by_pg: dict[str | None, list[RankState]] = {}
            for st in timed:
                if len(named) <= 1 or st.pg is not None:
                    by_pg.setdefault(st.pg if len(named) > 1 else None, []).append(st)
            for group in by_pg.values():
                low_seq = min(st.seq or 0 for st in group)
                low = sorted(st.rank for st in group if st.seq == low_seq)
                # sequence numbers count per process group: ranks a few collectives apart wait
                # in one group (the others enqueued the next ones); far apart, the lines more
                # likely come from different groups (TP, DP) whose counters are unrelated
                if max(st.seq or 0 for st in group) - low_seq > SEQ_GAP_MAX:
                    continue
                if len(low) < len(group):
                    ahead = sorted({st.seq or 0 for st in group if st.seq != low_seq})
                    out.append(RankVerdict(
                        "behind", low,
                        f"rank{'s' if len(low) > 1 else ''} {_fmt(low)} timed out in collective "
                        f"#{low_seq} while the others were already at "
                        f"#{', #'.join(map(str, ahead))}: "
                        f"{'they' if len(low) > 1 else 'it'} fell behind",
                        _ev(states, low + [st.rank for st in group if st.seq != low_seq][:1]),
                    ))
                    break
        # 3. Silent: ranks we saw (files, prefixes) that never reported the timeout. Ranks are
        # numbered from 0: when ranks 1..k all timed out and rank 0 printed nothing at all, it is
        # the one that was elsewhere (rank 0 alone saving, evaluating or logging).
        silent = sorted(known_ranks - set(self.states) - set(stuck))
        if (not silent and 0 not in known_ranks and 0 not in stuck and len(self.states) >= 2
                and sorted(self.states) == list(range(1, len(self.states) + 1))):
            silent = [0]
        if silent and len(self.states) >= 1:
            out.append(RankVerdict(
                "silent", silent,
                f"rank{'s' if len(silent) > 1 else ''} {_fmt(silent)} logged no watchdog timeout "
                f"while {len(self.states)} other rank{'s' if len(self.states) > 1 else ''} did: "
                "they were stuck outside NCCL, crashed, or ran ahead",
                _ev(states, sorted(self.states)[:1]),
            ))
        if not out and len(states) >= 2:
            seqs = {st.seq for st in states}
            out.append(RankVerdict(
                "uniform", [st.rank for st in states],
                f"all {len(states)} ranks timed out in the same collective"
                f"{f' #{seqs.pop()}' if len(seqs) == 1 else ''}: no rank is behind — suspect the "
                "transport (network interface, IB, P2P) or a rank outside these logs",
                _ev(states, [states[0].rank]),
            ))
        return out

    def to_dict(self, known_ranks: set[int], stuck: Set[int] = frozenset()) -> dict:
        return {
            "states": [st.to_dict() for st in sorted(self.states.values(), key=lambda s: s.rank)],
            "ranks_seen": sorted(known_ranks),
            "verdicts": [{"kind": v.kind, "ranks": v.ranks, "summary": v.summary}
                         for v in self.verdicts(known_ranks, stuck)],
        }


def _fmt(ranks: list[int]) -> str:
    if len(ranks) > 8:
        return ", ".join(map(str, ranks[:8])) + f" (+{len(ranks) - 8})"
    return ", ".join(map(str, ranks))


def _ev(states: list[RankState], ranks: list[int]) -> list[tuple[str, int, str]]:
    wanted = set(ranks)
    return [e for st in states if st.rank in wanted for e in st.evidence][:6]
