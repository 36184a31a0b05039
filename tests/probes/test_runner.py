import threading
import time

import pytest

from trainmedic.probes.base import Budget, ProbeContext, ProbeResult
from trainmedic.probes.registry import PROBES, ProbeSpec, declared_facts
from trainmedic.probes.runner import (
    LocalRunner,
    StreamingRunner,
    iter_specs,
    run_probes,
    run_specs,
)
from trainmedic.walk import facts_from

from .helpers import check_types

RELEASE = threading.Event()


def quick(name: str, status: str = "ok"):
    def probe(budget: Budget, _context: ProbeContext) -> ProbeResult:
        return ProbeResult(name, status, f"{name} done", {"value": 1}, evidence={"value": "one"})

    return ProbeSpec(name, "test", 1.0, {"value": "int"}, func=probe)


def stuck(name: str, timeout: float = 0.4):
    def probe(budget: Budget, _context: ProbeContext) -> ProbeResult:
        RELEASE.wait(60)  # ignores its budget, like a thread stuck in a system call
        return ProbeResult(name, "ok", "late")

    return ProbeSpec(name, "test", timeout, {}, func=probe)


def crashing(name: str):
    def probe(budget: Budget, _context: ProbeContext) -> ProbeResult:
        raise RuntimeError("boom")

    return ProbeSpec(name, "test", 1.0, {}, func=probe)


@pytest.fixture(autouse=True)
def _release_stuck_threads():
    RELEASE.clear()
    yield
    RELEASE.set()


def test_results_come_back_in_the_order_asked():
    results = run_specs([quick("b"), quick("a"), quick("c")])
    assert [r.name for r in results] == ["b", "a", "c"]
    assert all(r.duration_s >= 0 for r in results)


def test_stuck_probes_are_abandoned_at_their_own_deadline():
    specs = [stuck("s1"), quick("q1"), stuck("s2"), stuck("s3"), quick("q2")]
    start = time.monotonic()
    results = run_specs(specs)
    elapsed = time.monotonic() - start
    by_name = {r.name: r for r in results}
    for name in ("s1", "s2", "s3"):  # a probe that did not finish cannot tell: never ok
        assert by_name[name].status == "unknown"
        assert by_name[name].summary == "timed out after 0.4s: the probe could not tell"
    assert by_name["q1"].status == by_name["q2"].status == "ok"
    # three hanging probes cost one timeout, not three (the bound is loose: 2 shared cores)
    assert elapsed < 3 * 0.4


def slow(name: str, delay: float):
    def probe(budget: Budget, _context: ProbeContext) -> ProbeResult:
        time.sleep(delay)
        return ProbeResult(name, "ok", f"{name} after {delay}s")

    return ProbeSpec(name, "test", 2.0, {}, func=probe)


def test_results_stream_in_as_they_finish_not_in_the_order_asked():
    specs = [stuck("hung", timeout=0.8), slow("slow", 0.3), quick("fast")]
    start = time.monotonic()
    arrivals = [(r.name, time.monotonic() - start) for r in iter_specs(specs)]
    assert [name for name, _ in arrivals] == ["fast", "slow", "hung"]
    # the fast one is not held until the hung one's deadline (F10)
    assert arrivals[0][1] < 0.4 and arrivals[-1][1] >= 0.8
    # and the whole stream ends at the slowest single timeout (loose bound: 2 shared cores)
    assert arrivals[-1][1] < 0.8 * 2


def test_the_default_runner_streams_and_collects():
    runner = LocalRunner()
    assert isinstance(runner, StreamingRunner)
    streamed = [r.name for r in runner.stream(["no-such-probe", "env"], ProbeContext())]
    assert sorted(streamed) == ["env", "no-such-probe"]
    assert [r.name for r in runner(["no-such-probe", "env"], ProbeContext())] == [
        "no-such-probe", "env"]


def test_a_crashing_probe_fails_alone():
    results = run_specs([crashing("bad"), quick("good")])
    assert results[0].status == "fail" and "RuntimeError: boom" in results[0].summary
    assert results[1].status == "ok"


def test_timeout_argument_and_environment_override_spec_timeouts(monkeypatch):
    spec = stuck("s", timeout=30.0)
    start = time.monotonic()
    assert run_specs([spec], timeout=0.2)[0].summary.startswith("timed out after 0.2s")
    monkeypatch.setenv("TRAINMEDIC_PROBE_TIMEOUT", "0.3")
    assert run_specs([spec])[0].summary.startswith("timed out after 0.3s")
    assert time.monotonic() - start < 3


