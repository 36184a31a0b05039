"""Compare the nodes' probe facts and name the nodes that differ or are broken.

Most multi-node hangs come from one node that differs. Two kinds of evidence:
- absolute faults a node has on its own (GPUs missing, a fatal Xid, uncorrected ECC, an IB port
  down, no answer at all);
- differences from the majority of nodes (driver, CUDA, NCCL or torch version, an environment
  variable set on one node only, one more GPU process than everywhere else, memory in use).
A value held by fewer than half of the nodes that report it is an outlier; when no value holds a
majority the fact is a *split*: the cluster is inconsistent but no node can be blamed.
Tolerant of missing facts: a fact a node does not report is never a difference.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from trainmedic.cluster.hostlist import compress
from trainmedic.cluster.result import ClusterResult, NodeAnswer, NodeFinding, Outlier, Split

if TYPE_CHECKING:
    from trainmedic.cluster.fanout import FanoutRun

# Facts every node of one job should share (exact comparison, majority wins).
CONSENSUS_FACTS = (
    "gpu.count", "gpu.expected", "gpu.driver_version", "gpu.mig_enabled",
    "gpu.min_memory_total_mib", "gpu-processes.count", "gpu-processes.max_per_gpu",
    "topology.gpu_count", "topology.nvlink", "topology.pairs_via_cpu",
    "infiniband.ports", "infiniband.min_rate_gbps",
)
CONSENSUS_PROBES = ("versions", "env")  # every fact of these probes
# env facts that differ per node by design, never a finding
_PER_NODE_WORDS = ("RANK", "SLURM", "HOSTNAME", "NODEID", "LOCALID", "PROCID")
# derived env facts (human lines, counts of a list already compared): comparing them again
# would only repeat the same difference
_DERIVED_ENV = ("findings", "evidence")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")

# Severity of a finding kind, highest first: it picks the action of the verdict line.
_ACTIONS = {
    "unreachable": "check slurmd/sshd on it, then drain it",
    "no-answer": "it hangs (nvidia-smi or a D-state process?): inspect, then drain it",
    "hardware": "drain it",
    "error": "trainmedic did not run there: check TRAINMEDIC_REMOTE and the install",
    "garbage": "trainmedic did not run there: check TRAINMEDIC_REMOTE and the install",
    "stray-process": "kill the stray process holding GPU memory",
    "software": "align its driver/software stack with the other nodes",
    "environment": "align its environment with the other nodes",
    "probe": "look at this probe's output on that node",
}
_SEVERITY = list(_ACTIONS)


def node_facts(payload: Mapping[str, Any] | None) -> dict[str, object]:
    """`probe.fact` -> value for one node, plus `probe.status`; env dicts/lists flattened."""
    facts: dict[str, object] = {}
    if not payload:
        return facts
    for probe in payload.get("probes", []):
        if not isinstance(probe, Mapping):
            continue
        name = probe.get("name")
        if not isinstance(name, str):
            continue
        facts[f"{name}.status"] = probe.get("status", "")
        for key, value in (probe.get("facts") or {}).items():
            if name == "env" and isinstance(value, dict):
                for var, var_value in value.items():
                    facts[f"env.{var}"] = var_value
            elif name == "env" and isinstance(value, list) and value and all(
                isinstance(v, str) and _ASSIGNMENT.match(v) for v in value
            ):
                for item in value:
                    var, _, var_value = item.partition("=")
                    facts[f"env.{var}"] = var_value
            else:
                facts[f"{name}.{key}"] = value
    return facts


def _key(value: object) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _is_consensus_fact(fact: str) -> bool:
    probe, _, name = fact.partition(".")
    if fact in CONSENSUS_FACTS:
        return True
    if probe not in CONSENSUS_PROBES or name == "status":
        return False
    if probe == "env" and (name in _DERIVED_ENV or name.endswith("_count")):
        return False
    return not any(word in name.upper() for word in _PER_NODE_WORDS)


def compare(facts_by_host: dict[str, dict[str, object]]) -> tuple[list[Outlier], list[Split]]:
    """Majority value of each consensus fact among the nodes that report it, and who differs."""
    values: dict[str, dict[str, object]] = {}
    for host, facts in facts_by_host.items():
        for fact, value in facts.items():
            if _is_consensus_fact(fact):
                values.setdefault(fact, {})[host] = value
    outliers: list[Outlier] = []
    splits: list[Split] = []
    for fact in sorted(values):
        per_host = values[fact]
        counts = Counter(_key(v) for v in per_host.values())
        if len(counts) < 2:
            continue
        top_key, top_count = counts.most_common(1)[0]
        if top_count * 2 > len(per_host):
            minority = {h: v for h, v in per_host.items() if _key(v) != top_key}
            outliers.append(Outlier(fact, json.loads(top_key), top_count, minority))
        else:
            groups: dict[str, list[str]] = {}
            for host, value in per_host.items():
                groups.setdefault(_key(value), []).append(host)
            splits.append(Split(fact, {k: compress(h) for k, h in groups.items()}))
    return outliers, splits


def _num(facts: dict[str, object], fact: str) -> float | None:
    value = facts.get(fact)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def absolute_findings(host: str, facts: dict[str, object]) -> list[NodeFinding]:
    """Faults one node has whatever the others say."""
    found: list[NodeFinding] = []
    count, expected = _num(facts, "gpu.count"), _num(facts, "gpu.expected")
    missing = _num(facts, "gpu.missing") or 0
    if count is not None and expected and (missing > 0 or count < expected):
        found.append(NodeFinding(host, "hardware", f"{count:g} of {expected:g} GPUs visible",
                                 "gpu.missing"))
    codes = facts.get("kernel-xid.codes")
    code_text = ", ".join(str(c) for c in codes) if isinstance(codes, list) and codes else ""
    if facts.get("kernel-xid.fallen_off_bus"):
        found.append(NodeFinding(host, "hardware", "Xid 79 in dmesg (GPU fell off the bus)",
                                 "kernel-xid.fallen_off_bus"))
    elif facts.get("kernel-xid.fatal"):
        found.append(NodeFinding(host, "hardware", f"fatal Xid {code_text} in dmesg",
                                 "kernel-xid.fatal"))
    ecc = _num(facts, "gpu.ecc_uncorrected")
    if ecc:
        found.append(NodeFinding(host, "hardware", f"{ecc:g} uncorrected ECC errors",
                                 "gpu.ecc_uncorrected"))
    if facts.get("gpu.remap_pending"):
        found.append(NodeFinding(host, "hardware", "row remap pending (GPU reset needed)",
                                 "gpu.remap_pending"))
    elif facts.get("gpu.reset_required"):
        found.append(NodeFinding(host, "hardware", "GPU reset required", "gpu.reset_required"))
    if facts.get("gpu.driver_ok") is False:
        found.append(NodeFinding(host, "hardware", "NVIDIA driver not working", "gpu.driver_ok"))
    down, ports = _num(facts, "infiniband.ports_down"), _num(facts, "infiniband.ports")
    if down:
        of = f" of {ports:g}" if ports else ""
        found.append(NodeFinding(host, "hardware", f"{down:g}{of} IB ports down",
                                 "infiniband.ports_down"))
    return found


def _median(values: list[float]) -> float:
    """(statistics.median costs 20 ms of imports; this runs on every `probe --nodes`.)"""
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def _memory_findings(facts_by_host: dict[str, dict[str, object]]) -> list[NodeFinding]:
    """GPU memory in use far above the typical node: something else holds it."""
    used = {h: v for h, f in facts_by_host.items() if (v := _num(f, "gpu.max_memory_used_mib"))
            is not None}
    if len(used) < 3:
        return []
    typical = _median(list(used.values()))
    margin = max(4096.0, typical * 0.25)  # pipeline stages differ; a stray process adds more
    return [
        NodeFinding(host, "stray-process",
                    f"{value / 1024:.0f} GiB GPU memory in use vs {typical / 1024:.0f} GiB typical",
                    "gpu.max_memory_used_mib")
        for host, value in used.items()
        if value > typical + margin
    ]


def _outlier_finding(host: str, outlier: Outlier, value: object) -> NodeFinding:
    probe, _, name = outlier.fact.partition(".")
    shown, usual = _show(value), _show(outlier.majority)
    if probe == "env":
        return NodeFinding(host, "environment", f"{name}={shown} (others: {usual})", outlier.fact)
    if outlier.fact == "gpu-processes.count":
        return NodeFinding(host, "stray-process",
                           f"GPU processes: {shown} vs {usual} on the others", outlier.fact)
    if outlier.fact.startswith("gpu-processes."):
        return NodeFinding(host, "stray-process", f"GPU processes {name} {shown} vs {usual}",
                           outlier.fact)
    if probe == "versions" or outlier.fact == "gpu.driver_version":
        label = "driver" if outlier.fact == "gpu.driver_version" else name
        return NodeFinding(host, "software", f"{label} {shown} (others {usual})", outlier.fact)
    what = f"{probe} {name.replace('_', ' ')}"  # words, not the fact's key (`gpu.expected`)
    return NodeFinding(host, "hardware", f"{what} {shown} (others {usual})", outlier.fact)


def _show(value: object) -> str:
    if value == "" or value is None:
        return "unset"
    if isinstance(value, list):
        return ",".join(str(v) for v in value) or "none"
    return str(value)


def _explained(host: str, fact: str, findings: list[NodeFinding]) -> bool:
    """A GPU count or IB rate that differs because of a fault already named on that node."""
    if fact in ("gpu.count", "topology.gpu_count", "gpu.min_memory_total_mib"):
        return any(f.host == host and f.fact == "gpu.missing" for f in findings)
    if fact.startswith("gpu-processes.") and fact != "gpu-processes.count":
        return any(f.host == host and f.fact == "gpu-processes.count" for f in findings)
    if fact.startswith("infiniband."):
        return any(f.host == host and f.fact == "infiniband.ports_down" for f in findings)
    return False


def _answer_finding(answer: NodeAnswer) -> NodeFinding | None:
    if answer.state == "ok":
        return None
    return NodeFinding(answer.host, answer.state, answer.detail or answer.state)


def _probe_status_findings(facts_by_host: dict[str, dict[str, object]],
                           known: list[NodeFinding]) -> list[NodeFinding]:
    """A probe that fails, is unavailable or cannot tell on a minority of nodes only (and nothing
    explains it)."""
    explained = {(f.host, f.fact.partition(".")[0]) for f in known}
    found: list[NodeFinding] = []
    probes = {k[: -len(".status")] for f in facts_by_host.values() for k in f if
              k.endswith(".status")}
    for probe in sorted(probes):
        status = {h: f.get(f"{probe}.status") for h, f in facts_by_host.items()
                  if f"{probe}.status" in f}
        bad = {h: s for h, s in status.items() if s in ("fail", "unavailable", "unknown")}
        if not bad or len(bad) * 2 >= len(status):
            continue
        for host, state in bad.items():
            if (host, probe) not in explained:
                found.append(NodeFinding(host, "probe", f"{probe} probe {state}",
                                         f"{probe}.status"))
    return found


def _verdict(host: str, findings: list[NodeFinding]) -> str:
    kinds = sorted({f.kind for f in findings}, key=_SEVERITY.index)
    env = [f.message for f in findings if f.kind == "environment"]
    reasons = list(dict.fromkeys(f.message for f in findings if f.kind != "environment"))
    if env:
        reasons.append("environment differs: " + ", ".join(env))
    return f"{host}: {'; '.join(reasons)} — {_ACTIONS[kinds[0]]}"


def aggregate(run: FanoutRun, spec: str = "") -> ClusterResult:
    """The whole cluster result: per-node answers, outliers, findings, verdicts."""
    facts_by_host = {a.host: node_facts(a.payload) for a in run.answers if a.state == "ok"}
    findings: list[NodeFinding] = []
    for answer in run.answers:
        if (finding := _answer_finding(answer)) is not None:
            findings.append(finding)
    for host, facts in facts_by_host.items():
        findings.extend(absolute_findings(host, facts))
    outliers, splits = compare(facts_by_host)
    already = {(f.host, f.fact) for f in findings}
    for outlier in outliers:
        for host, value in outlier.minority.items():
            if _explained(host, outlier.fact, findings):
                continue
            if (host, outlier.fact) not in already:
                findings.append(_outlier_finding(host, outlier, value))
    findings.extend(f for f in _memory_findings(facts_by_host)
                    if not any(g.host == f.host and g.kind == "stray-process" for g in findings))
    findings.extend(_probe_status_findings(facts_by_host, findings))

    order = {host: i for i, host in enumerate(run.nodes)}
    findings.sort(key=lambda f: (order.get(f.host, len(order)), _SEVERITY.index(f.kind)))
    by_host: dict[str, list[NodeFinding]] = {}
    for finding in findings:
        by_host.setdefault(finding.host, []).append(finding)
    verdicts = [_verdict(host, items) for host, items in by_host.items()]
    return ClusterResult(
        time=datetime.now(UTC).isoformat(timespec="seconds"),
        spec=spec,
        method=run.method,
        node_count=len(run.nodes),
        answered=len(facts_by_host),
        wall_s=round(run.wall_s, 3),
        bad_nodes=list(by_host),
        verdicts=verdicts,
        findings=findings,
        outliers=outliers,
        splits=splits,
        nodes=list(run.answers),
    )
