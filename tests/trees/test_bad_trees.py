"""Every broken tree in the corpus gives exactly the expected `FILE:LINE: severity: message`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from trainmedic.trees.forest import load_forest
from trainmedic.trees.lint import lint_forest

BAD = Path(__file__).parent.parent / "fixtures" / "bad_trees"
# A fixed registry, so messages do not change when the real probes gain facts.
DECLARED = {"gpu": {"count": "int", "max_memory_fraction": "float", "driver_ok": "bool"},
            "env": {"nccl_debug": "str", "myth_vars": "list"}}

EXPECTED: dict[str, list[str]] = {
    "yaml_syntax.yaml": ["6: error: YAML syntax: did not find expected ',' or ']'"],
    "tabs.yaml": ["7: error: YAML syntax: found character that cannot start any token "
                  "(a tab: YAML indentation must use spaces)"],
    "empty.yaml": ["1: error: file is empty"],
    "list_root.yaml": ["1: error: a tree file must hold a mapping, not a list"],
    "binary.yaml": ["1: error: not UTF-8: byte 0xa5 cannot be decoded"],
    "non_utf8.yaml": ["3: error: not UTF-8: byte 0xe9 cannot be decoded"],
    "alias_bomb.yaml": ["3: error: anchors and aliases are not supported in trees"],
    "merge_key.yaml": ["7: error: merge keys (<<) are not supported"],
    "python_tag.yaml": ["2: error: tag !!python/object/apply:os.system is not allowed in trees"],
    "two_documents.yaml": ["12: error: YAML syntax: but found another document"],
    "duplicate_key.yaml": ["3: error: duplicate key 'title' (first at line 2)"],
    "duplicate_node_id.yaml": ["12: error: duplicate key 'a' (first at line 6)"],
    "unknown_key.yaml": [
        "1: error: the tree is missing required key 'title'",
        "2: error: unknown key 'titel' in the tree (did you mean 'title'?); "
        "allowed: id, nodes, start, summary, tags, title",
    ],
    "missing_key.yaml": ["1: error: the tree is missing required key 'summary'"],
    "wrong_type_answers.yaml": ["8: error: 'answers' of question 'q' must be a list, not a string"],
    "wrong_type_title.yaml": ["2: error: 'title' of the tree must be text, not a list"],
    "translation_no_en.yaml": ["2: error: 'title' of the tree has translations but no 'en' text"],
    "bad_id.yaml": ["1: error: 'id' of the tree must be an id (lower-case id: letters, digits "
                    "and '-'), got 'My Tree'"],
    "bad_goto_shape.yaml": ["10: error: 'goto' of an answer of node 'q' must be `node`, "
                            "`tree-id` or `tree-id#node`, got 'Some Node!'"],
    "bad_lang.yaml": ["12: error: 'lang' of a step of fix 'a' must be one of bash, python, "
                      "yaml, json, text, console, toml, ini"],
    "both_kinds.yaml": ["6: error: node 'a' has both 'question' and 'fix'; it must be one"],
    "no_kind.yaml": [
        "9: error: 'goto: limbo' is neither a node of tree 'no-kind' nor a tree id",
        "13: error: node 'limbo' needs a 'question' or a 'fix' key",
    ],
    "missing_start.yaml": ["4: error: start node 'nowhere' does not exist in tree 'missing-start'"],
    "unresolved_goto.yaml": [
        "11: error: 'goto: b' is neither a node of tree 'unresolved-goto' nor a tree id"],
    "unresolved_tree.yaml": [
        "11: error: link 'no-such-tree#start' names tree 'no-such-tree', which does not exist"],
    "unreachable.yaml": ["12: error: node 'orphan' is unreachable from start 'a'"],
    "cycle.yaml": ["9: error: cycle: cycle#q1 -> cycle#q2 -> cycle#q1"],
    "no_answers.yaml": ["8: error: question 'q' has no answers"],
    "fix_no_code.yaml": ["6: error: fix 'a' has no concrete step: give at least one step a "
                         "'code' (command, flag, variable or code)"],
    "fix_no_steps.yaml": ["9: error: fix 'a' has no steps"],
    "unknown_probe.yaml": ["11: error: rule 'gpux.max_memory_fraction >= 0.95': no probe named "
                           "'gpux' (env, gpu)"],
    "unknown_fact.yaml": ["11: error: rule 'gpu.memory_fullness >= 0.95': probe 'gpu' has no "
                          "fact 'memory_fullness' (facts: count, driver_ok, max_memory_fraction)"],
    "rule_type.yaml": ["13: error: rule 'gpu.max_memory_fraction >= \"high\"': fact is float, "
                       "compared with 'high'"],
    "rule_syntax.yaml": ["11: error: cannot read rule 'the GPU memory is nearly full': write "
                         "'probe.fact OP value' with OP one of == != <= >= < > contains"],
    "too_many_answers.yaml": ["8: warning: question 'q' has 10 answers; only 1-9 get a number key"],
    "bad_weight_nan.yaml": ["16: error: 'weight' of signature 'bad-weight-nan-sig' must be a "
                            "number, not 'nan'"],
    "bad_weight_bool.yaml": ["16: error: 'weight' of signature 'bad-weight-bool-sig' must be a "
                             "number, not 'yes'"],
    "bad_confidence_range.yaml": ["16: error: 'confidence' of signature "
                                  "'bad-confidence-range-sig' must be between 0 and 1, not 1.5"],
    "duplicate_tree_id": [
        "second.yaml:1: error: duplicate tree id 'same-id' (also at {dir}/first.yaml:1)"],
    "cross_tree_missing_node": [
        "caller.yaml:11: error: link 'callee#missing': tree 'callee' has no node 'missing'"],
}


def lint_lines(path: Path) -> list[str]:
    forest = load_forest([path], builtin=False)
    return [str(p) for p in lint_forest(forest, DECLARED)]


def test_corpus_is_complete() -> None:
    on_disk = {p.name for p in BAD.iterdir()}
    assert on_disk == set(EXPECTED), "every fixture needs an expectation and vice versa"
    assert len(on_disk) >= 25


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_bad_tree(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(BAD.parent.parent.parent)  # paths are shown relative to the cwd
    path = BAD / name
    prefix = os.path.relpath(path) + ("/" if path.is_dir() else ":")
    expected = [prefix + line.format(dir=os.path.relpath(path)) for line in EXPECTED[name]]
    assert lint_lines(path) == expected


def test_huge_file_is_refused_without_reading_it(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    with big.open("wb") as handle:
        handle.truncate(50 * 1024 * 1024)  # sparse: 50 MB of zero bytes
    assert lint_lines(big) == [f"{big}:1: error: file is 52.4 MB; a tree file may be at most 2 MB"]


def test_bom_is_accepted(tmp_path: Path) -> None:
    tree = tmp_path / "bom.yaml"
    example = BAD.parent.parent.parent / "docs" / "examples" / "example-hang.yaml"
    tree.write_bytes(b"\xef\xbb\xbf" + example.read_bytes())
    forest = load_forest([tree], builtin=False)
    assert "example-hang" in forest.trees
    assert [str(p) for p in lint_forest(forest, DECLARED)] == []
