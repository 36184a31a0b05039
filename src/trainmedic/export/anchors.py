"""Stable link targets in exported runbooks, and the checks that prove every link lands.

Headings get ids from their text (GitHub's slug), which changes whenever a title is reworded and
differs between GitHub and GitLab. Node sections therefore carry an explicit `<a id="...">` made
from the node id, which only changes when the id does. `node_anchors` guarantees those ids never
collide with a heading slug of the same page.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

_CODE_SPAN = re.compile(r"(`+)(.+?)\1")
_HTML_TAG = re.compile(r"<[^>]*>")
_MD_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_ENTITY = re.compile(r"&(#\d+|#x[0-9a-fA-F]+|[A-Za-z]+);")

EXPLICIT_ANCHOR = re.compile(r'<a id="([^"]+)"></a>')
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
LINK = re.compile(r"(?<!!)\[(?:[^\]\\]|\\.)*\]\(<?([^)\s>]+)>?\)")
FENCE = re.compile(r"^\s*(`{3,}|~{3,})")


def heading_text(markdown_heading: str) -> str:
    """The visible text of a heading's Markdown (code spans kept, links and tags dropped)."""
    text = _CODE_SPAN.sub(lambda m: m[2], markdown_heading)
    text = _MD_LINK.sub(lambda m: m[1], text)
    text = _HTML_TAG.sub("", text)
    text = _ENTITY.sub(lambda m: _entity(m[1]), text)
    return text.replace("\\", "")


def _entity(name: str) -> str:
    named = {"lt": "<", "gt": ">", "amp": "&", "quot": '"', "apos": "'"}
    if name.startswith("#x"):
        return chr(int(name[2:], 16))
    if name.startswith("#"):
        return chr(int(name[1:]))
    return named.get(name, "")


def github_slug(text: str) -> str:
    """GitHub's heading id: lower case, punctuation dropped, each space a hyphen (not collapsed)."""
    out = []
    for char in text.strip().lower():
        if char == " ":
            out.append("-")
        elif char in "-_" or char.isalnum() or unicodedata.category(char).startswith("M"):
            out.append(char)
    return "".join(out)


class SlugCounter:
    """Deduplicates slugs the way GitHub does: the second `x` becomes `x-1`, then `x-2`."""

    def __init__(self) -> None:
        self._seen: dict[str, int] = {}

    def add(self, slug: str) -> str:
        if slug not in self._seen:
            self._seen[slug] = 0
            return slug
        while True:
            self._seen[slug] += 1
            candidate = f"{slug}-{self._seen[slug]}"
            if candidate not in self._seen:
                self._seen[candidate] = 0
                return candidate


def node_anchors(node_ids: Iterable[str], heading_slugs: Iterable[str]) -> dict[str, str]:
    """node id -> explicit anchor id: the node id itself unless a heading already owns it."""
    taken = set(heading_slugs)
    anchors: dict[str, str] = {}
    for node_id in node_ids:
        anchor = node_id
        while anchor in taken:
            anchor = f"node-{anchor}"
        taken.add(anchor)
        anchors[node_id] = anchor
    return anchors


@dataclass
class PageTargets:
    """What a rendered page offers as link targets and what it links to."""

    anchors: list[str]  # explicit ids and heading slugs, in page order, duplicates kept
    links: list[str]  # every link destination outside code blocks


def scan_page(markdown: str) -> PageTargets:
    """Collect heading slugs, explicit anchors and links, ignoring fenced code blocks."""
    anchors: list[str] = []
    links: list[str] = []
    counter = SlugCounter()
    fence: str | None = None
    for line in markdown.splitlines():
        opener = FENCE.match(line)
        if fence is not None:
            if opener and opener[1][0] == fence[0] and len(opener[1]) >= len(fence) \
                    and line.strip() == opener[1]:
                fence = None
            continue
        if opener:
            fence = opener[1]
            continue
        heading = HEADING.match(line)
        if heading:
            anchors.append(counter.add(github_slug(heading_text(heading[2]))))
        anchors.extend(EXPLICIT_ANCHOR.findall(line))
        links.extend(LINK.findall(_CODE_SPAN.sub("", line)))
    return PageTargets(anchors, links)


def broken_links(pages: dict[str, str]) -> list[str]:
    """`page: link` for every relative link whose file or anchor does not exist among `pages`.

    `pages` maps a file name (`oom.md`) to its Markdown; links to other schemes are ignored.
    """
    targets = {name: scan_page(text) for name, text in pages.items()}
    problems: list[str] = []
    for name, page in targets.items():
        for link in page.links:
            if re.match(r"^[a-z][a-z0-9+.-]*:", link):
                continue
            file, _, fragment = link.partition("#")
            target = targets.get(file or name)
            if target is None:
                problems.append(f"{name}: {link}: no such page")
            elif fragment and fragment not in target.anchors:
                problems.append(f"{name}: {link}: no such anchor")
    return problems


def duplicate_anchors(markdown: str) -> list[str]:
    anchors = scan_page(markdown).anchors
    return sorted({a for a in anchors if anchors.count(a) > 1})
