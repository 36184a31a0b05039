"""Issue 20 class 5 (F8): no child process outlives trainmedic.

Real processes throughout: fake `nvidia-smi` and `ssh` executables that hang (each starts a
`sleep` of its own, so a whole process group is at stake), a trainmedic process that receives
SIGTERM, SIGHUP or SIGINT from outside while they hang, and one that sends SIGTERM to itself.
Every child and grandchild must be gone afterwards.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from trainmedic import children

pytestmark = pytest.mark.skipif(os.name != "posix", reason="process groups are POSIX")

SRC = str(Path(__file__).resolve().parents[2] / "src")
# A hung tool: it records its pid and its own child's (a sleep), then waits forever.
HANG = """#!/bin/sh
echo $$ >> "$PIDS"
/bin/sleep 600 &
echo $! >> "$PIDS"
wait
"""


def alive(pid: int) -> bool:
    """Running (a zombie left for an init that does not reap counts as dead)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True


def wait_for_pids(path: Path, count: int, timeout: float = 30.0) -> list[int]:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if path.exists():
            pids = [int(x) for x in path.read_text().split()]
            if len(pids) >= count:
                return pids
        time.sleep(0.05)
    raise AssertionError(f"the fakes did not start: {path.read_text() if path.exists() else ''}")


def none_alive(pids: list[int], timeout: float = 5.0) -> list[int]:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        left = [p for p in pids if alive(p)]
        if not left:
            return []
        time.sleep(0.05)
    return [p for p in pids if alive(p)]


@pytest.fixture
def fakes(tmp_path, monkeypatch):
    """A bin folder with hanging `nvidia-smi` and `ssh`; the environment the trainmedic child
    gets; and the file the fakes write their pids to. Leftovers are killed at the end."""
    folder = tmp_path / "bin"
    folder.mkdir()
    for name in ("nvidia-smi", "ssh"):
        (folder / name).write_text(HANG)
        (folder / name).chmod(0o755)
    pids = tmp_path / "pids"
    env = dict(os.environ, PATH=str(folder), PIDS=str(pids), PYTHONPATH=SRC,
               XDG_STATE_HOME=str(tmp_path / "state"), XDG_CACHE_HOME=str(tmp_path / "cache"))
    monkeypatch.setenv("PIDS", str(pids))
    monkeypatch.setenv("PATH", str(folder))
    yield folder, env, pids
    if pids.exists():
        for pid in (int(x) for x in pids.read_text().split()):
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


def start(env: dict[str, str], *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "trainmedic", *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def test_run_stops_the_whole_group_at_its_deadline(fakes):
    folder, _env, pids = fakes
    done = children.run([str(folder / "nvidia-smi")], 1.0)
    assert done.timed_out and done.returncode is None
    found = wait_for_pids(pids, 2)
    assert none_alive(found) == [], "a grandchild survived the deadline"
    assert children.running() == []


def test_stop_all_ends_every_registered_group(fakes):
    folder, _env, pids = fakes
    procs = [children.spawn([str(folder / "ssh")]) for _ in range(3)]
    found = wait_for_pids(pids, 6)
    assert sorted(children.running()) == sorted(p.pid for p in procs)
    children.stop_all(0.5)
    assert none_alive(found) == []
    assert children.running() == []


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT],
                         ids=["TERM", "HUP", "INT"])
def test_a_signal_during_a_hung_nvidia_smi_leaves_no_child(fakes, sig):
    _folder, env, pids = fakes
    proc = start(env, "probe", "gpu")
    found = wait_for_pids(pids, 2)
    proc.send_signal(sig)
    proc.wait(timeout=20)
    assert none_alive(found) == [], f"left running after {sig.name}"
    if sig == signal.SIGINT:
        assert proc.returncode == 130
        assert proc.stderr is not None and b"interrupted" in proc.stderr.read()
    else:
        assert proc.returncode == -sig  # it still ends as the signal asked


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT],
                         ids=["TERM", "HUP", "INT"])
