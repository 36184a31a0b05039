"""Issue 20 class 5 (F5, F6, F15): faults are visible, never silent, never a traceback.

A walk that cannot be saved (full disk, read-only or unreadable state folder, a file where the
folder should be, a crafted walk id) is said in `--plain` and `--answers` as in the app, and the
command ends with exit 2. A state folder the user cannot read is one line in `report` and
`walk --resume`, and a warning in the app. Two processes continuing one walk never overwrite
each other's steps: the second continues as a copy and says so.
"""

from __future__ import annotations

import errno
import io
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from trainmedic.cli import main

SRC = str(Path(__file__).resolve().parents[2] / "src")
ANSWERS = "1,1"  # oom: a fix after two answers


def _warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if "cannot save the walk" in line]


def _no_space(_tmp_path, monkeypatch):
    """A full disk: writing any temporary file (a walk being saved) fails with ENOSPC."""
    real = os.write

    def full(fd, data):
        if os.readlink(f"/proc/self/fd/{fd}").endswith(".tmp"):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd, data)

    monkeypatch.setattr(os, "write", full)


def _state_is_a_file(tmp_path, _monkeypatch):
    (tmp_path / "state").mkdir(exist_ok=True)
    (tmp_path / "state" / "trainmedic").write_text("not a folder", encoding="utf-8")


CAUSES = {"full-disk": _no_space, "state-is-a-file": _state_is_a_file}


@pytest.mark.skipif(not os.path.exists("/proc/self/fd"), reason="needs /proc")
@pytest.mark.parametrize("cause", sorted(CAUSES))
@pytest.mark.parametrize("mode", ["plain", "answers"])
def test_a_walk_that_cannot_be_saved_says_so_and_exits_2(tmp_path, monkeypatch, capsys,
                                                         cause, mode):
    CAUSES[cause](tmp_path, monkeypatch)
    if mode == "plain":
        monkeypatch.setattr(sys, "stdin", io.StringIO("1\n1\n\n"))
        code = main(["walk", "oom", "--plain", "--no-probes"])
    else:
        code = main(["walk", "oom", "--answers", ANSWERS, "--no-probes"])
    out, err = capsys.readouterr()
    assert code == 2, err
    assert len(_warnings(err)) == 1, err  # said once, not at every step
    assert "Traceback" not in err and "Fix:" in out  # the walk itself went on to its fix


def test_a_crafted_walk_id_is_refused_visibly(tmp_path, capsys):
    crafted = tmp_path / "crafted.json"
    crafted.write_text(json.dumps({"version": 1, "id": "../../x", "tree": "oom",
                                   "current": "oom", "steps": []}), encoding="utf-8")
    code = main(["walk", "--resume", str(crafted), "--answers", ANSWERS, "--no-probes"])
    err = capsys.readouterr().err
    assert code == 2 and "cannot name a file" in _warnings(err)[0], err
    assert not (tmp_path.parent / "x.json").exists()


def test_a_save_that_works_again_clears_the_failure(monkeypatch, capsys):
    from trainmedic.plain import SaveWatch
    from trainmedic.saved_walks import WalkRecord

    calls = []

    def flaky(record):
        calls.append(record)
        if len(calls) == 1:
            raise OSError(errno.ENOSPC, "No space left on device")

    watch = SaveWatch(flaky, sys.stderr)
    watch(WalkRecord(id="w", tree="t", current="t"))
    assert watch.status(0) == 2
    watch(WalkRecord(id="w", tree="t", current="t"))  # the later save holds every step
    assert watch.status(0) == 0 and watch.status(1) == 1


