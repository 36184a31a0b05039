"""Every child process trainmedic starts: its own process group, a deadline, and no survivors.

One policy for the probes' tools (`nvidia-smi`, `dmesg`, ...), the fan-out's ssh/srun/pdsh, the
triage grep and the Slurm and git queries:

- A child starts in a session of its own (`spawn`), so stopping it stops what it started too
  (srun's helpers, ssh's proxies, a wrapper script's `sleep`), and the terminal's Ctrl-C reaches
  only trainmedic, which then decides.
- At its deadline a child's whole group is stopped (`run`, `deadline`): SIGKILL at once, or
  SIGTERM first with a grace period for a child that must clean up (srun cancels its step).
- Every live child is registered. When trainmedic ends (normally, on Ctrl-C, SIGTERM from
  `timeout` or scancel, SIGHUP from a dropped SSH connection), every registered group is stopped
  (`shutdown`, from the signal handlers of `install_signal_handlers`, the command line's Ctrl-C
  and an atexit hook), so no `nvidia-smi` or ssh session is left behind with PPID 1. A child that
  is being started at that moment is waited for and stopped too. Only SIGKILL of trainmedic
  itself can leave one, and nothing can prevent that.

Ground floor: imports nothing of trainmedic.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    import subprocess
# `subprocess` itself is imported where a child is started or stopped: every command imports
# this module at start-up (the signal handlers), most never start a child.
DEVNULL = -3  # subprocess.DEVNULL

OUTPUT_LIMIT = 16 << 20  # bytes of stdout (and of stderr) `run` keeps; a tool that prints more
TERM_GRACE_S = 3.0  # how long a child asked to stop (SIGTERM) may take before SIGKILL
REAP_S = 0.5  # a child stuck in the kernel (D state) cannot die at once: do not wait longer
SIGNAL_GRACE_S = 1.0  # stopping everything on SIGTERM/SIGHUP: ssh and srun need less than this

_live: dict[int, subprocess.Popen[Any]] = {}  # pid -> child, while it may still run
_lock = threading.RLock()  # re-entrant: a signal handler runs in whichever thread holds it
_stopping = False  # trainmedic is ending: start nothing new
_starting = 0  # children between fork and registration (any thread)
_main_starting = False  # the main thread is starting one: its signals wait until it is known
_deferred: list[int] = []  # signals that arrived meanwhile


@dataclass
class Finished:
    """What `run` got from a child: output (bytes), exit status, and whether time ran out."""

    stdout: bytes
    stderr: bytes
    returncode: int | None  # None when it was stopped at the deadline
    timed_out: bool
    duration_s: float


def spawn(argv: Sequence[str], *, stdin: int | IO[Any] | None = DEVNULL,
          env: dict[str, str] | None = None, text: bool = False) -> subprocess.Popen[Any]:
    """Start `argv` (never through a shell) in its own session, stdout and stderr piped, and
    register it. OSError when it cannot start (or when trainmedic is ending)."""
    import subprocess

    global _starting, _main_starting
    if _stopping:
        raise OSError("trainmedic is stopping")
    _install_atexit()
    main = threading.current_thread() is threading.main_thread()
    with _lock:  # from here until it is registered, ending trainmedic waits for this child
        _starting += 1
        _main_starting = _main_starting or main
    try:
        proc: subprocess.Popen[Any] = subprocess.Popen(
            list(argv), stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
            start_new_session=True, text=text, errors="replace" if text else None,
        )
        with _lock:
            _live[proc.pid] = proc
    finally:
        with _lock:
            _starting -= 1
            if main:
                _main_starting = False
        if main and _deferred:  # a signal came while this child was unknown: act on it now
            _on_signal(_deferred.pop(0), None)
    if _stopping:  # trainmedic began to end while it started
        stop(proc)
    return proc


def release(proc: subprocess.Popen[Any]) -> None:
    """Forget a child that has ended (its group is not signalled any more)."""
    with _lock:
        _live.pop(proc.pid, None)


def _signal_group(proc: subprocess.Popen[Any], sig: int) -> bool:
    """Signal the child's process group; False when there is nothing left to signal."""
    try:
        os.killpg(proc.pid, sig)
        return True
    except ProcessLookupError:
        return False
    except OSError:  # not ours any more (EPERM): at least the child itself
        with contextlib.suppress(OSError):
            proc.send_signal(sig)
        return False


def stop(proc: subprocess.Popen[Any], grace: float = 0.0) -> None:
    """Stop the child's whole group: SIGTERM and up to `grace` seconds to end (when `grace`),
    then SIGKILL; reap it if it dies within REAP_S, and forget it."""
    import subprocess

    try:
        if grace > 0 and _signal_group(proc, signal.SIGTERM):
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=grace)
        # The group may outlive its leader (a wrapper's `sleep`): killed even when it exited.
        _signal_group(proc, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired, OSError):
            proc.wait(timeout=REAP_S)
    finally:
        release(proc)


def stop_all(grace: float = 0.0) -> None:
    """Stop every registered child's group: SIGTERM to all first (when `grace`), then, after
    at most `grace` seconds, SIGKILL to what is left."""
    with _lock:
        live = list(_live.values())
    if not live:
        return
    import subprocess  # already imported: a child was started

    if grace > 0:
        for proc in live:
            _signal_group(proc, signal.SIGTERM)
        end = time.monotonic() + grace
        for proc in live:
            with contextlib.suppress(subprocess.TimeoutExpired, OSError):
                proc.wait(timeout=max(0.0, end - time.monotonic()))
    for proc in live:
        stop(proc)


