"""Every tree's runbook: each node once, every link lands, valid Mermaid, same bytes twice."""

from __future__ import annotations

import re

import mermaid_grammar

from trainmedic.commands.export import export_all
from trainmedic.export.anchors import broken_links, duplicate_anchors, scan_page
from trainmedic.export.markdown import fence, runbook_file, tree_anchors, tree_markdown
from trainmedic.export.mermaid import (
    EDGE_LABEL_MAX,
    diagram_ids,
    escape_label,
    shorten,
    tree_diagram,
)
from trainmedic.trees import Question

MERMAID_BLOCK = re.compile(r"^```mermaid\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def pages(forest):
    return {runbook_file(t): tree_markdown(forest, forest.trees[t]) for t in forest.trees}


def test_every_node_has_exactly_one_section_and_one_diagram_node(any_forest):
    for tree in any_forest.trees.values():
        page = tree_markdown(any_forest, tree)
        anchors = tree_anchors(tree)
        for node_id in tree.nodes:
            assert page.count(f'<a id="{anchors[node_id]}"></a>') == 1, (tree.id, node_id)
        headings = re.findall(r"^### ([QF]\d+)\. ", page, re.MULTILINE)
        assert sorted(headings) == sorted(diagram_ids(tree).numbers.values()), tree.id
        (diagram,) = MERMAID_BLOCK.findall(page)
        own = [i for i in mermaid_grammar.node_ids(diagram) if i[0] in "qf"]
        assert sorted(own) == sorted(diagram_ids(tree).ids.values()), tree.id


def test_every_internal_link_resolves_and_no_anchor_is_duplicated(any_forest):
    rendered = pages(any_forest)
    assert broken_links(rendered) == []
    for name, page in rendered.items():
        assert duplicate_anchors(page) == [], name
        assert scan_page(page).links, f"{name} has no links at all"


def test_answers_link_to_the_section_they_lead_to(any_forest):
    for tree in any_forest.trees.values():
        page = tree_markdown(any_forest, tree)
        for question in tree.questions():
            for answer in question.answers:
                ref = any_forest.resolve(tree.id, answer.goto)
                if ref is None:  # a tree still being written: lint reports it, we mark it
                    assert f"`{answer.goto}` (missing)" in page, (tree.id, answer.goto)
                    continue
                anchor = tree_anchors(any_forest.trees[ref.tree])[ref.node]
                target = f"#{anchor})" if ref.tree == tree.id else f"{ref.tree}.md#{anchor})"
                assert target in page, (tree.id, question.id, answer.goto)


def test_mermaid_of_every_tree_is_in_the_strict_grammar(any_forest):
    for tree in any_forest.trees.values():
        diagram = tree_diagram(any_forest, tree)
        assert mermaid_grammar.check(diagram) == [], tree.id
        edges = sum(len(q.answers) for q in tree.questions())
        assert diagram.count(" -->|") == edges, tree.id
        (embedded,) = MERMAID_BLOCK.findall(tree_markdown(any_forest, tree))
        assert embedded == diagram


def test_export_is_deterministic(any_forest, tmp_path):
    first = export_all(any_forest, tmp_path / "a", "markdown")
    second = export_all(any_forest, tmp_path / "b", "markdown")
    assert [p.name for p in first] == [p.name for p in second]
    for a, b in zip(first, second, strict=True):
        assert a.read_bytes() == b.read_bytes(), a.name
    index = (tmp_path / "a" / "README.md").read_text(encoding="utf-8")
    for tree_id in any_forest.trees:
        questions, fixes = any_forest.counts(tree_id)
        assert re.search(rf"\[`{re.escape(tree_id)}`\]\({re.escape(tree_id)}\.md\) \|.* \| "
                         rf"{questions} \| {fixes} \|$", index, re.MULTILINE), tree_id
    all_pages = {p.name: p.read_text(encoding="utf-8") for p in first}
    assert broken_links(all_pages) == []


def test_labels_with_brackets_quotes_hash_pipe_angle_and_non_ascii_are_entity_coded():
    raw = 'Is it "A|B" or <C> [D] #G; 显存 `x` & é?'
    label = escape_label(raw)
    assert '"' not in label and "|" not in label and "<" not in label and "`" not in label
    assert "#quot;A#124;B#quot;" in label and "#60;C#62;" in label and "#26174;#23384;" in label
    assert mermaid_grammar.decode(f'"{label}"') == raw


def test_escaping_tree_labels_decode_to_the_tree_text(escaping_forest):
    tree = escaping_forest.trees["escaping"]
    shown = mermaid_grammar.labels(tree_diagram(escaping_forest, tree))
    question = tree.nodes["end"]
    assert isinstance(question, Question)
    assert f"Q1. {question.question}" in shown
    assert f"1. {shorten(question.answers[0].text, EDGE_LABEL_MAX)}" in shown


def test_node_ids_that_collide_with_headings_get_distinct_anchors(escaping_forest):
    anchors = tree_anchors(escaping_forest.trees["escaping"])
    assert anchors["end"] == "end"
    assert anchors["questions"] != "questions" and anchors["flowchart"] != "flowchart"
    assert len(set(anchors.values())) == len(anchors)


def test_code_containing_fences_survives_in_a_longer_fence(escaping_forest):
    page = tree_markdown(escaping_forest, escaping_forest.trees["escaping"])
    code = escaping_forest.trees["escaping"].nodes["flowchart"].steps[0].code
    block = "\n".join("   " + line for line in fence(code, "bash"))
    assert block in page
    assert block.splitlines()[0].strip() == "````bash"
    assert fence("echo '`````'", "text")[0] == "``````text"
    # the page's fenced blocks all close: scanning outside code finds no stray ``` heading text
    assert "print(\"hi\")" not in "\n".join(scan_page(page).anchors)


def test_html_and_heading_marks_in_prose_are_neutralised(escaping_forest):
    page = tree_markdown(escaping_forest, escaping_forest.trees["escaping"])
    assert "<script>" not in page
    assert "\n\\# nor this one" in page
    assert "<tricky>" not in page.split("```mermaid")[0]
