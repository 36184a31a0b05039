"""Shared helpers for the triage tests."""

from __future__ import annotations

from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "triage"


@pytest.fixture(params=[True, False], ids=["grep", "python"])
def use_grep(request, monkeypatch) -> bool:
    """Every fixture test runs through both prefilters (grep even for tiny files); they agree."""
    from trainmedic.triage import sources

    if request.param:
        if sources.grep_available() is None:
            pytest.skip("grep not installed")
        monkeypatch.setattr(sources, "GREP_MIN_BYTES", 0)
    return request.param
