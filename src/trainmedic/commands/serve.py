"""`trainmedic serve`: the app in a web browser, through textual-serve (the `web` extra).

Each browser tab gets its own copy of the app, started on this machine as
`<this python> -m trainmedic [--trees DIR ...]`, so its probes read this machine: the app says
so, and binding beyond loopback prints a warning. Nothing heavy is imported before the command
runs (`serve --help` stays instant), and Textual itself only ever loads in the app processes.
"""

from __future__ import annotations

import argparse
import os
import shlex
import socket
import sys
from typing import Any, ClassVar

from trainmedic.errors import UsageError
from trainmedic.tui.served import SERVED_ON_ENV

INSTALL_HINT = "`trainmedic serve` needs the web extra: pip install 'trainmedic[web]'"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default=DEFAULT_HOST, metavar="ADDRESS",
                        help=f"address to listen on (default: {DEFAULT_HOST}, this machine only; "
                             "0.0.0.0 for every interface, with a warning)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, metavar="PORT",
                        help=f"port to listen on (default: {DEFAULT_PORT})")
    parser.add_argument("--public-url", metavar="URL",
                        help="the address browsers use, where it differs from the one listened "
                             "on (a reverse proxy, a tunnel to another port)")


def is_loopback(host: str) -> bool:
    """Only this machine can connect: `localhost`, 127.0.0.0/8 or ::1."""
    import ipaddress

    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _is_unspecified(host: str) -> bool:
    """0.0.0.0, :: or "": every interface, an address no browser can open."""
    import ipaddress

    if not host:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_unspecified
    except ValueError:
        return False


def public_url(host: str, port: int) -> str:
    """The URL to print and to give the page for its websocket: the server's host name when
    listening on every interface, IPv6 literals in brackets."""
    name = socket.gethostname() if _is_unspecified(host) else host.strip("[]")
    if ":" in name:
        name = f"[{name}]"
    return f"http://{name}:{port}"


def exposure_warning(host: str, port: int, server_name: str) -> str:
    return (f"trainmedic: warning: listening on {host or 'every interface'}, beyond this "
            f"machine: anyone who can reach port {port} can use the app, with no login, and its "
            f"probes read this machine ({server_name}: GPUs, processes, environment, kernel "
            f"log). The default {DEFAULT_HOST} with an SSH tunnel "
            f"(ssh -L {port}:{DEFAULT_HOST}:{port} {server_name}) keeps it private.")


def app_command(trees: list[str]) -> str:
    """The shell command textual-serve runs for each browser session: this Python, quoted.

    textual-serve takes a string and runs it through a shell, so every part is quoted; tree
    folders are made absolute (and passed as `--trees=DIR`, so no folder name reads as an
    option).
    """
    argv = [sys.executable, "-m", "trainmedic"]
    argv += [f"--trees={os.path.abspath(folder)}" for folder in trees]
    return shlex.join(argv)


def _check_address(host: str, port: int) -> None:
    """Fail before serving (one line, exit 2) when the address cannot be listened on."""
    if not 1 <= port <= 65535:
        raise UsageError(f"--port {port}: give a port from 1 to 65535")
    try:
        infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM,
                                   flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise UsageError(f"--host {host}: {exc.strerror}") from None
    family, kind, proto, _name, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror}") from None


def run(args: argparse.Namespace) -> int:
    import asyncio
    import importlib.util
    import logging

    if importlib.util.find_spec("textual_serve") is None:
        raise UsageError(INSTALL_HINT)
    try:
        from textual_serve.server import Server
    except ImportError as exc:  # installed but broken (a missing aiohttp, say)
        raise UsageError(f"{INSTALL_HINT} ({exc})") from None

    from trainmedic.trees import load_forest_or_fail

    if args.public_url and not args.public_url.startswith(("http://", "https://")):
        # the page derives its websocket address from it (ws:// or wss://)
        raise UsageError(f"--public-url {args.public_url}: give an http:// or https:// URL")
    load_forest_or_fail(args.trees)  # a broken tree: one line here, not a blank browser page
    _check_address(args.host, args.port)
    server_name = socket.gethostname()
    url = args.public_url or public_url(args.host, args.port)
    if not is_loopback(args.host):
        print(exposure_warning(args.host, args.port, server_name), file=sys.stderr)
    os.environ[SERVED_ON_ENV] = server_name  # each app process inherits it: "probes run on"

    class TrainmedicServer(Server):
        """textual-serve's server with our start-up lines and a prompt stop."""

        sessions: ClassVar[set[asyncio.Task[object]]] = set()

        async def on_startup(self, app: object) -> None:
            """Our two lines instead of textual-serve's banner (which shows the command), and
            no line per HTTP request."""
            logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
            print(f"trainmedic: serving the app at {url}  (Ctrl+C stops it)")
            print(f"trainmedic: each browser tab runs its own copy here; probes read "
                  f"{server_name}", flush=True)

        async def handle_websocket(self, request: Any) -> Any:
            task = asyncio.current_task()
            assert task is not None
            self.sessions.add(task)
            try:
                return await super().handle_websocket(request)
            finally:
                self.sessions.discard(task)

        async def on_shutdown(self, app: object) -> None:
            """End every browser session now: its app quits and its page says so. Otherwise
            aiohttp waits up to a minute for open websockets before it stops."""
            for task in list(self.sessions):
                task.cancel()

    server = TrainmedicServer(app_command(args.trees), host=args.host, port=args.port,
                              title="trainmedic", public_url=url)
    try:
        server.serve()
    except OSError as exc:
        raise UsageError(f"cannot listen on {args.host}:{args.port}: "
                         f"{exc.strerror or exc}") from None
    return 0
