"""A tree as a Markdown runbook: summary, Mermaid flowchart, every question, every fix.

The page is meant to be committed into a wiki and read on GitHub or GitLab, so it is plain
CommonMark: node sections carry explicit anchors made from node ids (see `anchors.py`), answers
link to the section they lead to (in this page or in `other-tree.md`), and code is fenced with
more backticks than it contains. Nothing depends on the clock, so output is reproducible.
"""

from __future__ import annotations

import bisect
import re

from trainmedic.export.anchors import SlugCounter, github_slug, heading_text, node_anchors
from trainmedic.export.escalation import escalation_lines
from trainmedic.export.fixview import fix_view
from trainmedic.export.mermaid import diagram_ids, tree_diagram
from trainmedic.redact import redact_text
from trainmedic.trees import Fix, Forest, Question, Tree

FIXED_HEADINGS = ("Flowchart", "Questions", "Fixes", "Escalation: when no fix helped")
_BACKTICKS = re.compile(r"`+")
_BLANK_LINE = re.compile(r"\n[ \t]*\n")
_LANG = re.compile(r"[A-Za-z0-9_+.#-]{1,32}")
_URL = re.compile(r"https?://[^\s<>\\`\"']+", re.IGNORECASE)  # fits in `(<...>)` as it is
_ASCII_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


def runbook_file(tree_id: str) -> str:
    return f"{tree_id}.md"


# Tree text is untrusted: a tree from a colleague's folder must not put HTML into a wiki page.
# Rather than escaping around the author's markup and hoping CommonMark reads it the same way,
# the text is split into plain parts and code spans, the way CommonMark splits it (within one
# paragraph; a backslash escapes a backtick; a span closes at a run of the same length), and
# written out again: plain parts with every character that could start markup escaped, code
# spans with fences of our own. Whatever the input, the output holds no HTML and no link.


def _parts(text: str) -> list[tuple[bool, str]]:
    """[(is_code, text)] of one paragraph, as CommonMark reads its code spans."""
    runs: dict[int, list[int]] = {}  # backtick-run length -> start positions, in order
    for m in _BACKTICKS.finditer(text):
        runs.setdefault(len(m[0]), []).append(m.start())
    parts: list[tuple[bool, str]] = []
    plain: list[str] = []
    i, n = 0, len(text)
    while i < n:
        char = text[i]
        if char == "\\" and i + 1 < n and text[i + 1] in _ASCII_PUNCTUATION:
            plain.append(text[i + 1])  # `\`` is a literal backtick, `\*` a literal star
            i += 2
            continue
        if char != "`":
            j = i + 1
            while j < n and text[j] not in "`\\":
                j += 1
            plain.append(text[i:j])
            i = j
            continue
        j = i
        while j < n and text[j] == "`":
            j += 1
        length = j - i
        starts = runs.get(length, [])
        k = bisect.bisect_left(starts, j)
        # a closer is a maximal run of the same length (a run cut by an escape is not maximal)
        while k < len(starts) and (starts[k] + length < n and text[starts[k] + length] == "`"):
            k += 1
        if k < len(starts) and (starts[k] == 0 or text[starts[k] - 1] != "`"):
            if plain:
                parts.append((False, "".join(plain)))
                plain = []
            parts.append((True, text[j : starts[k]]))
            i = starts[k] + length
        else:
            plain.append(text[i:j])  # no closer: the backticks are literal
            i = j
    if plain:
        parts.append((False, "".join(plain)))
    return parts


