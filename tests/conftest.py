"""Fixtures shared across the test folders."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

# A small user tree (`--trees`) for signature tests: one node, `quota`, of an in-house launcher;
# each test gives the signatures it declares (YAML list items, indented under `signatures:`).
OUR_STACK = """\
id: our-stack
title: Our launcher
summary: Failures of our in-house launcher.
start: quota
nodes:
  quota:
    fix: Ask for more GPU quota
    why: Our scheduler refuses jobs above the team's quota.
    steps:
      - do: See the quota.
        code: ourctl quota show
    signatures:
{signatures}"""


@pytest.fixture
def user_tree(tmp_path: Path) -> Callable[[str], Path]:
    """Writes the folder `user/` holding `our-stack.yaml` with the signatures given; returns the
    folder (what `--trees` takes)."""

    def write(signatures: str) -> Path:
        folder = tmp_path / "user"
        folder.mkdir()
        (folder / "our-stack.yaml").write_text(OUR_STACK.replace("{signatures}", signatures))
        return folder

    return write


@pytest.fixture
def fed_in_linear_time() -> Callable[[Callable[[int], str]], None]:
    """Asserts that the loss readers read one long line in linear time: `line(repeats)` builds
    the line, fed at 1000 and 4000 repeats (best of 5 each); linear is about 4x for 4x the line,
    quadratic about 16x, and 9x is a generous bound between them (a ratio, no time budget)."""

    def check(line: Callable[[int], str]) -> None:
        import time

        from trainmedic.triage.loss import LossTracker

        def cost(repeats: int) -> float:
            text = line(repeats)
            best = float("inf")
            for _ in range(5):
                tracker = LossTracker()
                start = time.perf_counter()
                tracker.feed(text, 1)
                best = min(best, time.perf_counter() - start)
            return best

        small, large = cost(1000), cost(4000)
        assert large < 9 * max(small, 1e-5), (small, large)

    return check
