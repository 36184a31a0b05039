"""The subcommands: one module each with `add_arguments(parser)` and `run(args) -> int`."""

from __future__ import annotations

import argparse
import os
import sys

# Said on stderr whenever a command that would draw the app falls back to plain prompts.
NO_TERMINAL_NOTE = ("trainmedic: no terminal here (a pipe or TERM=dumb): plain numbered prompts "
                    "instead of the app (--plain chooses them without this note)")


def add_job_arguments(parser: argparse.ArgumentParser) -> None:
    """--python and --pid: where the job runs, for the versions and env probes (`probe` passes
    them in the probe context; `walk` sets TRAINMEDIC_PYTHON/TRAINMEDIC_JOB_PID, which every
    probe run of the walk reads)."""
    parser.add_argument("--python", metavar="PATH",
                        help="the job's Python interpreter, for the versions probe (default: "
                             "TRAINMEDIC_PYTHON, the launch script's, the activated env's)")
    parser.add_argument("--pid", metavar="PID|NAME",
                        help="a running rank (its PID, or a word of its command line) whose "
                             "environment the env probe reads instead of this shell's "
                             "(default: TRAINMEDIC_JOB_PID)")


def interactive_terminal() -> bool:
    """Both ends are a terminal that can draw the app (not a pipe, not TERM=dumb)."""
    if os.environ.get("TERM", "") == "dumb":
        return False
    return sys.stdin.isatty() and sys.stdout.isatty()