def code_span(text: str) -> str:
    """Inline code that survives backticks (and line breaks) in the text."""
    text = " ".join(str(text).split())
    longest = max((len(r) for r in _BACKTICKS.findall(text)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _escape_plain(text: str, specials: str) -> str:
    """Plain text with backslashes, backticks, `<` and `[` (and `specials`) escaped: no HTML,
    no code span, no link, no image can start in it."""
    out = []
    for char in text:
        if char == "<":
            out.append("&lt;")
        elif char in "\\`[]" or char in specials:
            out.append("\\" + char)
        else:
            out.append(char)
    return "".join(out)


def _inline(text: str, specials: str = "") -> str:
    """One paragraph of tree text as safe inline Markdown (code spans kept as code), redacted
    first: a user tree may quote a token, and escaping would hide it from the patterns."""
    out = []
    for is_code, part in _parts(redact_text(text)):
        out.append(code_span(part) if is_code and part.strip() else
                   ("`" + part + "`" if is_code else _escape_plain(part, specials)))
    return "".join(out)


def prose(text: str) -> str:
    """Tree text as Markdown paragraphs: the author's code spans kept, nothing else is markup."""
    paragraphs = []
    for paragraph in _BLANK_LINE.split(str(text).strip()):
        lines = _inline(paragraph.strip("\n")).split("\n")
        # a line may not start a heading or a ~~~ fence of its own
        paragraphs.append("\n".join(re.sub(r"^(\s*)([#~])", r"\1\\\2", line) for line in lines))
    return "\n\n".join(paragraphs)


def one_line(text: str, *, table: bool = False) -> str:
    """Text for a heading, a table cell or link text: one line, nothing that breaks the syntax."""
    flat = " ".join(str(text).split())
    escaped = _inline(flat, "#*_")
    return escaped.replace("|", "\\|") if table else escaped


def safe_url(url: str) -> str | None:
    """The URL when it is a plain http(s) URL that cannot break out of `(<...>)`, else None."""
    url = str(url).strip()
    return url if _URL.fullmatch(url) else None


def fence(code: str, lang: str) -> list[str]:
    """A fenced block that survives code containing ``` (the fence is always longer)."""
    longest = max((len(run) for run in _BACKTICKS.findall(code)), default=0)
    marks = "`" * max(3, longest + 1)
    # the info string comes from the tree: a backtick or a line break in it would unmake the fence
    lang = lang if _LANG.fullmatch(lang or "") else ""
    return [f"{marks}{lang}", *redact_text(code).rstrip("\n").splitlines(), marks]


def indent(lines: list[str], by: str) -> list[str]:
    return [by + line if line else "" for line in lines]


def node_title(node: Question | Fix) -> str:
    return str(node.question if isinstance(node, Question) else node.fix)


def page_headings(tree: Tree) -> list[str]:
    """Every heading of the tree's page, in order (the anchors of node sections avoid them)."""
    numbers = diagram_ids(tree).numbers
    questions = [f"{numbers[q.id]}. {one_line(q.question)}" for q in tree.questions()]
    fixes = [f"{numbers[f.id]}. {one_line(f.fix)}" for f in tree.fixes()]
    return [one_line(tree.title), FIXED_HEADINGS[0], FIXED_HEADINGS[1], *questions,
            FIXED_HEADINGS[2], *fixes, FIXED_HEADINGS[3]]


def tree_anchors(tree: Tree) -> dict[str, str]:
    """node id -> the anchor of its section in the tree's runbook."""
    counter = SlugCounter()
    slugs = [counter.add(github_slug(heading_text(h))) for h in page_headings(tree)]
    return node_anchors(tree.nodes, slugs)


def link_to(forest: Forest, tree: Tree, goto: str, anchors: dict[str, dict[str, str]],
            numbers: dict[str, dict[str, str]] | None = None) -> str:
    """`[Q3. text](#anchor)` or `[other title › Q1. text](other.md#anchor)` for an answer.

    `anchors` and `numbers` cache each tree's anchors and node numbers: computing them per
    answer made a page quadratic in its size (20,000 nodes took minutes)."""
    ref = forest.resolve(tree.id, goto)
    if ref is None:
        return f"{code_span(goto)} (missing)"
    target_tree = forest.trees[ref.tree]
    if ref.tree not in anchors:
        anchors[ref.tree] = tree_anchors(target_tree)
    numbers = {} if numbers is None else numbers
    if ref.tree not in numbers:
        numbers[ref.tree] = diagram_ids(target_tree).numbers
    node = target_tree.nodes[ref.node]
    number = numbers[ref.tree][ref.node]
    text = f"{number}. {node_title(node)}"
    if ref.tree == tree.id:
        return f"[{one_line(text)}](#{anchors[ref.tree][ref.node]})"
    where = f"{target_tree.title} \u203a {text}"
    return f"[{one_line(where)}]({runbook_file(ref.tree)}#{anchors[ref.tree][ref.node]})"


def tree_markdown(forest: Forest, tree: Tree) -> str:
    anchors = {tree.id: tree_anchors(tree)}
    numbers = diagram_ids(tree).numbers
    all_numbers = {tree.id: numbers}
    questions, fixes = forest.counts(tree.id)
    start = tree.nodes[tree.start]
    out = [
        f"# {one_line(tree.title)}",
        "",
        prose(tree.summary),
        "",
        f"Tree `{tree.id}`: {questions} question(s), {fixes} fix(es). Start at "
        f"[{one_line(numbers[tree.start] + '. ' + node_title(start))}]"
        f"(#{anchors[tree.id][tree.start]}), or walk it with `trainmedic walk {tree.id}`.",
        "",
        f"<!-- Generated by `trainmedic export {tree.id}` from the tree file; "
        "edit the YAML, not this page. -->",
        "",
        f"## {FIXED_HEADINGS[0]}",
        "",
        *fence(tree_diagram(forest, tree), "mermaid"),
        "",
        f"## {FIXED_HEADINGS[1]}",
        "",
    ]
    for question in tree.questions():
        out += _question(forest, tree, question, numbers[question.id], anchors, all_numbers)
    out += [f"## {FIXED_HEADINGS[2]}", ""]
    for fix in tree.fixes():
        out += _fix(fix, numbers[fix.id], anchors[tree.id][fix.id], f"{tree.id}#{fix.id}")
    out += [f"## {FIXED_HEADINGS[3]}", "", *escalation_lines(tree.id)]
    return "\n".join(out).rstrip("\n") + "\n"


def _question(forest: Forest, tree: Tree, node: Question, number: str,
              anchors: dict[str, dict[str, str]],
              numbers: dict[str, dict[str, str]]) -> list[str]:
    out = [f'<a id="{anchors[tree.id][node.id]}"></a>', "",
           f"### {number}. {one_line(node.question)}", ""]
    if node.help:
        out += ["How to tell:", "", *fence(str(node.help), "text"), ""]
    out += ["Answers, most likely first:", ""]
    for index, answer in enumerate(node.answers, start=1):
        out.append(f"{index}. {one_line(answer.text)} \u2192 "
                   f"{link_to(forest, tree, answer.goto, anchors, numbers)}")
        if answer.when:
            rules = " and ".join(code_span(str(rule)) for rule in answer.when)
            because = f": {one_line(answer.because)}" if answer.because else ""
            out.append(f"   - Suggested by the probes when {rules}{because}")
    out.append("")
    if node.source:
        out += [f"Source: {one_line('; '.join(node.source))}", ""]
    return out


def _fix(node: Fix, number: str, anchor: str, ref: str) -> list[str]:
    view = fix_view(node, ref)
    out = [f'<a id="{anchor}"></a>', "", f"### {number}. {one_line(view.title)}", ""]
    if view.target:
        out += [f"For {view.target}.", ""]
    out += [f"**Why.** {prose(view.why)}", "", "**Steps.**", ""]
    for step in view.steps:
        lead = f"{step.number}. "
        body = prose(step.do).splitlines() or [""]
        if step.target:
            body[0] = f"**For {one_line(step.target)}:** {body[0]}"
        out.append(lead + body[0])
        out += indent(body[1:], " " * len(lead))
        if step.mark:
            out += ["", " " * len(lead) + f"> **{prose(step.mark)}**"]
        if step.code is not None:
            out.append("")
            out += indent(fence(step.code, step.lang), " " * len(lead))
        out.append("")
    if view.verify:
        out += [f"**Verify.** {prose(view.verify)}", ""]
    if view.myth:
        out += [f"**Myth.** {prose(view.myth)}", ""]
    if view.refs:
        out += ["**References.**", ""]
        for reference in view.refs:
            title = one_line(reference.title)
            url = safe_url(reference.url) if reference.url else None
            if url:
                out.append(f"- [{title}](<{url}>)")
            else:  # not http(s): shown as text, never a link
                out.append(f"- {title}" + (f": {code_span(reference.url)}"
                                           if reference.url else ""))
        out.append("")
    if view.source:
        out += [f"Source: {one_line('; '.join(view.source))}", ""]
    return out


def index_markdown(forest: Forest, files: dict[str, str]) -> str:
    """`README.md` of an exported folder: every tree with title, summary and counts."""
    out = [
        "# trainmedic runbooks",
        "",
        "Decision trees for distributed training incidents, exported as runbooks. Start with "
        "[triage](triage.md) when you do not yet know what failed."
        if "triage" in files else
        "Decision trees for distributed training incidents, exported as runbooks.",
        "",
        "Regenerate with `trainmedic export --all -o DIR`; edit the YAML trees, not these pages.",
        "",
        "<!-- Generated by `trainmedic export --all`; edit the YAML trees, not these pages. -->",
        "",
        "| Tree | Title | Summary | Questions | Fixes |",
        "|---|---|---|---|---|",
    ]
    for tree_id in sorted(files):
        tree = forest.trees[tree_id]
        questions, fixes = forest.counts(tree_id)
        out.append(f"| [`{tree_id}`]({files[tree_id]}) | {one_line(tree.title, table=True)} | "
                   f"{one_line(tree.summary, table=True)} | {questions} | {fixes} |")
    return "\n".join(out) + "\n"
