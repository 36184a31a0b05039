"""Run probes concurrently, each under its own time limit, and never raise.

Each probe runs in a daemon thread: a probe stuck in a system call (DNS, a wedged driver) cannot
hold the caller, and a daemon thread does not keep the interpreter alive at exit. The runner
waits for each probe only until its own deadline, so the whole set finishes within the slowest
single timeout however many hang. A probe's budget ends slightly before its deadline so that it
can kill its subprocess and say why itself.

`iter_probes` yields each result as it comes back (a screen fills in row by row while a hung
nvidia-smi runs out its timeout), then again any result a cross-check changed; `run_probes`
collects the same into a list, in the order asked.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Protocol, runtime_checkable

from trainmedic.probes.base import NO_CONTEXT, Budget, Probe, ProbeContext, ProbeResult
from trainmedic.probes.crosscheck import cross_check
from trainmedic.probes.registry import PROBES, ProbeSpec
from trainmedic.redact import redact_text
from trainmedic.textsafe import inert

# What front ends and the walk call to run probes: `LOCAL`, or a stand-in in tests.
ProbeRunner = Callable[[Sequence[str] | None, ProbeContext], list[ProbeResult]]


@runtime_checkable
class StreamingRunner(Protocol):
    """A runner that can also hand results over one by one, as they come back."""

    def __call__(self, names: Sequence[str] | None, context: ProbeContext, /,
                 ) -> list[ProbeResult]: ...

    def stream(self, names: Sequence[str] | None, context: ProbeContext, /,
               ) -> Iterator[ProbeResult]: ...

TIMEOUT_ENV = "TRAINMEDIC_PROBE_TIMEOUT"
# The probe's own budget ends this much earlier (at most a quarter of its timeout), so it can
# kill its subprocess and say why itself, even on two busy cores.
MARGIN_S = 0.5


def _timeout_override(timeout: float | None) -> float | None:
    if timeout is not None:
        return timeout
    text = os.environ.get(TIMEOUT_ENV, "").strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return value if value > 0 else None


def _clean(text: str) -> str:
    return inert(redact_text(text))


def _scrub_fact(value: object) -> object:
    if isinstance(value, str):
        return _clean(value)
    if isinstance(value, list):
        return [_clean(v) if isinstance(v, str) else v for v in value]
    return value


def _scrub(result: ProbeResult) -> ProbeResult:
    """Every text a probe returns is redacted and made inert here, once, whatever the probe
    forgot: facts travel too (saved walks, `--json`, the cluster fan-out), not only the human
    lines, and a tool's output (an environment variable, a device name) may hold escapes."""
    result.raw = _clean(result.raw)
    result.summary = _clean(result.summary)
    result.evidence = {k: _clean(v) for k, v in result.evidence.items()}
    result.source = _clean(result.source)
    result.facts = {k: _scrub_fact(v) for k, v in result.facts.items()}
    return result


class _Slot:
    def __init__(self, index: int, spec: ProbeSpec, timeout: float, context: ProbeContext,
                 done: queue.SimpleQueue[_Slot]) -> None:
        self.index = index
        self.spec = spec
        self.timeout = timeout
        self.context = context
        self.done = done
        self.result: ProbeResult | None = None
        self.started = time.monotonic()
        self.thread = threading.Thread(target=self._work, name=f"probe-{spec.name}", daemon=True)

    @property
    def deadline(self) -> float:
        return self.started + self.timeout

    def _work(self) -> None:
        start = time.monotonic()
        try:
            margin = min(MARGIN_S, self.timeout * 0.25)
            result = self.spec.load()(Budget(self.timeout - margin), self.context)
            if not isinstance(result, ProbeResult):
                raise TypeError(f"returned {type(result).__name__}, not ProbeResult")
        except Exception as exc:  # a probe bug must not take the others down
            result = ProbeResult(
                self.spec.name, "fail", f"probe crashed: {type(exc).__name__}: {exc}"
            )
        result.duration_s = time.monotonic() - start
        self.result = result
        self.done.put(self)


