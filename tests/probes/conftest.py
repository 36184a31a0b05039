"""Fake executables on PATH for the probe tests."""

from __future__ import annotations

import stat
from collections.abc import Callable
from pathlib import Path

import pytest


@pytest.fixture
def fakebin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[str, str], Path]:
    """Make `name` a shell script with `body` and put only the fake bin folder on PATH.

    Scripts must call real tools by absolute path (/bin/cat, /bin/sleep): PATH holds nothing
    else, so a real dmesg or nvidia-smi on the test machine can never answer.
    """
    folder = tmp_path / "bin"
    folder.mkdir()
    monkeypatch.setenv("PATH", str(folder))

    def make(name: str, body: str, *, executable: bool = True) -> Path:
        path = folder / name
        path.write_text("#!/bin/sh\n" + body + "\n")
        mode = path.stat().st_mode
        path.chmod(mode | stat.S_IXUSR if executable else mode & ~0o111)
        return path

    return make
