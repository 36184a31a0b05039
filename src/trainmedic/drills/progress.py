"""Drill progress: every finished drill, kept in the state folder, and the score by area.

One JSON file (`state.drill_progress_path()`), rewritten atomically after each drill. Reading
never fails: a missing file is no progress yet, a corrupt one is reported and treated as empty
(the next save replaces it), and entries a person broke by hand are dropped.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from trainmedic.drills.run import DrillResult
from trainmedic.safefile import read_bounded
from trainmedic.state import drill_progress_path, write_json_atomic

VERSION = 1
KEEP = 5000  # results kept, newest last: years of drills, a few hundred KB
MAX_BYTES = 16 << 20
ALL = "all"


@dataclass
class AreaScore:
    """Drills done in one area (or in all of them) and how they ended."""

    area: str
    done: int = 0
    node: int = 0
    tree: int = 0
    elsewhere: int = 0
    points: float = 0.0
    moves: int = 0  # over the drills that have an expert path
    expert_moves: int = 0

    @property
    def score(self) -> float:
        """Mean score, 0-1 (see `DrillResult.score`)."""
        return self.points / self.done if self.done else 0.0

    def add(self, result: DrillResult) -> None:
        self.done += 1
        if result.outcome == "node":
            self.node += 1
        elif result.outcome == "tree":
            self.tree += 1
        else:
            self.elsewhere += 1
        self.points += result.score
        if result.expert_moves is not None:
            self.moves += result.moves
            self.expert_moves += result.expert_moves

    def to_dict(self) -> dict[str, Any]:
        return {"area": self.area, "done": self.done, "node": self.node, "tree": self.tree,
                "elsewhere": self.elsewhere, "score": round(self.score, 3),
                "moves": self.moves, "expert_moves": self.expert_moves}


@dataclass
class DrillProgress:
    results: list[DrillResult] = field(default_factory=list)

    def add(self, result: DrillResult) -> None:
        self.results.append(result)
        del self.results[:-KEEP]

    def done(self) -> set[str]:
        """Names of the cases drilled at least once."""
        return {r.case for r in self.results}

    def by_area(self) -> list[AreaScore]:
        """One row per area drilled, by name, then the total (area `all`)."""
        return summarise(self.results)

    def to_dict(self) -> dict[str, Any]:
        return {"version": VERSION, "results": [r.to_dict() for r in self.results]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DrillProgress:
        raw = data.get("results")
        results = [DrillResult.from_dict(r) for r in raw] if isinstance(raw, list) else []
        return cls([r for r in results if r is not None])


def summarise(results: Iterable[DrillResult]) -> list[AreaScore]:
    rows: dict[str, AreaScore] = {}
    total = AreaScore(ALL)
    for result in results:
        rows.setdefault(result.area, AreaScore(result.area)).add(result)
        total.add(result)
    return [*(rows[a] for a in sorted(rows)), total]


def load_progress() -> tuple[DrillProgress, str]:
    """The progress so far, and why it could not be read ("" when it could, or is new)."""
    path = drill_progress_path()
    try:
        data = json.loads(read_bounded(path, MAX_BYTES).decode("utf-8"))
    except FileNotFoundError:
        return DrillProgress(), ""
    except OSError as exc:
        return DrillProgress(), f"{path}: {exc.strerror or exc}"
    except (UnicodeDecodeError, json.JSONDecodeError):
        return DrillProgress(), f"{path}: corrupt; starting afresh"
    if not isinstance(data, dict):
        return DrillProgress(), f"{path}: not a progress file; starting afresh"
    if data.get("version", VERSION) != VERSION:
        return DrillProgress(), f"{path}: written by another trainmedic version"
    return DrillProgress.from_dict(data), ""


def record_result(result: DrillResult) -> DrillProgress:
    """Add a finished drill to the progress file (OSError when the state folder is not
    writable: the caller says so and the drill still ends normally)."""
    progress, _problem = load_progress()
    progress.add(result)
    write_json_atomic(drill_progress_path(), progress.to_dict())
    return progress
