"""Export tests run on the built-in trees as they are at test time, the docs examples, and the
synthesised escaping trees (every character that breaks naive Markdown or Mermaid)."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainmedic.trees import load_forest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "docs" / "examples"
ESCAPING = ROOT / "tests" / "fixtures" / "export"


def _forest(extra, builtin):
    forest = load_forest(extra, builtin=builtin)
    assert forest.trees, "no trees loaded"
    return forest


@pytest.fixture(scope="session")
def builtin_forest():
    return _forest([], True)


@pytest.fixture(scope="session")
def examples_forest():
    return _forest([EXAMPLES], False)


@pytest.fixture(scope="session")
def escaping_forest():
    forest = _forest([ESCAPING], False)
    assert not forest.errors, forest.errors
    return forest


@pytest.fixture(scope="session", params=["builtin", "examples", "escaping"])
def any_forest(request):
    return request.getfixturevalue(f"{request.param}_forest")
