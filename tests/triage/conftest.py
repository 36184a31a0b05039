"""Shared helpers for the triage tests."""

from __future__ import annotations

from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "triage"


@pytest.fixture(params=[True, False], ids=["grep", "python"])
def use_grep(request) -> bool:
    """Every fixture test runs through both prefilters; they must agree."""
    return request.param
