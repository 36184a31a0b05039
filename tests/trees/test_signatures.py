"""Log signatures in trees: loaded, linted (links, regexes, examples, hooks), used by triage."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from trainmedic.probes.registry import declared_facts
from trainmedic.trees.forest import builtin_tree_dir, load_forest
from trainmedic.trees.lint import lint_forest
from trainmedic.trees.siglint import recognises, regex_risk
from trainmedic.triage.signatures import lint_hooks

ROOT = Path(__file__).resolve().parents[2]
OOM_LINE = (ROOT / "tests/fixtures/triage/oom_fragmentation.log").read_text().splitlines()[1]


def lint(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "trainmedic", "lint", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def drop_node(text: str, node: str) -> str:
    """A tree's YAML without one node and the answers that lead to it; the signatures' routes
    to it stay (that is what lint must catch)."""
    lines = text.splitlines(keepends=True)
    start = lines.index(f"  {node}:\n")
    end = next(i for i in range(start + 1, len(lines)) if re.match(r"^  [a-z0-9-]+:$", lines[i]))
    lines = lines[:start] + lines[end:]
    out: list[str] = []
    for line in lines:
        if line == f"        goto: {node}\n":  # an answer's goto (routes are deeper)
            out.pop()  # its `- text:` line
            continue
        out.append(line)
    return "".join(out)


def test_replacement_tree_that_drops_a_node_a_signature_leads_to(tmp_path):
    """Issue 21 item 8: FILE:LINE: error naming the signature."""
    mine = tmp_path / "mine"
    mine.mkdir()
    text = drop_node((builtin_tree_dir() / "oom.yaml").read_text(), "fragmentation")
    (mine / "oom.yaml").write_text(text)
    result = lint("--trees", str(mine))
    assert result.returncode == 1
    errors = [line for line in result.stdout.splitlines() if "fragmentation" in line]
    assert errors, result.stdout
    assert re.match(rf"^{re.escape(str(mine / 'oom.yaml'))}:\d+: error: signature 'cuda-oom'",
                    errors[0])


def test_replacement_tree_without_signatures_inherits_them_and_is_checked(tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "oom.yaml").write_text(
        "id: oom\ntitle: Our OOM runbook\nsummary: Ours.\nstart: when\nnodes:\n"
        "  when:\n    fix: Ask the platform team\n    why: Our cluster.\n"
        "    steps:\n      - do: Page them.\n        code: page-oncall gpu\n")
    forest = load_forest([mine])
    inherited = {s.id for s in forest.signatures() if s.tree == "oom"}
    assert "cuda-oom" in inherited  # triage does not go blind on OOMs
    problems = [p for p in lint_forest(forest, declared_facts(), apis=False, hooks=lint_hooks())
                if p.file.endswith("mine/oom.yaml")]
    messages = [p.message for p in problems]
    assert any("built-in signature 'cuda-oom'" in m and "fragmentation" in m for m in messages)
    assert any("built-in signature 'raw-cuda-oom'" in m and "raw-cuda-oom" in m
               for m in messages)
    assert all(p.line == 1 for p in problems)


def test_lint_of_a_file_also_given_as_trees_is_not_a_duplicate(tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    shutil.copy(builtin_tree_dir() / "startup.yaml", mine / "startup.yaml")
    result = lint(str(mine / "startup.yaml"), "--trees", str(mine))
    assert "duplicate" not in result.stdout, result.stdout
    assert result.returncode == 0, result.stdout


QUOTA_SIGNATURE = """\
      - id: our-quota
        title: the in-house scheduler refused the job (quota)
        kind: cause
        weight: 9
        needles: ["QUOTA_EXCEEDED"]
        match: 'QUOTA_EXCEEDED for team \\w+'
        example: "ourctl: QUOTA_EXCEEDED for team vision"
