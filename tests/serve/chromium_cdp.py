"""Headless Chromium driven over the DevTools protocol on a pipe, with the standard library only.

`--remote-debugging-pipe` makes Chromium read protocol messages (JSON, each ended by a NUL byte)
on its file descriptor 3 and answer on 4: no chromedriver matching the browser's version, no
debugging port to race for, no websocket client, no Python package to install.

textual-serve paints the terminal with xterm.js on a canvas (its WebGL and canvas add-ons), so the
page has no text in its DOM. A script that runs before the page's own catches the xterm
`Terminal` object as textual-serve's client stores it (`this.terminal = new Terminal(...)`, in a
closure) and keeps it as `window.__trainmedicTerminal`; the screen is then read from xterm's
buffer API, and keys are sent as real key events to xterm's focused textarea.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import queue
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
# Flags that work in a container as root, with no network and no GPU. Every host but this
# machine resolves to "not found" at once: the page's web-font link must not wait on DNS.
FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
    "--remote-debugging-pipe",
)

CATCH_TERMINAL = """
Object.defineProperty(Object.prototype, "terminal", {
  configurable: true,
  get() { return undefined; },
  set(value) {
    Object.defineProperty(this, "terminal",
                          {value, writable: true, configurable: true, enumerable: true});
    if (value && value.buffer && value.options) {
      window.__trainmedicTerminal = value;
      delete Object.prototype.terminal;
    }
  },
});
"""

SCREEN_TEXT = """(() => {
  const t = window.__trainmedicTerminal;
  if (!t) return null;
  const buffer = t.buffer.active, lines = [];
  for (let y = 0; y < t.rows; y++) {
    const line = buffer.getLine(buffer.viewportY + y);
    lines.push(line ? line.translateToString(true) : "");
  }
  return lines.join("\\n");
})()"""

# key name -> (DOM key, DOM code, Windows virtual key code, text it types)
SPECIAL_KEYS = {
    "enter": ("Enter", "Enter", 13, "\r"),
    "escape": ("Escape", "Escape", 27, ""),
    "tab": ("Tab", "Tab", 9, "\t"),
    "backspace": ("Backspace", "Backspace", 8, ""),
    "down": ("ArrowDown", "ArrowDown", 40, ""),
    "up": ("ArrowUp", "ArrowUp", 38, ""),
}


def find_chromium() -> str | None:
    """`$TRAINMEDIC_CHROMIUM`, else the first Chromium or Chrome on PATH."""
    named = os.environ.get("TRAINMEDIC_CHROMIUM")
    if named:
        return shutil.which(named)
    for name in CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    return None


class ProtocolError(RuntimeError):
    """Chromium answered a command with an error, or did not answer in time."""


def wait_until(check: Callable[[], Any], timeout: float, what: str,
               interval: float = 0.1) -> Any:
    """Poll `check` until it returns something true; its last value goes into the error."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        last = check()
        if last:
            return last
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not seen within {timeout:.0f} s; last value:\n{last}")
        time.sleep(interval)


