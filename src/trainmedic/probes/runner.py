"""Run probes concurrently, each under its own time limit, and never raise.

Each probe runs in a daemon thread: a probe stuck in a system call (DNS, a wedged driver) cannot
hold the caller, and a daemon thread does not keep the interpreter alive at exit. The runner
waits for each probe only until its own deadline, so the whole set finishes within the slowest
single timeout however many hang. A probe's budget ends slightly before its deadline so that it
can kill its subprocess and say why itself.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence

from trainmedic.probes.base import NO_CONTEXT, Budget, Probe, ProbeContext, ProbeResult
from trainmedic.probes.registry import PROBES, ProbeSpec
from trainmedic.redact import redact_text
from trainmedic.textsafe import inert

# What front ends and the walk call to run probes: `run_probes`, or a stand-in in tests.
ProbeRunner = Callable[[Sequence[str] | None, ProbeContext], list[ProbeResult]]

TIMEOUT_ENV = "TRAINMEDIC_PROBE_TIMEOUT"
MARGIN_S = 0.25  # the probe's own budget ends this much earlier, so it can report why


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
    result.facts = {k: _scrub_fact(v) for k, v in result.facts.items()}
    return result


class _Slot:
    def __init__(self, spec: ProbeSpec, timeout: float, context: ProbeContext) -> None:
        self.spec = spec
        self.timeout = timeout
        self.context = context
        self.result: ProbeResult | None = None
        self.started = time.monotonic()
        self.thread = threading.Thread(target=self._work, name=f"probe-{spec.name}", daemon=True)

    def _work(self) -> None:
        start = time.monotonic()
        try:
            margin = min(MARGIN_S, self.timeout * 0.1)
            result = self.spec.load()(Budget(self.timeout - margin), self.context)
            if not isinstance(result, ProbeResult):
                raise TypeError(f"returned {type(result).__name__}, not ProbeResult")
        except Exception as exc:  # a probe bug must not take the others down
            result = ProbeResult(
                self.spec.name, "fail", f"probe crashed: {type(exc).__name__}: {exc}"
            )
        result.duration_s = time.monotonic() - start
        self.result = result


def run_specs(specs: Sequence[ProbeSpec], context: ProbeContext = NO_CONTEXT, *,
              timeout: float | None = None) -> list[ProbeResult]:
    """Run the given specs concurrently; results in the order given."""
    override = _timeout_override(timeout)
    slots = [_Slot(spec, override or spec.timeout, context) for spec in specs]
    for slot in slots:
        slot.thread.start()
    results: list[ProbeResult] = []
    for slot in slots:
        deadline = slot.started + slot.timeout
        slot.thread.join(max(0.0, deadline - time.monotonic()))
        result = slot.result
        if result is None:  # still running: abandon the daemon thread
            result = ProbeResult(
                slot.spec.name,
                "unavailable",
                f"timed out after {slot.timeout:g}s",
                duration_s=time.monotonic() - slot.started,
            )
        results.append(_scrub(result))
    return results


def run_probes(
    names: Iterable[str] | None = None, context: ProbeContext = NO_CONTEXT, *,
    timeout: float | None = None,
) -> list[ProbeResult]:
    """Run the named probes (all when None) with what the walk knows (`context`); unknown names
    come back `unavailable`. A `ProbeRunner`."""
    chosen = list(PROBES) if names is None else list(names)
    specs: list[ProbeSpec] = []
    for name in chosen:
        spec = PROBES.get(name)
        if spec is None:
            spec = ProbeSpec(name, "unknown probe", 1.0, {}, func=_unknown(name))
        specs.append(spec)
    return run_specs(specs, context, timeout=timeout)


def _unknown(name: str) -> Probe:
    def probe(_budget: Budget, _context: ProbeContext) -> ProbeResult:
        return ProbeResult(name, "unavailable", f"no probe named {name!r}")

    return probe

