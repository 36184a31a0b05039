"""Paths the drill tests share (a module of its own: `conftest` names clash across folders)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURE_TREES = ROOT / "tests" / "fixtures" / "drills"
CORPUS = ROOT / "tests" / "corpus" / "cases"
