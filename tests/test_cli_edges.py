"""CLI edges (F18, F20): exit codes, closed pipes, one-line errors, no terminal, broken trees."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from trainmedic import __version__
from trainmedic.commands import NO_TERMINAL_NOTE

ROOT = Path(__file__).resolve().parents[1]
# Megatron flags of a model far too large for the card it is given
TOO_BIG = ["--num-layers", "80", "--hidden-size", "8192", "--num-attention-heads", "64",
           "--seq-length", "4096", "--max-position-embeddings", "4096", "--micro-batch-size", "1",
           "--gpu-memory", "8GiB", "--no-probe"]


def run(*args: str, env: dict[str, str] | None = None, cwd: Path = ROOT,
        ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "trainmedic", *args], cwd=cwd,
                          capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          env={**os.environ, **(env or {})}, timeout=120)


@pytest.fixture
def state(tmp_path: Path) -> dict[str, str]:
    return {"XDG_STATE_HOME": str(tmp_path / "state"), "XDG_CACHE_HOME": str(tmp_path / "cache")}


# -- exit codes ------------------------------------------------------------------------------

def test_memory_exits_1_when_it_does_not_fit_as_preflight_does() -> None:
    text = run("memory", *TOO_BIG)
    assert "DOES NOT FIT" in text.stdout and text.returncode == 1
    as_json = run("memory", "--json", *TOO_BIG)
    data = json.loads(as_json.stdout)
    assert data["verdict"] == "does not fit" and as_json.returncode == 1
    assert data["trainmedic_version"] == __version__ and data["schema_version"] == 1
    fits = run("memory", *TOO_BIG[:-3], "--gpu-memory", "4000GiB", "--no-probe")
    assert fits.returncode == 0, fits.stdout[-300:]


def test_version_flag_and_every_json_carry_the_version(state: dict[str, str]) -> None:
    assert run("--version").stdout.strip() == f"trainmedic {__version__}"
    for argv in (["lint", "--json"], ["probe", "env", "--json"],
                 ["export", "oom", "--format", "json"]):
        data = json.loads(run(*argv, env=state).stdout)
        assert data["trainmedic_version"] == __version__, argv


# -- a reader that closes the pipe early is not a failure ------------------------------------

@pytest.mark.parametrize("argv", [
    ["memory", *TOO_BIG],  # printed through Rich, whose own handler would exit 1
    ["probe", "env", "shm"],
    ["triage", str(ROOT / "tests" / "fixtures" / "triage")],
    ["export", "oom"],  # plain print
])
def test_a_closed_pipe_exits_0_quietly(argv: list[str], state: dict[str, str]) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "trainmedic", *argv], cwd=ROOT,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env={**os.environ, **state})
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # as `| head -0`: the reader is gone before the first line
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0, err
    assert err == "", err


# -- one-line errors --------------------------------------------------------------------------

@pytest.mark.parametrize("argv, expected", [
    (["probe", "--bogus"], "trainmedic: error: unrecognized arguments: --bogus "
                           "(see `trainmedic probe --help`)"),
    (["probe", "--timeout", "x"], "trainmedic: error: argument --timeout: invalid float value: "
                                  "'x' (see `trainmedic probe --help`)"),
    (["frobnicate"], "trainmedic: error: argument COMMAND: invalid choice: 'frobnicate'"),
])
def test_argparse_errors_are_one_line(argv: list[str], expected: str) -> None:
    result = run(*argv)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and result.stderr.startswith(expected), result.stderr
    assert "usage:" not in result.stderr


def broken_tree(folder: Path) -> Path:
    folder.mkdir()
    tree = folder / "mine.yaml"
    tree.write_text("id: mine\ntitle: [unclosed\n")
    return tree


def test_error_is_said_once(tmp_path: Path, state: dict[str, str]) -> None:
    broken_tree(tmp_path / "mytrees")
    result = run("--trees", str(tmp_path / "mytrees"), "export", "oom", env=state)
    assert result.returncode == 2
    assert result.stderr.count("error:") == 1, result.stderr
    assert result.stderr.startswith("trainmedic: ") and "mine.yaml:" in result.stderr


# -- no terminal: the app and a walk behave the same way --------------------------------------

def test_no_terminal_means_plain_prompts_for_the_app_and_for_a_walk(state: dict[str, str]) -> None:
    app = run(env=state)  # `trainmedic | cat`
    walk = run("walk", "oom", env=state)  # `trainmedic walk oom | cat`
    for result in (app, walk):
        assert result.returncode == 0, result.stderr
        assert result.stderr.strip() == NO_TERMINAL_NOTE
        assert "answer [1-" in result.stdout  # the first question, as numbered prompts
    assert "triage#" in app.stdout and "oom#" in walk.stdout
    explicit = run("walk", "oom", "--plain", env=state)
    assert explicit.returncode == 0 and explicit.stderr == ""


# -- a broken user tree is skipped with a warning (F20); lint still fails on it ---------------

def test_a_broken_user_tree_does_not_stop_a_walk(tmp_path: Path, state: dict[str, str]) -> None:
    tree = broken_tree(tmp_path / "mytrees")
    walk = run("--trees", str(tmp_path / "mytrees"), "walk", "oom", "--answers", "1",
               "--no-probes", env=state, cwd=tmp_path)
    assert walk.returncode in (0, 2), walk.stderr  # 2: the answers stop at a question
    warning = walk.stderr.splitlines()[0]
    assert warning.startswith("trainmedic: warning: skipped the tree file mytrees/mine.yaml: "
                              "line "), walk.stderr
    assert "YAML syntax" in warning
    assert "oom#" in walk.stdout
    lint = run("lint", str(tree), env=state, cwd=tmp_path)
    assert lint.returncode == 1 and "mine.yaml:3: error: YAML syntax" in lint.stdout + lint.stderr
