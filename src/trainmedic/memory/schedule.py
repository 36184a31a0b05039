"""The order in which a pipeline rank runs forward and backward passes, and its memory peak.

Megatron-Core's schedules (`megatron/core/pipeline_parallel/schedules.py`):

* no pipelining: forward then backward of each microbatch;
* 1F1B: `num_warmup = min(PP - rank - 1, microbatches)` forwards, then one forward and one
  backward alternately, then the remaining backwards;
* interleaved 1F1B with VP model chunks: `num_warmup = (PP - rank - 1) * 2 +
  (VP - 1) * microbatch_group_size` (the group size defaults to PP), all microbatches in
  warm-up when that reaches `microbatches * VP`; forwards walk the chunks in groups of
  `microbatch_group_size` microbatches (`get_schedule_table`), backwards walk them in reverse
  chunk order.

The peak is found by walking that exact order: each finished forward adds the chunk's saved
activations, each backward removes them, and each pass adds its own working memory while it
runs. The steady state repeats with a period of one group per chunk, so a bounded number of
microbatches is walked (`simulated_microbatches`) whatever the global batch.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache


@dataclass(frozen=True)
class ChunkMemory:
    """Bytes one microbatch of a model chunk keeps, and its peaks while running."""

    saved: float  # kept from the end of its forward to its backward
    forward_peak: float  # most bytes held by this pass during its forward (>= saved)
    backward_peak: float  # most bytes held by this pass during its backward


@dataclass(frozen=True)
class SchedulePeak:
    peak_bytes: float  # most activation bytes held at once on this rank
    in_flight_at_peak: int  # chunk-microbatches whose activations were held then
    warmup: int  # Megatron's num_warmup_microbatches for this rank (in chunk passes)


def warmup_passes(pp: int, rank: int, vp: int, microbatches: int, group_size: int,
                  combined: bool = False) -> int:
    """Megatron's num_warmup_microbatches (chunk passes) for `rank`; `combined` is
    `--overlap-moe-expert-parallel-comm` (one more forward before the combined 1F1B steps;
    without pipelining, the first microbatch's forward runs alone)."""
    total = microbatches * vp
    if pp == 1:
        return min(1, total) if combined else 0
    warm = pp - rank - 1 if vp == 1 else (pp - rank - 1) * 2 + (vp - 1) * group_size
    return min(warm + combined, total)


def schedule_table(microbatches: int, vp: int, group_size: int) -> list[tuple[int, int]]:
    """Megatron's get_schedule_table: (microbatch, chunk) of each forward pass, in order."""
    table: list[tuple[int, int]] = []
    for start in range(0, microbatches, group_size):
        stop = min(start + group_size, microbatches)
        for chunk in range(vp):
            table.extend((mb, chunk) for mb in range(start, stop))
    return table


def passes(pp: int, rank: int, vp: int, microbatches: int, group_size: int,
           combined: bool = False) -> tuple[list[tuple[str, int]], int]:
    """('F' or 'B', chunk) events of one iteration on `rank`, and the warm-up count.

    A combined step (`--overlap-moe-expert-parallel-comm`) runs a forward and a backward
    layer by layer together, the backward freeing a layer as the forward saves one: walked as
    the backward first, so the extra warm-up forward does not raise the count in flight.
    """
    table = schedule_table(microbatches, vp, group_size)
    forwards = [chunk for _, chunk in table]
    backwards = [vp - 1 - chunk for _, chunk in table]
    total = len(table)
    warm = warmup_passes(pp, rank, vp, microbatches, group_size, combined)
    events = [("F", c) for c in forwards[:warm]]
    for i in range(total - warm):
        step = [("F", forwards[warm + i]), ("B", backwards[i])]
        events.extend(reversed(step) if combined else step)
    events.extend(("B", c) for c in backwards[total - warm:])
    return events, warm


def simulated_microbatches(pp: int, rank: int, vp: int, microbatches: int,
                           group_size: int, combined: bool = False) -> int:
    """How many microbatches to walk: all of them, or the warm-up plus two steady-state
    periods (one microbatch group through every chunk), whole groups."""
    warm = warmup_passes(pp, rank, vp, microbatches, group_size, combined)
    needed = -(-warm // vp) + 2 * group_size
    return min(microbatches, -(-needed // group_size) * group_size)


@lru_cache(maxsize=256)
def _events(pp: int, rank: int, vp: int, microbatches: int, group_size: int,
            combined: bool) -> tuple[tuple[bool, int], ...]:
    """(is_forward, chunk) of the walked passes (cached: suggestions repeat layouts)."""
    walked = simulated_microbatches(pp, rank, vp, microbatches, group_size, combined)
    events, _ = passes(pp, rank, vp, walked, group_size, combined)
    return tuple((kind == "F", chunk) for kind, chunk in events)


def peak(chunks: list[ChunkMemory], *, pp: int, rank: int, microbatches: int,
         group_size: int | None = None, combined: bool = False) -> SchedulePeak:
    """Walk the rank's forward/backward order and return the most activation bytes held."""
    vp = len(chunks)
    group = group_size or pp
    held = 0.0
    in_flight = 0
    best, best_count = 0.0, 0
    for forward, chunk in _events(pp, rank, vp, microbatches, group, combined):
        mem = chunks[chunk]
        if forward:
            now = held + mem.forward_peak
            held += mem.saved
            in_flight += 1
            count = in_flight
        else:
            now = held - mem.saved + mem.backward_peak
            count = in_flight
            in_flight -= 1
            held -= mem.saved
        if now > best:
            best, best_count = now, count
    return SchedulePeak(best, best_count,
                        warmup_passes(pp, rank, vp, microbatches, group, combined))