def timed_out(spec: ProbeSpec, timeout: float, duration: float) -> ProbeResult:
    """A probe that did not finish: the program it waits on hung (a fault), or it cannot tell."""
    if spec.waits_on:
        return ProbeResult(spec.name, "fail", f"{spec.waits_on} hung (timed out after "
                           f"{timeout:g}s): a GPU has often fallen off the bus when it does; "
                           "check the kernel-xid probe (Xid 79)", duration_s=duration)
    return ProbeResult(spec.name, "unknown", f"timed out after {timeout:g}s: the probe could "
                       "not tell", duration_s=duration)


def _iter_indexed(specs: Sequence[ProbeSpec], context: ProbeContext,
                  timeout: float | None) -> Iterator[tuple[int, ProbeResult]]:
    """(position in `specs`, result) as each probe finishes or reaches its deadline; then the
    results a cross-check changed, again."""
    override = _timeout_override(timeout)
    done: queue.SimpleQueue[_Slot] = queue.SimpleQueue()
    slots = [_Slot(i, spec, override or spec.timeout, context, done)
             for i, spec in enumerate(specs)]
    for slot in slots:
        slot.thread.start()
    pending = set(slots)
    results: dict[int, ProbeResult] = {}
    while pending:
        wait = min(slot.deadline for slot in pending) - time.monotonic()
        try:
            finished = [done.get(timeout=max(0.0, wait))]
        except queue.Empty:  # every probe past its deadline: take what came, abandon the rest
            now = time.monotonic()
            finished = [slot for slot in pending if slot.deadline <= now]
        for slot in finished:
            if slot not in pending:  # came back after it was abandoned
                continue
            pending.discard(slot)
            result = slot.result or timed_out(slot.spec, slot.timeout,
                                              time.monotonic() - slot.started)
            results[slot.index] = _scrub(result)
            yield slot.index, results[slot.index]
    by_name = {r.name: i for i, r in results.items()}
    for changed in cross_check(list(results.values())):
        yield by_name[changed.name], changed


def iter_specs(specs: Sequence[ProbeSpec], context: ProbeContext = NO_CONTEXT, *,
               timeout: float | None = None) -> Iterator[ProbeResult]:
    """Run the given specs concurrently; yield each result as it comes back (a result the
    cross-checks change comes again, at the end)."""
    for _index, result in _iter_indexed(specs, context, timeout):
        yield result


def run_specs(specs: Sequence[ProbeSpec], context: ProbeContext = NO_CONTEXT, *,
              timeout: float | None = None) -> list[ProbeResult]:
    """Run the given specs concurrently; results in the order given."""
    latest: dict[int, ProbeResult] = {}
    for index, result in _iter_indexed(specs, context, timeout):
        latest[index] = result
    return [latest[i] for i in range(len(specs))]


def _specs(names: Iterable[str] | None) -> list[ProbeSpec]:
    chosen = list(PROBES) if names is None else list(names)
    specs: list[ProbeSpec] = []
    for name in chosen:
        spec = PROBES.get(name)
        if spec is None:
            spec = ProbeSpec(name, "unknown probe", 1.0, {}, func=_unknown(name))
        specs.append(spec)
    return specs


def run_probes(
    names: Iterable[str] | None = None, context: ProbeContext = NO_CONTEXT, *,
    timeout: float | None = None,
) -> list[ProbeResult]:
    """Run the named probes (all when None) with what the walk knows (`context`); unknown names
    come back `unavailable`. A `ProbeRunner`."""
    return run_specs(_specs(names), context, timeout=timeout)


def iter_probes(
    names: Iterable[str] | None = None, context: ProbeContext = NO_CONTEXT, *,
    timeout: float | None = None,
) -> Iterator[ProbeResult]:
    """`run_probes`, one result at a time as each comes back."""
    return iter_specs(_specs(names), context, timeout=timeout)


class LocalRunner:
    """This machine's probes as a `StreamingRunner`: the default of every front end."""

    def __call__(self, names: Sequence[str] | None, context: ProbeContext = NO_CONTEXT,
                 ) -> list[ProbeResult]:
        return run_probes(names, context)

    def stream(self, names: Sequence[str] | None, context: ProbeContext = NO_CONTEXT,
               ) -> Iterator[ProbeResult]:
        return iter_probes(names, context)


def _unknown(name: str) -> Probe:
    def probe(_budget: Budget, _context: ProbeContext) -> ProbeResult:
        return ProbeResult(name, "unavailable", f"no probe named {name!r}")

    return probe
