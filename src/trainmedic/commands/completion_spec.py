"""The command line as the completion scripts need it, read from the real argparse parsers.

Commands, options, which options take a value and the choices come from the parsers, so a new
option is completed without anyone touching this file. What a value *is* (a tree, a saved walk,
a folder) is read from the argument's metavar, except for the few arguments named in
`VALUE_KINDS`, whose entries a test checks against the parsers.
"""

from __future__ import annotations

import argparse
import contextlib
from dataclasses import dataclass

# What the scripts ask `trainmedic __complete KIND` for (see commands/complete.py).
DYNAMIC_KINDS = ("trees", "targets", "probes", "walks")
# Value kinds: "flag" (no value), "files", "dirs", "none" (free text: numbers, specs, URLs),
# "choices" (Option.choices) or one of DYNAMIC_KINDS.
VALUE_KINDS: dict[tuple[str, str], str] = {  # (command, dest) -> kind; "*": every command
    ("*", "trees"): "dirs",
    ("walk", "target"): "targets",
    ("walk", "resume"): "walks",
    ("export", "tree"): "trees",
    ("probe", "names"): "probes",
    ("report", "session"): "walks",
    ("report", "repo"): "dirs",
}
FILE_METAVARS = {"PATH": "files", "FILE": "files", "LOG": "files", "DIR": "dirs"}


@dataclass(frozen=True)
class Argument:
    """An option (its flags) or a positional argument (no flags)."""

    flags: tuple[str, ...]
    help: str
    kind: str  # see VALUE_KINDS
    metavar: str = ""
    choices: tuple[str, ...] = ()
    optional_value: bool = False  # nargs="?": `--resume` alone or `--resume ID`
    repeatable: bool = False  # an append option, or a positional taking many values

    @property
    def takes_value(self) -> bool:
        return self.kind != "flag"


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    options: tuple[Argument, ...]
    positionals: tuple[Argument, ...]


@dataclass(frozen=True)
class CommandLine:
    options: tuple[Argument, ...]  # before the command
    commands: tuple[Command, ...]


def _kind(command: str, action: argparse.Action) -> str:
    if action.nargs == 0:
        return "flag"
    named = VALUE_KINDS.get((command, action.dest)) or VALUE_KINDS.get(("*", action.dest))
    if named:
        return named
    if action.choices:
        return "choices"
    return FILE_METAVARS.get(str(action.metavar or ""), "none")


def _help(action: argparse.Action) -> str:
    """One line, with argparse's `%(default)s`-style fields filled in as `--help` shows them."""
    text = " ".join(str(action.help or "").split())
    if "%(" in text:
        with contextlib.suppress(KeyError, TypeError, ValueError):
            text = text % {**vars(action), "default": action.default}
    return text


def _argument(command: str, action: argparse.Action) -> Argument:
    return Argument(
        flags=tuple(action.option_strings),
        help=_help(action),
        kind=_kind(command, action),
        metavar=str(action.metavar or action.dest.upper()),
        choices=tuple(str(c) for c in action.choices or ()),
        optional_value=action.nargs == "?" and bool(action.option_strings),
        repeatable=isinstance(action, argparse._AppendAction) or action.nargs in ("*", "+"),
    )


def _arguments(command: str, parser: argparse.ArgumentParser,
               ) -> tuple[tuple[Argument, ...], tuple[Argument, ...]]:
    options: list[Argument] = []
    positionals: list[Argument] = []
    for action in parser._actions:
        if action.help == argparse.SUPPRESS or isinstance(action, argparse._SubParsersAction):
            continue
        (options if action.option_strings else positionals).append(_argument(command, action))
    return tuple(options), tuple(positionals)


def command_line(top: argparse.ArgumentParser,
                 commands: dict[str, argparse.ArgumentParser]) -> CommandLine:
    """The whole command line from the top parser and each command's own parser."""
    helps = {}
    for action in top._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
    specs = []
    for name, parser in commands.items():
        options, positionals = _arguments(name, parser)
        specs.append(Command(name, str(helps.get(name) or parser.description or ""), options,
                             positionals))
    return CommandLine(_arguments("", top)[0], tuple(specs))
