"""Shell completion: the generated scripts are loaded into real bash, zsh and fish and asked for
completions; the expected words come from the parsers, the forest, the probe registry and the
saved walks, never from a list typed here."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from trainmedic.cli import COMMANDS, parsers
from trainmedic.commands.completion_spec import VALUE_KINDS, command_line
from trainmedic.probes.registry import PROBES
from trainmedic.saved_walks import StepRecord, WalkRecord, save_walk
from trainmedic.trees import load_forest

ROOT = Path(__file__).resolve().parents[2]
USER_TREES = ROOT / "tests" / "fixtures" / "serve"
ZSH_CAPTURE = Path(__file__).with_name("zsh_capture.zsh")
WALK_IDS = ("20260102T030405-oom-ab12", "20260102T030406-nccl-hang-cd34")


@pytest.fixture(scope="module")
def forest():
    return load_forest([USER_TREES])


@pytest.fixture
def shell_env(tmp_path) -> dict[str, str]:
    """PATH starts with a `trainmedic` that runs this checkout's code; state and caches are
    temporary, with two saved walks."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "trainmedic"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m trainmedic "$@"\n')
    shim.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
           "XDG_STATE_HOME": str(tmp_path / "state"), "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "HOME": str(tmp_path)}
    old = os.environ.get("XDG_STATE_HOME")
    os.environ["XDG_STATE_HOME"] = env["XDG_STATE_HOME"]
    try:
        for walk_id in WALK_IDS:
            step = StepRecord("oom#start", "Which message?", 0, "this one", "oom#next")
            save_walk(WalkRecord(id=walk_id, tree="oom", current="oom#next", steps=[step]))
    finally:
        if old is None:
            del os.environ["XDG_STATE_HOME"]
        else:
            os.environ["XDG_STATE_HOME"] = old
    return env


def script(shell: str, env: dict[str, str], tmp_path: Path) -> Path:
    result = subprocess.run(["trainmedic", "completion", shell], capture_output=True, text=True,
                            env=env, timeout=60, check=True)
    path = tmp_path / f"trainmedic.{shell}"
    path.write_text(result.stdout)
    return path


