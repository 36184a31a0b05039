"""The API reference lists shipped in `apidata/`, loaded lazily and once, with version logic.

Each JSON file names where its names were read (repository, path, commit or release, date);
`scripts/refresh_api_lists.py` rebuilds them from upstream files. This module only reads them:
which flags Megatron-LM has at which core versions, and which environment variables NCCL,
PyTorch and TransformerEngine read.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

DATA_DIR = Path(__file__).resolve().parent / "apidata"

Version = tuple[int, ...]


@cache  # the lists repeat a handful of versions thousands of times
def parse_version(text: str) -> Version:
    return tuple(int(part) for part in re.findall(r"\d+", text))


def show_version(version: Version) -> str:
    return ".".join(map(str, version))


@dataclass(frozen=True)
class Bound:
    version: Version
    inclusive: bool

    def below(self, v: Version) -> bool:
        """True when `v` lies under this lower bound (compared at the bound's precision)."""
        cut = v[: len(self.version)]
        return cut < self.version or (cut == self.version and not self.inclusive)

    def above(self, v: Version) -> bool:
        cut = v[: len(self.version)]
        return cut > self.version or (cut == self.version and not self.inclusive)


@dataclass(frozen=True)
class VersionRange:
    """A range like `>=0.12`, `0.10-0.15` or `>=2.21,<2.24`, as written in `targets:`."""

    text: str
    low: Bound | None = None
    high: Bound | None = None

    @classmethod
    def parse(cls, text: str) -> VersionRange:
        low: Bound | None = None
        high: Bound | None = None
        for item in text.split(","):
            item = item.strip()
            if re.fullmatch(r"[\d.]+\s*-\s*[\d.]+", item):
                first, last = (part.strip() for part in item.split("-"))
                low, high = Bound(parse_version(first), True), Bound(parse_version(last), True)
                continue
            op = re.match(r"(>=|<=|==|>|<)?", item).group(0)  # type: ignore[union-attr]
            version = parse_version(item[len(op):])
            if op in (">=", ">"):
                low = Bound(version, op == ">=")
            elif op in ("<=", "<"):
                high = Bound(version, op == "<=")
            else:
                low = high = Bound(version, True)
        return cls(text.strip(), low, high)

    def contains(self, v: Version) -> bool:
        return not ((self.low and self.low.below(v)) or (self.high and self.high.above(v)))


@dataclass
class MegatronFlags:
    """Megatron-LM's flags at a few pinned core versions, with hand-checked facts.

    Presence at a pinned version is known from a snapshot of arguments.py, from a fact
    (`since`/`until` exact, `present_in` confirmed), or between two agreeing known points;
    elsewhere it is unknown and the check stays silent rather than guess.
    """

    versions: list[Version]
    default_range: VersionRange
    snapshots: dict[Version, dict[str, Any]]
    flags: dict[str, set[Version]]
    facts: dict[str, dict[str, Any]]
    wrong: dict[str, dict[str, str]]
    deprecated: dict[str, str]
    env_conflicts: list[dict[str, Any]]
    requires: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    # flag -> `presence(flag)`, worked out once: lint asks again for every use of a flag
    _presence: dict[str, dict[Version, bool | None]] = field(
        default_factory=dict, repr=False, compare=False)

    @property
    def span(self) -> str:
        return f"{show_version(self.versions[0])}-{show_version(self.versions[-1])}"

    @property
    def newer(self) -> Version:
        """Stands for every release after the newest pinned one."""
        last = self.versions[-1]
        return (*last[:-1], last[-1] + 1)

    def known(self, flag: str) -> bool:
        return flag in self.flags or flag in self.facts

    def presence(self, flag: str) -> dict[Version, bool | None]:
        """For each pinned version (and `newer`): True, False, or None when not known.
        The same dict for the same flag: read it, never change it."""
        known = self._presence.get(flag)
        if known is None:
            known = self._presence[flag] = self._work_out_presence(flag)
        return known

    def _work_out_presence(self, flag: str) -> dict[Version, bool | None]:
        facts = self.facts.get(flag, {})
        points: dict[Version, bool] = {v: v in self.flags.get(flag, set())
                                       for v in self.snapshots}
        for v in facts.get("present_in", []):
            points[parse_version(v)] = True
        every = [*self.versions, self.newer]
        if "since" in facts:
            since = parse_version(facts["since"])
            points.update({v: v >= since for v in every if v < since or v == since})
        if "until" in facts:
            until = parse_version(facts["until"])
            points.update({v: v <= until for v in every if v > until or v == until})
        result: dict[Version, bool | None] = {}
        known = sorted(points)
        for v in every:
            if v in points:
                result[v] = points[v]
                continue
            before = [points[p] for p in known if p < v]
            after = [points[p] for p in known if p > v]
            result[v] = before[-1] if before and after and before[-1] == after[0] else None
        return result


@dataclass
class EnvVariables:
    """Every environment variable a library reads, and the names that need a word of warning."""

    known: dict[str, str] = field(default_factory=dict)  # name -> which library reads it
    since: dict[str, Version] = field(default_factory=dict)  # NCCL release that added it
    myths: dict[str, str] = field(default_factory=dict)  # name -> why it does nothing
    removed: dict[str, dict[str, str]] = field(default_factory=dict)  # name -> {use, why}
    old_names: dict[str, str] = field(default_factory=dict)  # deprecated name -> current name
    nccl_release: str = ""


def _read(name: str) -> dict[str, Any]:
    with (DATA_DIR / f"{name}.json").open(encoding="utf-8") as handle:
        return json.load(handle)


@cache
def megatron() -> MegatronFlags:
    data = _read("megatron-lm")
    snapshots = {parse_version(s["version"]): s for s in data["snapshots"]}
    return MegatronFlags(
        versions=[parse_version(v) for v in data["versions"]],
        default_range=VersionRange.parse(data["default_versions"]),
        snapshots=snapshots,
        flags={f: {parse_version(v) for v in vs} for f, vs in data["flags"].items()},
        facts=data.get("facts", {}),
        wrong=data.get("wrong", {}),
        deprecated=data.get("deprecated", {}),
        env_conflicts=data.get("env_conflicts", []),
        requires=data.get("requires", {}),
    )


@cache
def megatron_deepspeed() -> frozenset[str]:
    return frozenset(_read("megatron-deepspeed")["flags"])


@cache
def deepspeed_keys() -> frozenset[str]:
    return frozenset(_read("deepspeed")["config_keys"])


@cache
def env_variables() -> EnvVariables:
    env = EnvVariables()
    nccl = _read("nccl")
    env.nccl_release = nccl["source"].get("release", "")
    for name, since in nccl["documented"].items():
        env.known[name] = "NCCL"
        if since:
            env.since[name] = parse_version(since)
    for name in nccl.get("read_by_library", {}).get("names", []):
        env.known.setdefault(name, "NCCL")
    env.myths.update(nccl.get("myths", {}))
    env.removed.update(nccl.get("removed", {}))
    env.old_names.update(nccl.get("deprecated", {}))
    torch = _read("pytorch")
    for name in torch["variables"]:
        env.known[name] = "PyTorch"
    for old, new in torch["old_names"].items():
        env.known.setdefault(old, "PyTorch")
        env.old_names[old] = new
    for name in _read("transformer-engine")["variables"]:
        env.known[name] = "TransformerEngine"
    for name in env.removed:
        env.known.pop(name, None)
    return env
