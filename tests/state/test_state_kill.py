"""A SIGKILL in the middle of a save leaves the previous walk whole, and the file always parses.

A child process saves a large walk in a tight loop (each save takes long enough to be caught
mid-write); the parent reads the file while it runs and then kills the child at a random moment,
several times. Every read must parse and the counter must never go backwards.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest

from trainmedic.saved_walks import list_walks
from trainmedic.state import walks_dir

WRITER = r"""
import sys
from trainmedic.state import walks_dir, write_json_atomic
start = int(sys.argv[1])
padding = "x" * 400_000
n = start
while True:
    write_json_atomic(walks_dir() / "killed.json",
                      {"version": 1, "id": "killed", "n": n, "padding": padding,
                       "steps": [{"node": "t#q", "answer": 0, "goto": "t#f"}],
                       "updated": "2026-11-29T08:00:00Z"})
    if n == start:
        print("ready", flush=True)
    n += 1
"""

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL (POSIX)")


def _read_n(path) -> int:
    data = json.loads(path.read_text(encoding="utf-8"))  # must always parse
    assert len(data["padding"]) == 400_000
    return data["n"]


def test_sigkill_mid_write_keeps_the_previous_state():
    path = walks_dir() / "killed.json"
    rng = random.Random(8)
    last = -1
    mid_write_kills = 0
    for round_ in range(12):
        if round_ >= 4 and mid_write_kills:
            break
        start = last + 1
        child = subprocess.Popen([sys.executable, "-c", WRITER, str(start)],
                                 stdout=subprocess.PIPE, env=os.environ.copy())
        try:
            assert child.stdout is not None
            assert child.stdout.readline().strip() == b"ready"
            deadline = time.monotonic() + 0.15 + rng.random() * 0.25
            while time.monotonic() < deadline:
                n = _read_n(path)
                assert n >= last, f"round {round_}: went back from {last} to {n}"
                last = n
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait(timeout=10)
        assert child.returncode == -signal.SIGKILL
        temps = [p for p in walks_dir().iterdir() if p.name.endswith(".tmp")]
        mid_write_kills = len(temps)  # a temporary file left behind: the kill hit a write
        n = _read_n(path)
        assert n >= last and n >= start
        last = n
    walks, skipped = list_walks()  # leftover temporary files are not walks
    assert [w.id for w in walks] == ["killed"] and skipped == []
    assert last >= 3
    assert mid_write_kills, "no kill landed in the middle of a write; the test proved nothing"
