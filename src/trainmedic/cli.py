"""Argument parsing and dispatch only.

Each subcommand lives in `trainmedic.commands.<name>` with `add_arguments(parser)` and
`run(args) -> int`; a command that passes another program's flags through verbatim (`memory`,
`preflight`) also has `split_argv(argv) -> (ours, passthrough)`, and gets `args.passthrough`.
Only the chosen command's module is imported, so `lint`, `probe`, `triage`, `export` and
`memory` never pay for Textual (or for each other).

Exit codes: 0 fine, 1 a check found problems, 2 bad usage or unreadable input (always one
line on stderr, never a usage block). A reader that closes the pipe early (`| head -1`) is not
an error: the command stops quietly with 0.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
import os
import sys
from collections.abc import Sequence
from types import ModuleType, TracebackType
from typing import Any, NoReturn

from trainmedic import __version__, children
from trainmedic.commands import interactive_terminal
from trainmedic.errors import TrainmedicError, UsageError

# name -> (module under trainmedic.commands, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "walk": ("walk", "walk one tree (TUI, --plain prompts, or --answers 1,3,2)"),
    "lint": ("lint", "validate the built-in trees or the given files/folders"),
    "export": ("export", "export a tree as a Markdown runbook, Mermaid or JSON"),
    "probe": ("probe", "run probes locally or on every node of a Slurm allocation"),
    "triage": ("triage", "scan training logs and name the tree and node to continue from"),
    "memory": ("memory", "theoretical per-GPU memory of a Megatron-style configuration"),
    "preflight": ("preflight", "check a launch script before it burns GPU hours"),
    "report": ("report", "the Markdown incident report of a saved walk"),
    "drill": ("drill", "incident drills: find the cause in a real log, then compare"),
    "schema": ("schema", "print the JSON Schema of the tree format"),
    "serve": ("serve", "the app in a web browser (needs the web extra)"),
    "completion": ("completion", "print the shell completion script for bash, zsh or fish"),
}
# Commands that end soon after they start, holding data that grows only with their input (the
# trees, one configuration), writing their files whole and leaving no child running. Run as the
# program, they run without the cyclic garbage collector (reference counting still frees what
# they drop; the collector's passes were 10-20 ms of `lint`) and end without the interpreter's
# teardown (`_end_now`).
SHORT_LIVED = frozenset({"lint", "memory"})
# Commands left out of --help: the completion scripts call `__complete KIND PREFIX`.
HIDDEN_COMMANDS: dict[str, tuple[str, str]] = {
    "__complete": ("complete", "print completion candidates (for the completion scripts)"),
}


def _terminal_columns() -> int:
    """`shutil.get_terminal_size().columns`, without importing shutil (with bz2, lzma and zlib
    behind it: a twentieth of `trainmedic memory`'s run; argparse asks at every argument added)."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    stdout = sys.__stdout__
    if columns <= 0 and stdout is not None:
        try:
            columns = os.get_terminal_size(stdout.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


class _Formatter(argparse.HelpFormatter):
    """argparse's help layout at the width argparse would choose (`_terminal_columns`)."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        super().__init__(prog, indent_increment, max_help_position,
                         _terminal_columns() - 2 if width is None else width)


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors: `trainmedic: error: MESSAGE (see `PROG --help`)`, exit 2,
    no usage block (the contract promises one line)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:  # Any: argparse's own signature
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see `{self.prog} --help`)")


def _top_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="trainmedic",
        description="Troubleshoot distributed training: decision trees, probes, log triage.",
        epilog="Without a command, the TUI opens at the home screen.",
    )
    parser.add_argument("--version", action="version", version=f"trainmedic {__version__}")
    parser.add_argument(
        "--trees", action="append", default=[], metavar="DIR",
        help="add a folder of user trees (repeatable)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (_module, help_text) in COMMANDS.items():
        sub.add_parser(name, help=help_text, add_help=False)
    return parser


def _command(name: str) -> ModuleType:
    module_name, _help = COMMANDS.get(name) or HIDDEN_COMMANDS[name]
    return importlib.import_module(f"trainmedic.commands.{module_name}")


def _command_parser(name: str, module: ModuleType) -> argparse.ArgumentParser:
    _module, help_text = COMMANDS.get(name) or HIDDEN_COMMANDS[name]
    parser = Parser(prog=f"trainmedic {name}", description=help_text)
    parser.add_argument(
        "--trees", action="append", default=[], metavar="DIR",
        help="add a folder of user trees (repeatable)",
    )
    module.add_arguments(parser)
    parser.set_defaults(_run=module.run)
    return parser


def parsers() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The top parser and every command's own: the completion scripts are generated from them."""
    return _top_parser(), {name: _command_parser(name, _command(name)) for name in COMMANDS}


def _served_in_browser() -> bool:
    """textual-serve runs the app over pipes with its web driver: no terminal, and none needed."""
    return os.environ.get("TEXTUAL_DRIVER", "") == "textual.drivers.web_driver:WebDriver"


def _split(argv: list[str]) -> tuple[list[str], str | None, list[str]]:
    """Split global options (before the command) from the command and its own arguments."""
    head: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in COMMANDS or arg in HIDDEN_COMMANDS:
            return head, arg, argv[i + 1 :]
        head.append(arg)
        if arg == "--trees" and i + 1 < len(argv):
            head.append(argv[i + 1])
            i += 1
        i += 1
    return head, None, []


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line `argv` (default: this program's own, `sys.argv[1:]`)."""
    if argv is not None:
        return _main(list(argv), as_program=False)
    code = _main(sys.argv[1:], as_program=True)
    if _split(sys.argv[1:])[1] in SHORT_LIVED and sys.gettrace() is None \
            and sys.getprofile() is None:  # not under coverage, a debugger or a profiler
        _end_now(code)
    return code


def _end_now(code: int) -> NoReturn:
    """End a short-lived command at once, as mypy does: flush what it printed and skip the
    interpreter's teardown, which frees every object one by one (about 40 ms of CPU after
    `lint`, as much as all its checks) where the system reclaims the whole process at once."""
    children.shutdown(0.0)  # the atexit hook's work (the GPU probe's nvidia-smi has ended)
    try:
        sys.stdout.flush()
    except BrokenPipeError:  # a reader that stopped early is not an error
        code = 0
    except OSError as exc:  # a full disk behind `> file`: said, as the teardown would not
        _error(f"cannot write the output: {exc.strerror or exc}")
        code = 2
    with contextlib.suppress(OSError):
        sys.stderr.flush()
    os._exit(code)


def _main(argv: list[str], *, as_program: bool) -> int:
    head, command, rest = _split(argv)
    children.install_signal_handlers()  # SIGTERM/SIGHUP/SIGINT end every child group started
    if as_program and command in SHORT_LIVED:
        gc.disable()  # see SHORT_LIVED; a caller in the same process (a test) keeps its collector
    try:
        # the top parser only reads options given before the command (or opens the app)
        top = (_top_parser().parse_args(head) if head or command is None
               else argparse.Namespace(trees=[]))
        if command is None:
            if not interactive_terminal() and not _served_in_browser():
                return main([*head, "walk", "triage"])  # as `walk TREE | cat`
            from trainmedic.tui.start import run_home

            return run_home(trees=top.trees)
        module = _command(command)
        parser = _command_parser(command, module)
        split = getattr(module, "split_argv", None)  # the optional hook, see the docstring
        ours, passthrough = split(rest) if split is not None else (rest, [])
        args = parser.parse_args(ours)
        args.passthrough = passthrough
        args.trees = list(top.trees) + list(args.trees)
        args.parsers = parsers  # what `completion` reads; a function, so no one else pays for it
        return int(args._run(args) or 0)
    except TrainmedicError as exc:
        _error(str(exc))
        return exc.exit_code
    except BrokenPipeError:
        # `trainmedic export oom | head` must not print a traceback.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except OSError as exc:  # a file or folder the command did not expect to fail: one line
        _error(f"{exc.filename}: {exc.strerror}" if exc.filename and exc.strerror else str(exc))
        return 2
    except KeyboardInterrupt:
        # a probe's hung nvidia-smi, the ssh fan-out; children may start again afterwards only
        # because tests run the command line inside one process
        children.shutdown(children.SIGNAL_GRACE_S, final=False)
        print("trainmedic: interrupted", file=sys.stderr)
        return 130
    except SystemExit as exc:
        # Rich meets a closed pipe by pointing stdout at /dev/null and exiting 1, which would
        # read as "a check found problems"; a reader that stopped early is not a failure.
        if _from_rich_broken_pipe(exc.__traceback__):
            return 0
        raise


def _error(message: str) -> None:
    """The one line a failed command ends with. It often quotes input (a file name, a word of a
    script, a saved walk's id): redacted, and on one line with control characters visible.
    `FILE:LINE: error: ...` says "error:" itself: not twice."""
    from trainmedic.redact import redact_text
    from trainmedic.textsafe import inert_line

    message = inert_line(redact_text(message))
    print(f"trainmedic: {message}" if "error:" in message else f"trainmedic: error: {message}",
          file=sys.stderr)


def _from_rich_broken_pipe(tb: TracebackType | None) -> bool:
    """The SystemExit was raised by Rich's `Console.on_broken_pipe`."""
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and tb.tb_frame.f_code.co_name == "on_broken_pipe" \
        and "rich" in tb.tb_frame.f_code.co_filename
