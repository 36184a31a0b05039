"""Runbooks parsed by a real CommonMark parser (markdown-it-py, installed with rich): every code
step comes back byte for byte, the Mermaid block is the diagram, and the only HTML is anchors."""

from __future__ import annotations

import re

import pytest

from trainmedic.export.markdown import page_headings, tree_markdown
from trainmedic.export.mermaid import tree_diagram

markdown_it = pytest.importorskip("markdown_it", reason="markdown-it-py is not installed")
ALLOWED_HTML = re.compile(r'^(<a id="[a-z0-9-]+">|</a>|<!-- .* -->)$')


def tokens(page: str):
    parser = markdown_it.MarkdownIt("commonmark")
    flat = []
    for token in parser.parse(page):
        flat.append(token)
        flat.extend(token.children or [])
    return flat


def test_runbooks_parse_back_into_the_tree(any_forest):
    for tree in any_forest.trees.values():
        page = tree_markdown(any_forest, tree)
        parsed = tokens(page)
        fences = [(t.info.strip(), t.content) for t in parsed if t.type == "fence"]
        assert [c for info, c in fences if info == "mermaid"] == [tree_diagram(any_forest, tree)]
        contents = [c for _, c in fences]
        for fix in tree.fixes():
            for step in fix.steps:
                if step.code:
                    assert step.code.rstrip("\n") + "\n" in contents, (tree.id, fix.id)
        for question in tree.questions():
            if question.help:
                assert str(question.help).rstrip("\n") + "\n" in contents, (tree.id, question.id)
        html = [t.content.strip() for t in parsed if t.type in ("html_block", "html_inline")]
        assert all(ALLOWED_HTML.match(h) for h in html), (tree.id, html)
        headings = [t for t in parsed if t.type == "heading_open"]
        assert len(headings) == len(page_headings(tree)), tree.id
