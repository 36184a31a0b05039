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
