"""The loader on good trees: structure, source lines, translations, links, rules."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import yaml

from trainmedic.trees import Fix, Question, load_forest
from trainmedic.trees.lint import lint_forest
from trainmedic.trees.rules import evaluate, suggest
from trainmedic.trees.schema import tree_schema
from trainmedic.trees.spec import OBJECTS

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "docs" / "examples"
DECLARED = {"env": {"nccl_debug": "str"}}


def test_examples_load_with_lines_and_links() -> None:
    forest = load_forest([EXAMPLES], builtin=False)
    assert sorted(forest.trees) == ["disk-full", "example-hang"]
    assert lint_forest(forest, DECLARED) == []
    tree = forest.trees["disk-full"]
    assert tree.start == "what-error" and tree.tags == ["checkpoint", "storage"]
    question = tree.nodes["what-error"]
    assert isinstance(question, Question)
    assert question.src.line == 12
    assert [a.goto for a in question.answers] == ["disk-space", "quota", "other-tree-link"]
    assert question.answers[1].text == "Disk quota exceeded"
    assert question.answers[1].text.translations == {"en": "Disk quota exceeded",
                                                     "zh": "磁盘配额已满"}
    fix = tree.nodes["disk-space"]
    assert isinstance(fix, Fix)
    assert fix.steps[0].code == 'df -h "$SAVE_DIR"' and fix.steps[0].lang == "bash"
    assert fix.steps[1].src.line == 44
    assert fix.refs[0].url == "https://man7.org/linux/man-pages/man1/df.1.html"
    assert fix.myth is not None and fix.verify is not None
    link = tree.nodes["other-tree-link"]
    assert isinstance(link, Question)
    assert str(forest.resolve("disk-full", link.answers[0].goto)) == "example-hang#barrier"
    assert str(forest.resolve("disk-full", link.answers[1].goto)) == "example-hang#all-stopped"
    assert forest.counts("disk-full") == (2, 2)


def test_plain_yes_stays_text(tmp_path: Path) -> None:
    """YAML 1.1 reads `Yes` as a boolean; answers are text whatever the user types."""
    text = (EXAMPLES / "example-hang.yaml").read_text().replace('- text: "Yes"', "- text: Yes")
    (tmp_path / "t.yaml").write_text(text)
    forest = load_forest([tmp_path], builtin=False)
    question = forest.trees["example-hang"].nodes["barrier"]
    assert isinstance(question, Question)
    assert question.answers[1].text == "Yes"
    assert lint_forest(forest, DECLARED) == []


def test_rules_suggest_with_evidence() -> None:
    forest = load_forest([EXAMPLES], builtin=False)
    question = forest.trees["example-hang"].nodes["barrier"]
    assert isinstance(question, Question)
    rule = question.answers[0].when[0]
    assert (rule.probe, rule.fact_name, rule.op, rule.value) == ("env", "nccl_debug", "==", "INFO")
    assert evaluate(rule, {"env.nccl_debug": "info"}) is True
    assert evaluate(rule, {"env.nccl_debug": "WARN"}) is False
    assert evaluate(rule, {}) is None
    facts = {"env.nccl_debug": "INFO"}
    index, lines = suggest(question, facts, {"env.nccl_debug": "NCCL_DEBUG=INFO"})
    assert index == 0
    assert lines[0] == "NCCL_DEBUG=INFO"  # the probe's own words, not the rule's syntax
    index, lines = suggest(question, facts)
    assert index == 0 and lines[0] == "env: nccl debug INFO"  # no probe words: plain ones
    assert suggest(question, {"env.nccl_debug": ""}) == (None, [])


def test_shipped_schema_is_the_generated_one() -> None:
    shipped = json.loads((ROOT / "src" / "trainmedic" / "tree.schema.json").read_text())
    assert shipped == tree_schema(), "run: trainmedic schema > src/trainmedic/tree.schema.json"


def documented_keys() -> dict[str, dict[str, bool]]:
    """object -> {key: required} as the key table of docs/tree-format.md states them, with the
    keys of answers, steps, dangers and refs read from their `{a, b?}` lists (`?`: optional)."""
    text = (ROOT / "docs" / "tree-format.md").read_text(encoding="utf-8")
    table = text.split("## Keys", 1)[1]
    inline = {"answers": "answer", "steps": "step", "danger": "danger", "refs": "ref",
              "routes": "route"}
    keys: dict[str, dict[str, bool]] = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or cells[2] not in ("yes", "no"):
            continue
        objects, names, required, meaning = cells
        for obj in objects.split(", "):
            for name in re.findall(r"`([a-z_]+)`", names):
                keys.setdefault(obj, {})[name] = required == "yes"
                listed = re.search(r"\{([^}]*)\}", meaning)
                if name in inline and listed:
                    for item in listed.group(1).split(", "):
                        keys.setdefault(inline[name], {})[item.rstrip("?")] = \
                            not item.endswith("?")
    return keys


def test_the_documented_key_table_is_the_loaders() -> None:
    """docs/tree-format.md is written by hand; it must say what trees/spec.py enforces."""
    spec = {obj: {k.name: k.required for k in keys} for obj, keys in OBJECTS.items()}
    assert documented_keys() == spec


def test_schema_accepts_examples_and_rejects_bad_trees() -> None:
    validator = jsonschema.Draft202012Validator(tree_schema())
    for path in EXAMPLES.glob("*.yaml"):
        assert list(validator.iter_errors(yaml.safe_load(path.read_text()))) == []
    bad = ROOT / "tests" / "fixtures" / "bad_trees"
    for name in ("unknown_key.yaml", "fix_no_steps.yaml", "bad_lang.yaml", "rule_syntax.yaml"):
        assert list(validator.iter_errors(yaml.safe_load((bad / name).read_text()))), name
