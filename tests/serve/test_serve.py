"""`trainmedic serve`: the missing extra, the address checks and warning, the quoted app command,
and the app walked to a fix in headless Chromium (see chromium_cdp.py for how the page is read)."""

from __future__ import annotations

import importlib.util
import os
import shlex
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from chromium_cdp import Chromium, ProtocolError, find_chromium, wait_until

from trainmedic.commands.serve import app_command, exposure_warning, is_loopback, public_url

ROOT = Path(__file__).resolve().parents[2]
FIXTURE_TREES = ROOT / "tests" / "fixtures" / "serve"
HAS_WEB = importlib.util.find_spec("textual_serve") is not None
needs_web = pytest.mark.skipif(not HAS_WEB, reason="textual-serve is not installed "
                               "(pip install -e '.[web]'); `trainmedic serve` cannot start")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def trainmedic(*args: str, env: dict[str, str] | None = None, prelude: str = "",
               ) -> subprocess.CompletedProcess[str]:
    code = f"{prelude}\nimport sys\nfrom trainmedic.cli import main\nsys.exit(main({list(args)!r}))"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, env={**os.environ, **(env or {})},
                          timeout=60)


def start_server(tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    """`trainmedic serve ARGS` with its state and caches in tmp_path."""
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state"),
           "XDG_CACHE_HOME": str(tmp_path / "cache"), "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen([sys.executable, "-m", "trainmedic", "serve", *args],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path,
                            start_new_session=True)


def listening(port: int, server: subprocess.Popen[str]) -> bool:
    if server.poll() is not None:
        out, err = server.communicate()
        raise AssertionError(f"serve exited with {server.returncode}:\n{out}\n{err}")
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def stop(server: subprocess.Popen[str]) -> tuple[str, str]:
    """SIGTERM (textual-serve shuts down gracefully on it) and the output so far."""
    if server.poll() is None:
        server.terminate()
    try:
        return server.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, 9)
        return server.communicate()


# -- without a browser ----------------------------------------------------------------------------
def test_without_the_web_extra_serve_says_how_to_install_it() -> None:
    result = trainmedic("serve", prelude="import sys; sys.modules['textual_serve'] = None")
    assert result.returncode == 2
    assert result.stderr == ("trainmedic: error: `trainmedic serve` needs the web extra: "
                             "pip install 'trainmedic[web]'\n")


@needs_web
def test_a_port_in_use_is_one_line_and_exit_2() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = trainmedic("serve", "--port", str(port))
    assert result.returncode == 2
    assert result.stderr == (f"trainmedic: error: cannot listen on 127.0.0.1:{port}: "
                             "Address already in use\n")


@needs_web
@pytest.mark.parametrize(("args", "message"), [
    (["--port", "70000"], "--port 70000: give a port from 1 to 65535"),
    (["--trees", "no/such/folder"], "no/such/folder: no such file or folder"),
    (["--public-url", "gpu01:8000"], "--public-url gpu01:8000: give an http:// or https:// URL"),
])
def test_bad_arguments_are_one_line_and_exit_2(args: list[str], message: str) -> None:
    result = trainmedic("serve", *args)
    assert result.returncode == 2
    assert result.stderr == f"trainmedic: error: {message}\n"


def test_loopback_addresses() -> None:
    assert all(map(is_loopback, ["127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost"]))
    assert not any(map(is_loopback, ["0.0.0.0", "::", "", "10.0.0.5", "gpu-login-01"]))


def test_the_url_names_this_machine_when_listening_everywhere() -> None:
    assert public_url("127.0.0.1", 8000) == "http://127.0.0.1:8000"
    assert public_url("::1", 8001) == "http://[::1]:8001"
    assert public_url("0.0.0.0", 8002) == f"http://{socket.gethostname()}:8002"


def test_the_warning_says_who_can_use_it_and_what_the_probes_read() -> None:
    warning = exposure_warning("0.0.0.0", 8000, "login01")
    assert warning.startswith("trainmedic: warning: listening on 0.0.0.0, beyond this machine")
    assert "anyone who can reach port 8000 can use the app, with no login" in warning
    assert "probes read this machine (login01" in warning
    assert "ssh -L 8000:127.0.0.1:8000 login01" in warning


def test_the_app_command_is_this_python_and_quotes_hostile_folder_names(tmp_path) -> None:
    hostile = tmp_path / "a b;$(touch pwned)'\""
    command = app_command([str(hostile), "relative dir"])
    assert shlex.split(command) == [sys.executable, "-m", "trainmedic", f"--trees={hostile}",
                                    f"--trees={Path('relative dir').resolve()}"]


@needs_web
def test_beyond_loopback_it_warns_and_prints_a_url_a_browser_can_open(tmp_path) -> None:
    port = free_port()
    server = start_server(tmp_path, "--host", "0.0.0.0", "--port", str(port))
    try:
        wait_until(lambda: listening(port, server), 60, "the server listening")
    finally:
        out, err = stop(server)
    assert err.startswith("trainmedic: warning: listening on 0.0.0.0, beyond this machine")
    assert f"serving the app at http://{socket.gethostname()}:{port}" in out


# -- in Chromium ----------------------------------------------------------------------------------
@pytest.fixture
def browser(tmp_path) -> Iterator[Chromium]:
    executable = find_chromium()
    if executable is None:
        pytest.skip("Chromium not found (Debian: apt-get install chromium; or set "
                    "TRAINMEDIC_CHROMIUM to a Chromium or Chrome binary)")
    chromium = Chromium(executable, tmp_path / "profile")
    try:
        try:
            chromium.send("Browser.getVersion", session=False, timeout=60)
        except ProtocolError:  # a snap stub in a container, say: as good as missing
            pytest.skip(f"{executable} does not start a headless browser here:\n"
                        f"{chromium.stderr_tail()[-800:]}")
        yield chromium
    finally:
        chromium.close()


@needs_web
def test_the_app_in_a_browser_walks_a_tree_to_a_fix(tmp_path, browser: Chromium) -> None:
    # The tree folder's name needs quoting in the shell command textual-serve runs: if it were
    # not quoted, the app would not find the drill tree (or a file named pwned would appear).
    trees = tmp_path / "my trees; $(touch pwned)"
    shutil.copytree(FIXTURE_TREES, trees)
    port = free_port()
    server = start_server(tmp_path, "--port", str(port), "--trees", str(trees))
    try:
        wait_until(lambda: listening(port, server), 60, "the server listening")
        browser.open(f"http://127.0.0.1:{port}/")
        home = browser.wait_for_text("browser-drill", "type to filter trees")
        assert f"probes run on {socket.gethostname()} (served)" in home
        browser.focus_terminal()
        browser.type("browser-drill")
        browser.wait_for_text("/ browser-drill")
        browser.press("enter")
        browser.wait_for_text("Which rank printed the first error?", "1  Rank zero")
        browser.press("1")
        browser.wait_for_text("Did it happen at the first iteration?")
        browser.press("2")
        fix = browser.wait_for_text("Compare the failing iteration with the one before")
        assert "tail -n 50 rank0.log" in fix
        assert "seen › zero › later" in fix
    finally:
        out, err = stop(server)
    assert server.returncode == 0, err  # stopped by SIGTERM with a session open, not killed
    assert f"trainmedic: serving the app at http://127.0.0.1:{port}" in out
    assert "Traceback" not in out + err
    assert not list(tmp_path.rglob("pwned"))
