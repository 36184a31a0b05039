"""The allocated-memory model against peaks measured on GPUs (Megatron-LM's CI).

A measured case is one functional test of Megatron-LM: its arguments, its world size, and the
`mem-max-allocated-bytes` its golden values record (the most over the logged steps, on the
last rank, which is in the last pipeline stage). `tests/fixtures/memory/megatron_ci/` holds
them; `benchmarks/memory_accuracy.py` prints the comparison and a test holds the floor.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MIB = 1024 * 1024
SMALL_CASE_MIB = 2.5 * 1024  # below this the band is at least BAND_FLOOR_MIB
BAND_FRACTION = 0.10
BAND_FLOOR_MIB = 256.0


@dataclass
class MeasuredCase:
    """One CI case: where it comes from, its arguments and what the GPU allocated."""

    case: str
    split: str  # "tune" (used while building the model) or "holdout" (kept aside)
    world_size: int
    args: list[str]
    max_allocated_mib: float
    allocated_mib: float  # after the step (weights, gradients, optimizer state, workspaces)
    sources: dict[str, dict[str, str]] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MeasuredCase:
        """From a fixture file's mapping; args may be a mapping of Megatron flags."""
        raw = data.get("args") or {}
        argv: list[str] = []
        if isinstance(raw, dict):
            for flag, value in raw.items():
                if value is True:
                    argv.append(str(flag))
                elif value is not None and value is not False:  # 0.0 is a value
                    argv += [str(flag), str(value)]
        else:
            argv = [str(a) for a in raw]
        measured = data.get("measured") or {}
        return cls(
            case=str(data.get("case", "?")),
            split=str(data.get("split", "tune")),
            world_size=int(data.get("world_size", 8)),
            args=argv,
            max_allocated_mib=float(measured.get("max_allocated_bytes", 0)) / MIB,
            allocated_mib=float(measured.get("allocated_bytes", 0)) / MIB,
            sources=dict(data.get("sources") or {}),
        )

    def to_dict(self) -> dict[str, object]:
        return dict(self.__dict__)


def load_cases(folder: Path) -> list[MeasuredCase]:
    import yaml

    return [MeasuredCase.from_dict(yaml.safe_load(path.read_text()))
            for path in sorted(folder.glob("*.yaml"))]


def band_mib(measured_mib: float) -> float:
    """The accepted error: 10 %, and at least 256 MiB for cases under 2.5 GiB."""
    band = BAND_FRACTION * measured_mib
    return max(band, BAND_FLOOR_MIB) if measured_mib < SMALL_CASE_MIB else band


@dataclass
class Comparison:
    case: MeasuredCase
    estimate_mib: float  # the model's allocated peak of the last pipeline rank
    static_mib: float  # its persistent part (compare with allocated_mib)

    @property
    def error(self) -> float:
        return (self.estimate_mib - self.case.max_allocated_mib) / self.case.max_allocated_mib

    @property
    def within(self) -> bool:
        return abs(self.estimate_mib - self.case.max_allocated_mib) <= band_mib(
            self.case.max_allocated_mib)

    @property
    def under_band(self) -> bool:
        """Under-estimated by more than the band (the dangerous direction)."""
        return self.case.max_allocated_mib - self.estimate_mib > band_mib(
            self.case.max_allocated_mib)


def compare(case: MeasuredCase) -> Comparison:
    """Run the model on the case's arguments, for the rank Megatron's CI measures."""
    from trainmedic.memory.allocated import rank_allocation
    from trainmedic.memory.config import config_from_args, require

    cfg = require(config_from_args([*case.args, "--world-size", str(case.world_size)]))
    last = rank_allocation(cfg, cfg.pp - 1)
    return Comparison(case, last.peak_mib, last.static_mib)


@dataclass
class Summary:
    cases: int
    within: int
    median_abs_error: float
    worst_under: float  # most negative error (0 when nothing is under-estimated)
    under_band: int

    @property
    def within_fraction(self) -> float:
        return self.within / self.cases if self.cases else 0.0

    def to_dict(self) -> dict[str, object]:
        return {**self.__dict__, "within_fraction": self.within_fraction}


def summarise(results: list[Comparison]) -> Summary:
    if not results:
        return Summary(0, 0, 0.0, 0.0, 0)
    return Summary(
        cases=len(results),
        within=sum(r.within for r in results),
        median_abs_error=statistics.median(abs(r.error) for r in results),
        worst_under=min(0.0, min(r.error for r in results)),
        under_band=sum(r.under_band for r in results),
    )
