"""Argument parsing and dispatch only.

Each subcommand lives in `trainmedic.commands.<name>` with `add_arguments(parser)` and
`run(args) -> int`; a command that passes another program's flags through verbatim (`memory`,
`preflight`) also has `split_argv(argv) -> (ours, passthrough)`, and gets `args.passthrough`.
Only the chosen command's module is imported, so `lint`, `probe`, `triage`, `export` and
`memory` never pay for Textual (or for each other).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from types import ModuleType

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
    "schema": ("schema", "print the JSON Schema of the tree format"),
}


def _top_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
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
    return importlib.import_module(f"trainmedic.commands.{COMMANDS[name][0]}")


def _command_parser(name: str, module: ModuleType) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=f"trainmedic {name}", description=COMMANDS[name][1])
    parser.add_argument(
        "--trees", action="append", default=[], metavar="DIR",
        help="add a folder of user trees (repeatable)",
    )
    module.add_arguments(parser)
    parser.set_defaults(_run=module.run)
    return parser


def _split(argv: list[str]) -> tuple[list[str], str | None, list[str]]:
    """Split global options (before the command) from the command and its own arguments."""
    head: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in COMMANDS:
            return head, arg, argv[i + 1 :]
        head.append(arg)
        if arg == "--trees" and i + 1 < len(argv):
            head.append(argv[i + 1])
            i += 1
        i += 1
    return head, None, []


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    head, command, rest = _split(argv)
    children.install_signal_handlers()  # SIGTERM/SIGHUP/SIGINT end every child group started
    try:
        top = _top_parser().parse_args(head)
        if command is None:
            if not interactive_terminal():
                raise UsageError("the app needs a terminal; in a pipe or a dumb terminal use "
                                 "`trainmedic walk triage --plain` (or see `trainmedic --help`)")
            from trainmedic.tui.start import run_home

            return run_home(trees=top.trees)
        module = _command(command)
        parser = _command_parser(command, module)
        split = getattr(module, "split_argv", None)  # the optional hook, see the docstring
        ours, passthrough = split(rest) if split is not None else (rest, [])
        args = parser.parse_args(ours)
        args.passthrough = passthrough
        args.trees = list(top.trees) + list(args.trees)
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


def _error(message: str) -> None:
    """The one line a failed command ends with. It often quotes input (a file name, a word of a
    script, a saved walk's id): redacted, and on one line with control characters visible."""
    from trainmedic.redact import redact_text
    from trainmedic.textsafe import inert_line

    print(f"trainmedic: error: {inert_line(redact_text(message))}", file=sys.stderr)