def test_unknown_names_come_back_unavailable_instead_of_raising():
    result = run_probes(["no-such-probe"])[0]
    assert result.status == "unavailable" and "no-such-probe" in result.summary


def test_raw_and_summary_are_redacted_by_the_runner():
    def leaky(budget: Budget, _context: ProbeContext) -> ProbeResult:
        return ProbeResult("leaky", "ok", "HF_TOKEN=hf_AbCdEfGhIjKlMnOpQrStUv", raw="PASSWORD=x1")

    result = run_specs([ProbeSpec("leaky", "t", 1.0, {}, func=leaky)])[0]
    assert "hf_AbC" not in result.summary and "x1" not in result.raw


def test_fact_values_are_redacted_by_the_runner_too():
    def leaky(budget: Budget, _context: ProbeContext) -> ProbeResult:
        return ProbeResult("leaky", "warn", "found", facts={
            "findings": ["WANDB_API_KEY=0123456789abcdef set", "NCCL_DEBUG=INFO"],
            "addr": "tcp://u:hunter2@host:29500", "count": 2})

    facts = run_specs([ProbeSpec("leaky", "t", 1.0, {}, func=leaky)])[0].facts
    assert facts["findings"] == ["WANDB_API_KEY=<redacted> set", "NCCL_DEBUG=INFO"]
    assert facts["addr"] == "tcp://<redacted>@host:29500" and facts["count"] == 2


def test_facts_and_evidence_are_keyed_probe_dot_fact():
    results = run_specs([quick("alpha"), quick("beta")])
    facts, evidence = facts_from(results)
    assert facts == {"alpha.value": 1, "beta.value": 1}
    assert evidence["alpha.value"] == "one"


def test_the_context_reaches_every_probe():
    seen = []

    def probe(_budget: Budget, context: ProbeContext) -> ProbeResult:
        seen.append(context.launch_command)
        return ProbeResult("ctx", "ok", "seen")

    run_specs([ProbeSpec("ctx", "t", 1.0, {}, func=probe)], ProbeContext("torchrun x.py"))
    assert seen == ["torchrun x.py"]


def test_registry_declares_the_contract_facts_with_valid_types():
    facts = declared_facts()
    assert set(PROBES) == set(facts)
    required = {
        "gpu": ["count", "expected", "missing", "max_memory_fraction", "max_memory_used_mib",
                "min_memory_total_mib", "ecc_uncorrected", "max_temperature_c", "throttled",
                "remap_pending", "reset_required", "mig_enabled", "driver_ok", "driver_version"],
        "gpu-processes": ["count", "max_per_gpu", "total_memory_mib"],
        "topology": ["gpu_count", "nvlink", "pairs_via_cpu"],
        "env": ["myth_vars", "myth_count", "launch_blocking", "max_connections_one",
                "nccl_debug", "socket_ifname_set", "ib_disabled", "master_addr_set",
                "expandable_segments", "async_error_handling", "trace_buffer_set"],
        "versions": ["python", "torch", "torch_cuda", "nccl", "transformer_engine",
                     "flash_attn", "apex", "megatron_core", "deepspeed"],
        "kernel-xid": ["count", "codes", "fatal", "fallen_off_bus", "ecc"],
        "infiniband": ["ports", "ports_down", "min_rate_gbps"],
        "rendezvous": ["master_addr_resolves", "master_port_open", "port_in_use_locally"],
    }
    for probe, names in required.items():
        assert set(names) <= set(facts[probe]), probe
    for probe in facts.values():
        assert set(probe.values()) <= {"int", "float", "bool", "str", "list"}
    assert all(spec.timeout > 0 for spec in PROBES.values())


def test_every_probe_on_this_machine_returns_declared_facts():
    for result in run_probes(timeout=5):
        check_types(result)


def test_every_registered_probe_takes_a_budget_and_the_walks_context():
    """The runner calls `probe(budget, context)`; a probe written for `probe(budget)` would
    only show up as "probe crashed" at run time."""
    import inspect

    from trainmedic.probes.base import NO_CONTEXT

    for spec in PROBES.values():
        inspect.signature(spec.load()).bind(Budget(1.0), NO_CONTEXT)  # TypeError if it cannot