def test_a_signal_during_probe_nodes_ends_every_ssh_session(fakes, sig):
    _folder, env, pids = fakes
    proc = start(env, "probe", "--nodes", "node[1-3]", "--node-timeout", "300", "--yes")
    found = wait_for_pids(pids, 6)  # three ssh, each with its sleep
    proc.send_signal(sig)
    proc.wait(timeout=20)
    assert none_alive(found) == [], f"ssh sessions left running after {sig.name}"


def test_sigterm_sent_by_trainmedic_to_itself_leaves_no_child(fakes):
    """`os.kill(os.getpid(), SIGTERM)` inside a process running trainmedic's command line."""
    _folder, env, pids = fakes
    code = (
        "import os, signal, threading, time\n"
        "from pathlib import Path\n"
        "from trainmedic.cli import main\n"
        "def later():\n"
        "    path = Path(os.environ['PIDS'])\n"
        "    while not path.exists() or len(path.read_text().split()) < 2:\n"
        "        time.sleep(0.05)\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n"
        "threading.Thread(target=later, daemon=True).start()\n"
        "main(['probe', 'gpu'])\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    proc.wait(timeout=30)
    found = wait_for_pids(pids, 2)
    assert proc.returncode == -signal.SIGTERM
    assert none_alive(found) == []


def test_a_child_cannot_start_once_trainmedic_is_stopping(monkeypatch):
    monkeypatch.setattr(children, "_stopping", True)
    with pytest.raises(OSError, match="stopping"):
        children.spawn(["/bin/true"])


def test_run_keeps_a_bounded_part_of_endless_output(tmp_path):
    endless = tmp_path / "endless"
    endless.write_text("#!/bin/sh\nexec /usr/bin/yes garbage\n")
    endless.chmod(0o755)
    done = children.run([str(endless)], 1.0, limit=1 << 16)
    assert done.timed_out and len(done.stdout) == 1 << 16
    assert done.stdout.startswith(b"garbage\n")


def test_a_daemon_left_holding_the_pipe_is_stopped_at_the_deadline(fakes, tmp_path):
    _folder, _env, pids = fakes
    script = tmp_path / "detach"
    script.write_text('#!/bin/sh\n/bin/sleep 600 &\necho $! >> "$PIDS"\necho started\n')
    script.chmod(0o755)
    done = children.run([str(script)], 1.0)
    assert done.timed_out and done.stdout == b"started\n"
    assert none_alive(wait_for_pids(pids, 1)) == []


def test_a_signal_while_the_main_thread_starts_a_child_waits_until_it_is_known(fakes,
                                                                             monkeypatch):
    folder, _env, _pids = fakes
    real = subprocess.Popen

    def popen(*args, **kwargs):
        proc = real(*args, **kwargs)
        children._on_signal(signal.SIGINT, None)  # Ctrl-C before spawn has registered it
        return proc

    monkeypatch.setattr(subprocess, "Popen", popen)
    with pytest.raises(KeyboardInterrupt):
        children.spawn([str(folder / "nvidia-smi")])
    (pid,) = children.running()  # known before the interrupt went on
    children.shutdown(0.0, final=False)
    assert none_alive([pid]) == [] and children.running() == []


def test_shutdown_waits_for_a_child_another_thread_is_starting(fakes, monkeypatch):
    import threading

    folder, _env, pids = fakes
    real = subprocess.Popen
    forked = threading.Event()

    def slow_popen(*args, **kwargs):
        proc = real(*args, **kwargs)
        forked.set()
        time.sleep(0.3)  # not yet registered when shutdown begins
        return proc

    monkeypatch.setattr(subprocess, "Popen", slow_popen)
    worker = threading.Thread(target=children.spawn, args=([str(folder / "ssh")],))
    worker.start()
    forked.wait(10)
    children.shutdown(0.0, final=False)
    worker.join(10)
    assert none_alive(wait_for_pids(pids, 2)) == [] and children.running() == []
