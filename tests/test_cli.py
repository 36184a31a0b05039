"""The command-line contract: help for every command, exit codes, no Textual outside the app."""

from __future__ import annotations

import gc
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
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # `lint` and `memory` end soon after they start: run as the program they skip the
    # collector's passes; a caller in the same process keeps its collector
    from trainmedic import cli

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    try:
        cli.main(["lint"])
        assert gc.isenabled()
        cli._main(["lint"], as_program=True)
        assert not gc.isenabled()
    finally:
        gc.enable()


@pytest.mark.parametrize("traced", [False, True])
def test_short_lived_commands_end_without_teardown_unless_traced(tmp_path: Path,
                                                                  traced: bool) -> None:
    # the program ends right after its output (flushed), with its exit status; under coverage,
    # a debugger or a profiler it returns as usual
    code = ("import sys; from trainmedic.cli import main; "
            + ("sys.settrace(lambda *a: None); " if traced else "")
            + "sys.argv = ['trainmedic', 'lint', '--json', 'no-such-tree.yaml']; rc = main(); "
            "print('returned', rc)")
    result = run("-c", code, env={**os.environ, "XDG_CACHE_HOME": str(tmp_path)})
    assert result.returncode == (0 if traced else 2), result.stderr[-500:]
    assert "no-such-tree.yaml: no such file or folder" in result.stderr
    assert ("returned 2" in result.stdout) is traced


def test_a_short_lived_command_whose_reader_left_ends_quietly(tmp_path: Path) -> None:
    # `trainmedic lint --json | head -0`: the output meets a closed pipe when it is flushed
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        result = subprocess.run([sys.executable, "-m", "trainmedic", "lint", "--json"], cwd=ROOT,
                                stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=60,
                                env={**os.environ, "XDG_CACHE_HOME": str(tmp_path)})
    finally:
        os.close(write_end)
    assert result.returncode == 0
    assert "Traceback" not in result.stderr and "Exception ignored" not in result.stderr
