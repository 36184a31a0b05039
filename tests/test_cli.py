"""The command-line contract: help for every command, exit codes, no Textual outside the app."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from trainmedic.cli import COMMANDS

ROOT = Path(__file__).resolve().parents[1]
UI_FREE = [name for name in COMMANDS if name != "walk"]


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, env={**os.environ, **(env or {})}, timeout=60)


def test_top_level_help_lists_every_command() -> None:
    result = run("-m", "trainmedic", "--help")
    assert result.returncode == 0
    for name in COMMANDS:
        assert name in result.stdout


def test_unknown_command_is_a_usage_error() -> None:
    result = run("-m", "trainmedic", "frobnicate")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr


def test_app_without_a_terminal_falls_back_to_plain_prompts_instead_of_hanging() -> None:
    result = run("-m", "trainmedic")  # stdin is /dev/null: the prompts end at once
    assert result.returncode == 0
    assert "no terminal here" in result.stderr and "triage#" in result.stdout


@pytest.mark.parametrize("name", UI_FREE)
def test_command_help_works_without_textual(name: str) -> None:
    probe = (
        "import sys\n"
        "from trainmedic.cli import main\n"
        "try:\n"
        f"    main([{name!r}, '--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        f"assert 'trainmedic.commands.{name}' in sys.modules\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'textual'))\n"
    )
    result = run("-c", probe)
    assert result.returncode == 0, result.stderr[-500:]
    assert result.stdout.startswith(f"usage: trainmedic {name}")
    assert result.stdout.rstrip().endswith("[]"), result.stdout[-300:]


def test_short_lived_commands_run_without_the_cyclic_collector_only_as_the_program(
        tmp_path: Path) -> None:
    # `lint` and `memory` end soon after they start: run as the program they skip the collector
    # (and its full pass at exit); a caller in the same process keeps it
    code = ("import gc, sys; from trainmedic import cli; cli.main(['lint']); on = gc.isenabled(); "
            "sys.argv = ['trainmedic', 'lint']; cli.main(); print(on, gc.isenabled())")
    result = run("-c", code, env={**os.environ, "XDG_CACHE_HOME": str(tmp_path)})
    assert result.returncode == 0, result.stderr[-500:]
    assert result.stdout.split() == ["True", "False"]
