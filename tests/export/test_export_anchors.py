"""GitHub heading slugs, anchor collisions, and the link checker (which must be able to fail)."""

from __future__ import annotations

import pytest

from trainmedic.export.anchors import (
    SlugCounter,
    broken_links,
    duplicate_anchors,
    github_slug,
    heading_text,
    node_anchors,
    scan_page,
)


@pytest.mark.parametrize(("heading", "slug"), [
    ("Escalation: when no fix helped", "escalation-when-no-fix-helped"),
    ("Q1. What do you see?", "q1-what-do-you-see"),
    ("F3. Set `NCCL_SOCKET_IFNAME` to the right interface",
     "f3-set-nccl_socket_ifname-to-the-right-interface"),
    ("C++ & Rust", "c--rust"),  # GitHub does not collapse hyphens
    ("显存 OOM (fp8)", "显存-oom-fp8"),
    ("Q2. Is it \\[A\\] &lt;B>?", "q2-is-it-a-b"),
])
def test_github_slug_of_rendered_heading_text(heading, slug):
    assert github_slug(heading_text(heading)) == slug


def test_duplicate_headings_get_numbered_like_github():
    counter = SlugCounter()
    assert [counter.add(s) for s in ["fixes", "fixes", "fixes-1", "fixes"]] == \
        ["fixes", "fixes-1", "fixes-1-1", "fixes-2"]


def test_node_anchor_avoids_heading_slugs():
    assert node_anchors(["fixes", "oom", "node-fixes"], ["fixes", "questions"]) == \
        {"fixes": "node-fixes", "oom": "oom", "node-fixes": "node-node-fixes"}


def test_link_checker_finds_missing_pages_and_anchors_and_ignores_code():
    pages = {
        "a.md": "# A\n\n<a id=\"x\"></a>\n\n[ok](#x) [ok2](b.md#b) [head](#a)\n"
                "[bad](#nope) [bad2](b.md#nope) [bad3](c.md#x) [web](https://e.com/#z)\n"
                "```md\n[in code](#ignored)\n# not a heading\n```\n`[span](#ignored)`\n",
        "b.md": "# B\n",
    }
    assert broken_links(pages) == ["a.md: #nope: no such anchor",
                                   "a.md: b.md#nope: no such anchor",
                                   "a.md: c.md#x: no such page"]
    assert "not-a-heading" not in scan_page(pages["a.md"]).anchors


def test_duplicate_anchor_detection():
    assert duplicate_anchors('<a id="fixes"></a>\n\n## Fixes\n') == ["fixes"]
    assert duplicate_anchors("## Fixes\n\n## Fixes\n") == []  # GitHub numbers them