def shutdown(grace: float = SIGNAL_GRACE_S, *, final: bool = True) -> None:
    """Stop every child for good: nothing new starts, every registered group is stopped, and
    a child another thread is starting at this very moment is waited for (up to a second)
    and stopped too. `final=False` lets children start again afterwards (the process goes
    on: a command line run inside a test)."""
    global _stopping
    _stopping = True
    try:
        stop_all(grace)
        end = time.monotonic() + 1.0
        while _starting and time.monotonic() < end:
            time.sleep(0.01)
        stop_all()
    finally:
        _stopping = final


def running() -> list[int]:
    """The process ids of the registered children (for tests and diagnostics)."""
    with _lock:
        return [pid for pid, proc in _live.items() if proc.poll() is None]


def _collect(stream: IO[bytes], limit: int, sink: list[bytes]) -> None:
    """Read a pipe to its end, keeping at most `limit` bytes: a tool that prints without end
    (garbage, `yes`) costs time until its deadline, never memory."""
    kept = 0
    with contextlib.suppress(OSError, ValueError):
        while chunk := os.read(stream.fileno(), 1 << 16):
            if kept < limit:
                sink.append(chunk[: limit - kept])
                kept += len(sink[-1])
    with contextlib.suppress(OSError):
        stream.close()


def run(argv: Sequence[str], timeout: float, *, env: dict[str, str] | None = None,
        grace: float = 0.0, limit: int = OUTPUT_LIMIT) -> Finished:
    """Run `argv` to its end or for at most `timeout` seconds, keeping at most `limit` bytes of
    each output. OSError when it cannot start; KeyboardInterrupt (and anything else) stops it
    before propagating."""
    import subprocess

    started = time.monotonic()
    proc = spawn(argv, env=env)
    out: list[bytes] = []
    err: list[bytes] = []
    readers = [threading.Thread(target=_collect, args=(pipe, limit, sink), daemon=True)
               for pipe, sink in ((proc.stdout, out), (proc.stderr, err))]
    for reader in readers:
        reader.start()
    end = started + timeout
    try:
        proc.wait(timeout=timeout)
        for reader in readers:  # the output ends when every process holding the pipes ends
            reader.join(max(0.0, end - time.monotonic()))
        timed_out = any(reader.is_alive() for reader in readers)
    except subprocess.TimeoutExpired:
        timed_out = True
    except BaseException:
        stop(proc)
        raise
    if timed_out:
        stop(proc, grace)
        for reader in readers:  # the pipes close when the group is gone; a child stuck in
            reader.join(REAP_S)  # the kernel may hold them open: then keep what was read
    release(proc)
    return Finished(b"".join(out), b"".join(err), None if timed_out else proc.returncode,
                    timed_out, time.monotonic() - started)


def deadline(proc: subprocess.Popen[Any], seconds: float, grace: float = 0.0) -> threading.Timer:
    """Stop `proc`'s group after `seconds` unless the returned timer is cancelled first (for
    a child whose output is read as it comes)."""
    timer = threading.Timer(seconds, stop, args=(proc, grace))
    timer.daemon = True
    timer.start()
    return timer


# -- ending trainmedic --------------------------------------------------------------------------

_atexit_installed = False
_handled: dict[int, Any] = {}  # signal -> the handler it had before ours


def _install_atexit() -> None:
    global _atexit_installed
    if not _atexit_installed:
        _atexit_installed = True
        atexit.register(shutdown, 0.0)


def _on_signal(signum: int, _frame: object) -> None:
    """SIGTERM/SIGHUP: stop every child group, then end as the signal asks (its default
    action, so the exit status still says which signal it was). SIGINT: KeyboardInterrupt,
    which the command line answers with `shutdown`. Either waits while the main thread is
    between starting a child and registering it, so that child is stopped too."""
    if _main_starting:
        _deferred.append(signum)
        return
    previous = _handled.get(signum, signal.SIG_DFL)
    if signum == signal.SIGINT:
        if callable(previous) and previous is not _on_signal:
            previous(signum, _frame)  # Python's own: KeyboardInterrupt
            return
        raise KeyboardInterrupt
    shutdown(SIGNAL_GRACE_S)
    if callable(previous) and previous is not _on_signal:
        previous(signum, _frame)
        return
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def install_signal_handlers() -> None:
    """Stop every child when trainmedic is told to end (SIGTERM, SIGHUP); Ctrl-C stays a
    KeyboardInterrupt, which the command line answers with `shutdown`. Call from the main
    thread; a signal the user set to be ignored (`nohup`) stays ignored."""
    if threading.current_thread() is not threading.main_thread():
        return
    for name in ("SIGTERM", "SIGHUP", "SIGINT"):
        sig = getattr(signal, name, None)
        if sig is None or sig in _handled:
            continue
        previous = signal.getsignal(sig)
        if previous is signal.SIG_IGN:
            continue
        _handled[sig] = previous
        signal.signal(sig, _on_signal)