def bash_complete(line: list[str], env: dict[str, str], tmp_path: Path) -> list[str]:
    """COMP_WORDS/COMP_CWORD as bash sets them for `line` (its last word is under the cursor)."""
    program = ('source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _trainmedic; '
               'printf "%s\\n" "${COMPREPLY[@]}"')
    result = subprocess.run(["bash", "-c", program, "bash", str(script("bash", env, tmp_path)),
                             *line], capture_output=True, text=True, env=env, timeout=60,
                            cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    return [word for word in result.stdout.splitlines() if word]


def expected_cases(forest) -> list[tuple[list[str], set[str]]]:
    """(words on the line, the candidates offered): structure from the parsers, values from
    the forest, the probe registry and the saved walks. Where no value is left to give, zsh
    offers the command's options instead (its `_arguments` does so): `offered_ok` allows it."""
    top, commands = parsers()
    walk_options = {f for a in commands["walk"]._actions for f in a.option_strings}
    export_format = next(a for a in commands["export"]._actions if a.dest == "format")
    drill = forest.tree("browser-drill")
    return [
        (["trainmedic", ""], set(COMMANDS)),
        (["trainmedic", "--"], {f for a in top._actions for f in a.option_strings
                                if f.startswith("--")}),
        (["trainmedic", "walk", "--"], {f for f in walk_options if f.startswith("--")}),
        (["trainmedic", "walk", ""], set(load_forest([]).trees)),
        (["trainmedic", "walk", "oo"], {t for t in load_forest([]).trees if t.startswith("oo")}),
        (["trainmedic", "walk", "oom#"], {f"oom#{n}" for n in forest.tree("oom").nodes}),
        (["trainmedic", "--trees", str(USER_TREES), "walk", "browser-drill#"],
         {f"browser-drill#{n}" for n in drill.nodes}),
        (["trainmedic", "export", "--trees", str(USER_TREES), "brow"], {"browser-drill"}),
        (["trainmedic", "export", "--format", ""], set(export_format.choices)),
        (["trainmedic", "probe", "gpu", ""], set(PROBES)),
        (["trainmedic", "walk", "--resume", ""], set(WALK_IDS)),
        (["trainmedic", "report", "2026"], set(WALK_IDS)),
        (["trainmedic", "completion", ""], {"bash", "zsh", "fish"}),
        (["trainmedic", "walk", "oom", ""], set()),  # the one TREE is given: no more trees
        (["trainmedic", "serve", "--port", ""], set()),  # a number: nothing to offer
    ]


def offered_ok(line: list[str], offered: set[str], expected: set[str]) -> bool:
    if offered == expected:
        return True
    _top, commands = parsers()
    options = {f for a in commands[line[1]]._actions for f in a.option_strings}
    return not expected and line[-1] == "" and offered <= options


def test_bash_completes_commands_options_trees_nodes_probes_and_walks(shell_env, tmp_path,
                                                                     forest) -> None:
    for line, expected in expected_cases(forest):
        assert set(bash_complete(line, shell_env, tmp_path)) == expected, line


def test_bash_completes_a_value_after_equals_and_file_names(shell_env, tmp_path) -> None:
    # bash splits `--format=m` into `--format`, `=`, `m`
    assert bash_complete(["trainmedic", "export", "--format", "=", "m"], shell_env,
                         tmp_path) == ["markdown", "mermaid"]
    assert bash_complete(["trainmedic", "triage", "tests/fixtures/ser"], shell_env,
                         tmp_path) == ["tests/fixtures/serve"]
    assert bash_complete(["trainmedic", "--trees", "tests/fixtures/ser"], shell_env,
                         tmp_path) == ["tests/fixtures/serve"]


def test_bash_passes_a_trees_folder_with_spaces_as_one_word(shell_env, tmp_path) -> None:
    folder = tmp_path / "my trees; $(touch pwned)"
    shutil.copytree(USER_TREES, folder)
    offered = bash_complete(["trainmedic", "--trees", str(folder), "walk", "brow"], shell_env,
                            tmp_path)
    assert offered == ["browser-drill"]
    assert not list(tmp_path.rglob("pwned"))


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
def test_zsh_completes_the_same_words(shell_env, tmp_path, forest) -> None:
    path = script("zsh", shell_env, tmp_path)
    cases = expected_cases(forest)
    result = subprocess.run(["zsh", "-f", str(ZSH_CAPTURE), str(path),
                             *(" ".join(line) for line, _expected in cases)],
                            capture_output=True, text=True, env=shell_env, timeout=120, cwd=ROOT)
    if result.returncode == 3:
        pytest.skip("zsh has no zpty module to drive a completion")
    assert result.returncode == 0, result.stderr
    answers = result.stdout.split("<<next>>\n")
    assert len(answers) == len(cases) + 1, result.stdout
    for (line, expected), answer in zip(cases, answers, strict=False):
        # zsh quotes what it would insert (oom\#node); the words are the same
        offered = {word.replace("\\", "") for word in answer.splitlines() if word}
        assert offered_ok(line, offered, expected), (line, offered)


@pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed")
def test_fish_completes_the_same_words(shell_env, tmp_path, forest) -> None:
    path = script("fish", shell_env, tmp_path)
    for line, expected in expected_cases(forest):
        typed = " ".join(line)
        result = subprocess.run(["fish", "--no-config", "-c", f"source {path}; complete -C $argv",
                                 typed], capture_output=True, text=True, env=shell_env,
                                timeout=60, cwd=ROOT)
        assert result.returncode == 0, result.stderr
        offered = {row.split("\t")[0] for row in result.stdout.splitlines() if row}
        assert offered_ok(line, offered, expected), (typed, offered)


def test_every_named_value_kind_names_a_real_argument() -> None:
    """VALUE_KINDS is keyed by (command, dest): a renamed argument must not go unnoticed."""
    top, commands = parsers()
    for command, dest in VALUE_KINDS:
        named = [commands[command]] if command != "*" else [top, *commands.values()]
        for parser in named:
            assert dest in {a.dest for a in parser._actions}, (command, dest)


def test_the_spec_lists_every_command_and_option_of_the_parsers() -> None:
    top, commands = parsers()
    spec = command_line(top, commands)
    assert [c.name for c in spec.commands] == list(COMMANDS)
    for command in spec.commands:
        flags = {f for a in commands[command.name]._actions for f in a.option_strings}
        assert {f for o in command.options for f in o.flags} == flags


def test_the_helper_is_hidden_and_neither_prints_errors_nor_imports_textual(tmp_path) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "bad.yaml").write_text("id: [unclosed\n")
    probe = (
        "import sys\n"
        "from trainmedic.cli import main\n"
        f"code = main(['--trees', {str(broken)!r}, '__complete', 'trees', 'oo'])\n"
        "main(['completion', 'bash'])\n"
        "print(code, sorted(m for m in sys.modules if m.split('.')[0] == 'textual'))\n"
    )
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                            env=env, timeout=60)
    assert result.stderr == ""
    assert result.stdout.startswith("oom\n")
    assert result.stdout.rstrip().endswith("0 []")
    helps = subprocess.run([sys.executable, "-m", "trainmedic", "--help"], capture_output=True,
                           text=True, timeout=60).stdout
    assert "__complete" not in helps and "completion" in helps