"""


def test_user_tree_adds_a_signature_triage_uses(tmp_path, user_tree):
    folder = user_tree(QUOTA_SIGNATURE)
    assert lint("--trees", str(folder)).returncode == 0
    log = tmp_path / "job.log"
    log.write_text("starting\nourctl: QUOTA_EXCEEDED for team vision\n")
    out = subprocess.run([sys.executable, "-m", "trainmedic", "triage", str(log), "--trees",
                          str(folder)], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 1
    assert "our-stack#quota" in out.stdout


@pytest.mark.parametrize(("extra", "message"), [
    ("      - id: our-quota\n        title: again\n        kind: cause\n"
     "        needles: [AGAIN_AGAIN]\n        example: AGAIN_AGAIN\n",
     "signature id 'our-quota' is declared twice"),
    ("      - id: bad-regex\n        title: t\n        kind: cause\n        needles: [XXXX]\n"
     "        match: '(\\w+\\s?)*$'\n        example: XXXX\n", "unsafe on long lines"),
    ("      - id: bad-example\n        title: t\n        kind: cause\n        needles: [XXXX]\n"
     "        example: YYYY\n", "does not recognise its own example"),
    ("      - id: bad-hook\n        title: t\n        kind: cause\n        needles: [XXXX]\n"
     "        hook: no-such-hook\n        example: XXXX\n", "no hook named 'no-such-hook'"),
    ("      - id: bad-outcome\n        title: t\n        kind: cause\n        needles: [XXXX]\n"
     "        hook: cuda-oom\n        example: XXXX\n        routes:\n"
     "          - outcome: gone\n            goto: quota\n", "never concludes 'gone'"),
    ("      - id: bad-route\n        title: t\n        kind: cause\n        needles: [XXXX]\n"
     "        example: XXXX\n        routes:\n          - line: X\n            goto: oom#nope\n",
     "routes its 'line' to 'oom#nope'"),
    ("      - id: no-example\n        title: t\n        kind: cause\n        needles: [XXXX]\n",
     "has no 'example'"),
    ("      - id: short\n        title: t\n        kind: cause\n        needles: [ab]\n"
     "        example: ab\n", "at least 4 characters"),
    ("      - id: broken\n        title: t\n        kind: cause\n        needles: [XXXX]\n"
     "        match: '(unclosed'\n        example: XXXX\n", "not a valid regular expression"),
])
def test_lint_reports_each_broken_signature_at_its_line(user_tree, extra, message):
    folder = user_tree(QUOTA_SIGNATURE + extra)
    result = lint(str(folder / "our-stack.yaml"))
    assert result.returncode == 1
    lines = [line for line in result.stdout.splitlines() if message in line]
    assert lines, result.stdout
    assert re.match(r"^.*our-stack\.yaml:\d+: error: ", lines[0])


def test_regex_risk_is_structural():
    assert regex_risk(r"(a+)+$") and regex_risk(r".*timeout") and regex_risk(r"(\w+\s?)*x")
    assert regex_risk(r"NVRM: Xid \(PCI:[^)]*\):\s*\d+") is None
    assert regex_risk(r"batch.size.*divisible")  # quadratic on "batch size batch size ..."
    assert regex_risk(r"^(?=.*batch.size).*divisible") is None


def test_builtin_regexes_are_fast_on_a_one_megabyte_line():
    """A guard against catastrophic backtracking, not a speed target: on lines built to make a
    backtracking regex work hard (each needle and each example repeated to 1 MB, a line of one
    repeated character) every search ends within seconds; a bad pattern takes minutes."""
    forest = load_forest()
    patterns = []
    for sig in forest.signatures():
        for pattern in (sig.match, sig.exclude, *(r.line for r in sig.routes)):
            if pattern:
                patterns.append((sig.id, re.compile(pattern), sig))
    assert len(patterns) >= 20
    for sig_id, rx, sig in patterns:
        seeds = [*sig.needles, *sig.examples, "a", " "]
        for seed in seeds:
            line = (seed + " ") * (2**20 // (len(seed) + 1))
            t0 = time.perf_counter()
            rx.search(line)
            assert time.perf_counter() - t0 < 5.0, (sig_id, rx.pattern, seed[:40])


def test_examples_are_recognised_by_the_rule_lint_uses():
    for sig in load_forest().signatures():
        for example in sig.examples:
            assert recognises(sig, example), (sig.id, example)
        for counter in sig.counterexamples:
            assert not recognises(sig, counter), (sig.id, counter)


def test_compiled_signatures_follow_an_edited_tree(tmp_path) -> None:
    """The TUI lives long: a user tree edited after triage ran is compiled again."""
    import os

    from trainmedic.triage.signatures import forest_signatures

    example = Path(__file__).parent.parent.parent / "docs" / "examples" / "example-hang.yaml"
    tree = tmp_path / "mine.yaml"
    tree.write_bytes(example.read_bytes())
    first = forest_signatures((str(tmp_path),))
    assert forest_signatures((str(tmp_path),)) is first
    tree.write_bytes(example.read_bytes() + b"\n")
    st = tree.stat()
    os.utime(tree, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert forest_signatures((str(tmp_path),)) is not first
