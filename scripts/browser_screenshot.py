"""Serve the app (`trainmedic serve`), open it in headless Chromium and save a PNG of the page.

    .venv/bin/python scripts/browser_screenshot.py [--out screenshots/browser.png] [--size 1200x640]

Needs the web extra and a Chromium (Debian: `apt-get install chromium`, or TRAINMEDIC_CHROMIUM).
The browser is driven as in the browser test (tests/serve/chromium_cdp.py); saved walks and
caches go to a temporary folder, so the home screen lists the built-in trees only.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "serve"))

from chromium_cdp import Chromium, find_chromium, wait_until  # noqa: E402


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "screenshots" / "browser.png")
    parser.add_argument("--size", default="1200x640", help="browser window, WIDTHxHEIGHT")
    args = parser.parse_args()
    width, height = (int(n) for n in args.size.split("x"))
    executable = find_chromium()
    if executable is None:
        print("browser_screenshot: no Chromium found (apt-get install chromium, or set "
              "TRAINMEDIC_CHROMIUM)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        env = {**os.environ, "XDG_STATE_HOME": f"{tmp}/state", "XDG_CACHE_HOME": f"{tmp}/cache"}
        server = subprocess.Popen([sys.executable, "-m", "trainmedic", "serve", "--port",
                                   str(port)], env=env, stdout=subprocess.DEVNULL)
        browser = Chromium(executable, Path(tmp) / "profile", size=(width, height))
        try:
            def listening() -> bool:
                if server.poll() is not None:
                    raise SystemExit(f"browser_screenshot: serve exited with {server.returncode}")
                with socket.socket() as sock:
                    return sock.connect_ex(("127.0.0.1", port)) == 0

            wait_until(listening, 60, "the server listening")
            browser.open(f"http://127.0.0.1:{port}/")
            browser.wait_for_text("probes run on", "type to filter trees", "questions ·")
            browser.focus_terminal()  # as a click would; the footer's key list follows focus
            browser.wait_for_text("palette")
            args.out.parent.mkdir(parents=True, exist_ok=True)
            browser.screenshot(args.out)
        finally:
            browser.close()
            server.terminate()
            server.wait(timeout=30)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