class Chromium:
    """One headless browser process and one page in it."""

    def __init__(self, executable: str, profile: Path, size: tuple[int, int] = (1280, 800)):
        self._to_browser_read, self._to_browser = os.pipe()
        self._from_browser, self._from_browser_write = os.pipe()
        child_in, child_out = self._to_browser_read, self._from_browser_write

        def as_fd_3_and_4() -> None:  # in the child, before exec: the protocol's descriptors
            os.dup2(child_in, 3)
            os.dup2(child_out, 4)

        self.process = subprocess.Popen(
            [executable, *FLAGS, f"--user-data-dir={profile}",
             f"--window-size={size[0]},{size[1]}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            pass_fds=(3, 4), preexec_fn=as_fd_3_and_4, start_new_session=True)
        os.close(child_in)
        os.close(child_out)
        self._next_id = 0
        self._lock = threading.Lock()
        self._waiting: dict[int, queue.Queue[dict[str, Any]]] = {}
        self._stderr: list[bytes] = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._drain_stderr, daemon=True).start()
        self.session: str | None = None

    # -- the protocol -------------------------------------------------------------------------
    def _read(self) -> None:
        pending = b""
        while True:
            try:
                chunk = os.read(self._from_browser, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                break
            pending += chunk
            *messages, pending = pending.split(b"\0")
            for raw in messages:
                message = json.loads(raw)
                waiter = self._waiting.pop(message.get("id", -1), None)
                if waiter is not None:
                    waiter.put(message)
        for waiter in list(self._waiting.values()):  # the browser went away
            waiter.put({"error": {"message": "Chromium closed the protocol pipe"}})

    def _drain_stderr(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self._stderr.append(line)
            del self._stderr[:-40]

    def stderr_tail(self) -> str:
        return b"".join(self._stderr).decode("utf-8", "replace")

    def send(self, method: str, params: dict[str, Any] | None = None, *,
             session: bool = True, timeout: float = 30.0) -> dict[str, Any]:
        with self._lock:
            self._next_id += 1
            message_id = self._next_id
            answer: queue.Queue[dict[str, Any]] = queue.Queue()
            self._waiting[message_id] = answer
            message: dict[str, Any] = {"id": message_id, "method": method,
                                       "params": params or {}}
            if session and self.session:
                message["sessionId"] = self.session
            try:
                os.write(self._to_browser, json.dumps(message).encode() + b"\0")
            except OSError as exc:  # the browser has exited
                self._waiting.pop(message_id, None)
                raise ProtocolError(f"{method}: Chromium is gone ({exc.strerror})") from None
        try:
            reply = answer.get(timeout=timeout)
        except queue.Empty:
            self._waiting.pop(message_id, None)
            raise ProtocolError(f"{method}: no answer within {timeout:.0f} s") from None
        if "error" in reply:
            raise ProtocolError(f"{method}: {reply['error'].get('message')}")
        return reply.get("result", {})

    # -- a page -------------------------------------------------------------------------------
    def open(self, url: str, before_page_scripts: str = CATCH_TERMINAL) -> None:
        """A new page that runs `before_page_scripts` ahead of the page's own, then `url`."""
        target = self.send("Target.createTarget", {"url": "about:blank"}, session=False)
        attached = self.send("Target.attachToTarget",
                             {"targetId": target["targetId"], "flatten": True}, session=False)
        self.session = attached["sessionId"]
        self.send("Page.enable")
        self.send("Page.addScriptToEvaluateOnNewDocument", {"source": before_page_scripts})
        self.send("Page.navigate", {"url": url})

    def evaluate(self, expression: str) -> Any:
        result = self.send("Runtime.evaluate", {"expression": expression,
                                                "returnByValue": True})
        if "exceptionDetails" in result:
            raise ProtocolError(f"page script failed: {result['exceptionDetails'].get('text')}")
        return result.get("result", {}).get("value")

    def screen_text(self) -> str:
        """The terminal's visible lines, as xterm.js holds them ("" before it exists)."""
        return self.evaluate(SCREEN_TEXT) or ""

    def wait_for_text(self, *needles: str, timeout: float = 60.0) -> str:
        """Poll the terminal until every needle is on screen; the screen goes in the error."""
        screen = ""

        def seen() -> bool:
            nonlocal screen
            screen = self.screen_text()
            return all(needle in screen for needle in needles)

        try:
            wait_until(seen, timeout, "the page")
        except TimeoutError:
            raise TimeoutError(f"{needles!r} not on the page within {timeout:.0f} s; the "
                               f"terminal showed:\n{screen}") from None
        return screen

    def focus_terminal(self) -> None:
        self.evaluate("window.__trainmedicTerminal.focus()")

    def press(self, *keys: str) -> None:
        """Key names from SPECIAL_KEYS, or single characters, as a user's key presses."""
        for key in keys:
            if key in SPECIAL_KEYS:
                name, code, vk, text = SPECIAL_KEYS[key]
                down: dict[str, Any] = {"type": "keyDown" if text else "rawKeyDown",
                                        "key": name, "code": code,
                                        "windowsVirtualKeyCode": vk}
                if text:
                    down["text"] = down["unmodifiedText"] = text
            else:
                down = {"type": "keyDown", "key": key, "text": key, "unmodifiedText": key}
                vk = 0
            self.send("Input.dispatchKeyEvent", down)
            self.send("Input.dispatchKeyEvent", {"type": "keyUp", "key": down["key"],
                                                 "code": down.get("code", ""),
                                                 "windowsVirtualKeyCode": vk})

    def type(self, text: str) -> None:
        self.press(*text)

    def screenshot(self, path: Path) -> Path:
        data = self.send("Page.captureScreenshot", {"format": "png"})["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        with contextlib.suppress(ProtocolError):
            self.send("Browser.close", session=False, timeout=5)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, 9)
            self.process.wait()
        for fd in (self._to_browser, self._from_browser):
            with contextlib.suppress(OSError):
                os.close(fd)
