"""`trainmedic drill --plain` end to end in a subprocess, answers from stdin, and --progress."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from drill_helpers import ROOT

from trainmedic.drills.run import DrillRun, node_known, playable
from trainmedic.trees import Fix


def drill(*args: str, stdin: str = "", env: dict[str, str] | None = None,
          ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "trainmedic", "drill", *args], input=stdin,
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "src"), **(env or {})})


@pytest.fixture
def scored(forest, cases):
    """A case scored to its node, its expert path, and the keys that walk it."""
    for case in playable(forest, cases):
        if case.healthy or not node_known(forest, case):
            continue
        path = DrillRun(forest, case).expert()
        if path and len(path) >= 2:
            node = forest.node(forest.parse_ref(path[-1].goto))
            keys = [str(s.answer + 1) for s in path] + ["" if isinstance(node, Fix) else "d"]
            return case, path, "\n".join(keys) + "\n"
    raise AssertionError("no case with a two-step expert path")


def test_a_plain_drill_walks_the_expert_path_then_reveals_and_saves(scored):
    case, path, keys = scored
    result = drill("--plain", "--case", case.name, stdin=keys)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    before, _, after = out.partition("Your answer")
    assert after, out[-2000:]
    assert case.source not in before and case.source in after  # hidden until the end
    assert case.excerpt.strip().splitlines()[0][:40] in before  # the log was shown
    assert before.count("answer [1-") == len(path) + (keys.endswith("d\n"))
    assert f"You reached the expected node {path[-1].goto}" in after
    assert f"{len(path)} moves (the expert path takes {len(path)})" in after
    assert result.stderr == ""

    progress = drill("--progress", "--json")
    data = json.loads(progress.stdout)
    assert data["schema_version"] == 1 and data["trainmedic_version"]
    row = next(r for r in data["areas"] if r["area"] == case.area)
    assert (row["done"], row["node"], row["score"], row["cases_done"]) == (1, 1, 1.0, 1)
    table = drill("--progress").stdout
    assert any(line.split()[:3] == [case.area, f"1/{row['cases']}", "1"]
               for line in table.splitlines())


def test_end_of_input_leaves_the_drill_unscored(scored):
    case, _path, _keys = scored
    result = drill("--plain", "--case", case.name, stdin="2\n")
    assert result.returncode == 0 and "not scored" in result.stdout
    assert case.source not in result.stdout
    assert "No drills done yet" in drill("--progress").stdout


def test_a_healthy_log_and_ok(cases):
    healthy = next(c for c in cases if c.healthy)
    result = drill("--plain", "--case", healthy.name, stdin="x\nok\n")
    assert result.returncode == 0, result.stderr
    assert "please type a number" in result.stdout  # a wrong key is explained, not fatal
    assert "Right: nothing is wrong in this log." in result.stdout


def test_jump_and_triage_keys_in_a_pipe(scored):
    case, _path, _keys = scored
    result = drill("--plain", "--case", case.name, stdin="j nosuch\nj oom\nb\nt\nq\n")
    assert result.returncode == 0, result.stderr
    assert "cannot jump: no tree 'nosuch'" in result.stdout
    assert "triage points to" in result.stdout or "triage finds no known failure" in \
        result.stdout
    assert "not scored" in result.stdout


@pytest.mark.parametrize(("args", "message"), [
    (["--tree", "nosuch"], "trainmedic: error: no drills for 'nosuch' (areas: "),
    (["--json"], "trainmedic: error: --json goes with --progress"),
    (["--seed", "x"], "invalid int value"),
])
def test_bad_usage_is_one_line_and_exit_2(args, message):
    result = drill("--plain", *args)
    assert result.returncode == 2
    assert message in result.stderr and "Traceback" not in result.stderr


def test_seed_picks_the_same_drill(cases):
    first = drill("--plain", "--seed", "11", "--tree", "oom", stdin="q\n").stdout
    again = drill("--plain", "--seed", "11", "--tree", "oom", stdin="q\n").stdout
    assert first == again and "Incident drill in oom" in first
