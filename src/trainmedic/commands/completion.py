"""`trainmedic completion bash|zsh|fish`: the completion script for a shell, on stdout.

The script is written from the real argument parsers (so it never drifts from the commands) and
asks the hidden `trainmedic __complete` for tree ids, nodes, probes and saved walks at each Tab.
"""

from __future__ import annotations

import argparse
import sys

from trainmedic.commands.completion_scripts import SHELLS, render
from trainmedic.commands.completion_spec import command_line


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("shell", choices=SHELLS, help="the shell to complete in")
    parser.epilog = ("bash: `source <(trainmedic completion bash)` in ~/.bashrc; zsh: "
                     "`source <(trainmedic completion zsh)` in ~/.zshrc after compinit; fish: "
                     "`trainmedic completion fish > ~/.config/fish/completions/trainmedic.fish`")


def run(args: argparse.Namespace) -> int:
    top, commands = args.parsers()
    sys.stdout.write(render(args.shell, command_line(top, commands)))
    return 0