# -- a state folder the user cannot read (made by `sudo trainmedic`) -------------------------------
def _as_user_without_access() -> list[str] | None:
    """How to run a command that the mode bits stop: as is for a normal user; as root only with
    the capabilities that bypass them dropped (setpriv); None when neither is possible."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return None
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search,-fowner"]


@pytest.fixture
def locked_state(tmp_path):
    prefix = _as_user_without_access()
    if prefix is None:
        pytest.skip("root without setpriv: mode bits do not apply")
    walks = tmp_path / "state" / "trainmedic" / "walks"
    walks.mkdir(parents=True)
    (walks / "w1.json").write_text("{}", encoding="utf-8")
    (tmp_path / "state" / "trainmedic").chmod(0o000)
    env = dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state"),
               XDG_CACHE_HOME=str(tmp_path / "cache"), PYTHONPATH=SRC)
    yield prefix, env
    (tmp_path / "state" / "trainmedic").chmod(0o700)


@pytest.mark.parametrize("args", [["report"], ["report", "--list"], ["report", "--json"],
                                  ["walk", "--resume", "--no-probes"],
                                  ["walk", "--resume", "--answers", "1", "--no-probes"]],
                         ids=" ".join)
def test_an_unreadable_state_folder_is_one_line(locked_state, args):
    prefix, env = locked_state
    done = subprocess.run([*prefix, sys.executable, "-m", "trainmedic", *args], env=env,
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert lines[0].startswith("trainmedic: error: ") and "Permission denied" in lines[0]


@pytest.mark.parametrize("mode", ["plain", "answers"])
def test_a_read_only_walks_folder_is_said(locked_state, mode):
    prefix, env = locked_state
    args = ["--plain"] if mode == "plain" else ["--answers", ANSWERS]
    done = subprocess.run([*prefix, sys.executable, "-m", "trainmedic", "walk", "oom", *args,
                           "--no-probes"], env=env, capture_output=True, text=True, timeout=120,
                          input="1\n1\n\n")
    assert done.returncode == 2 and len(_warnings(done.stderr)) == 1, done.stderr
    assert "Permission denied" in done.stderr and "Traceback" not in done.stderr


def test_the_app_starts_over_an_unreadable_state_folder(tmp_path, monkeypatch):
    """In-process (mode bits do not stop root): the walks folder raises as Python 3.11 does."""
    import asyncio

    from trainmedic.state import walks_dir
    from trainmedic.trees import load_forest
    from trainmedic.tui.app import TrainmedicApp

    real = Path.is_dir

    def refuse(self):
        if self == walks_dir():
            raise PermissionError(errno.EACCES, "Permission denied")
        return real(self)

    monkeypatch.setattr(Path, "is_dir", refuse)

    async def go():
        app = TrainmedicApp(load_forest([]), probes=False)
        async with app.run_test(size=(100, 30), notifications=True) as pilot:
            await pilot.pause(0.3)
            return [n.message for n in app._notifications]

    messages = asyncio.run(go())
    assert any("Permission denied" in m for m in messages), messages


# -- two processes, one walk -----------------------------------------------------------------------
def test_two_resumes_of_one_walk_lose_no_step(tmp_path):
    env = dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state"),
               XDG_CACHE_HOME=str(tmp_path / "cache"), PYTHONPATH=SRC)

    def trainmedic(*args, **kwargs):
        return subprocess.Popen([sys.executable, "-m", "trainmedic", *args], env=env,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, **kwargs)

    first = trainmedic("walk", "oom", "--plain", "--no-probes")
    assert first.stdin is not None
    first.stdin.write("1\n")  # one answer: a walk is saved once it holds one (issue 18 F5)
    first.stdin.flush()
    walks = tmp_path / "state" / "trainmedic" / "walks"
    end = time.monotonic() + 60
    while not list(walks.glob("*.json")) and time.monotonic() < end:
        time.sleep(0.05)
    (saved,) = list(walks.glob("*.json"))
    walk_id = saved.stem
    # A still holds the walk (it waits at its first question) when B resumes it
    second = subprocess.run([sys.executable, "-m", "trainmedic", "walk", "--resume", walk_id,
                             "--answers", "1", "--no-probes"], env=env, capture_output=True,
                            text=True, timeout=120)
    _out, err = first.communicate("2\nq\n", timeout=120)
    assert first.returncode == 0, err
    assert second.returncode == 0, second.stderr
    assert "continuing as a copy" in second.stderr
    records = {p.stem: json.loads(p.read_text()) for p in walks.glob("*.json")}
    assert len(records) == 2, records.keys()
    assert [s["answer"] for s in records[walk_id]["steps"]] == [0, 1]  # A's answers "1", "2"
    (copy,) = [r for k, r in records.items() if k != walk_id]
    assert [s["answer"] for s in copy["steps"]] == [0, 0]  # A's "1", then B's "1"
