"""A tree as a Mermaid flowchart that GitHub and GitLab render as written.

Mermaid's grammar breaks on brackets, quotes, `#`, `|` and `<` in bare labels, and on node ids
such as `end`. So node ids are generated (`q1`, `f1`, `x1`), every label is a double-quoted
string, and every character outside a small safe set is written as a `#NNN;` entity code.
"""

from __future__ import annotations

from dataclasses import dataclass

from trainmedic.redact import redact_text
from trainmedic.trees import Fix, Forest, Question, Tree

SAFE_CHARS = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,:;!?'/()[]{}-_+=*%@$~^"
)
NODE_LABEL_MAX = 70
EDGE_LABEL_MAX = 50


def shorten(text: str, limit: int) -> str:
    """One line, at most `limit` characters, cut at a word when possible."""
    flat = " ".join(str(text).split())
    if len(flat) <= limit:
        return flat
    cut = flat[: limit - 1]
    if " " in cut[limit // 2 :]:
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip(" .,:;") + "\u2026"


def escape_label(text: str) -> str:
    """Label text for inside `"..."`: unsafe characters become Mermaid entity codes."""
    out = []
    for char in " ".join(str(text).split()):
        if char in SAFE_CHARS:
            out.append(char)
        elif char == '"':
            out.append("#quot;")
        else:
            out.append(f"#{ord(char)};")
    return "".join(out)


def quoted(text: str, limit: int) -> str:
    # redacted before it is shortened and encoded: either would hide a secret from the patterns
    return '"' + escape_label(shorten(redact_text(text), limit)) + '"'


@dataclass(frozen=True)
class DiagramIds:
    """Mermaid ids and the human numbers (`Q1`, `F2`) shared with the Markdown headings."""

    ids: dict[str, str]  # node id -> q1 / f1
    numbers: dict[str, str]  # node id -> Q1 / F1


def diagram_ids(tree: Tree) -> DiagramIds:
    ids: dict[str, str] = {}
    numbers: dict[str, str] = {}
    counts = {"q": 0, "f": 0}
    for node_id, node in tree.nodes.items():
        letter = "q" if isinstance(node, Question) else "f"
        counts[letter] += 1
        ids[node_id] = f"{letter}{counts[letter]}"
        numbers[node_id] = f"{letter.upper()}{counts[letter]}"
    return DiagramIds(ids, numbers)


def node_label(number: str, node: Question | Fix) -> str:
    text = node.question if isinstance(node, Question) else node.fix
    return f"{number}. {text}"


def tree_diagram(forest: Forest, tree: Tree) -> str:
    """The whole tree: questions as boxes, fixes as rounded boxes, other trees as hexagons."""
    names = diagram_ids(tree)
    lines = ["flowchart TD"]
    for node_id, node in tree.nodes.items():
        label = quoted(node_label(names.numbers[node_id], node), NODE_LABEL_MAX)
        if isinstance(node, Question):
            lines.append(f"    {names.ids[node_id]}[{label}]")
        else:
            lines.append(f"    {names.ids[node_id]}([{label}])")
    external: dict[str, str] = {}
    edges: list[str] = []
    for node_id, node in tree.nodes.items():
        if not isinstance(node, Question):
            continue
        for index, answer in enumerate(node.answers, start=1):
            ref = forest.resolve(tree.id, answer.goto)
            if ref is None:
                target = _external(external, lines, answer.goto, f"{answer.goto} (missing)")
            elif ref.tree == tree.id:
                target = names.ids[ref.node]
            else:
                label = _other_tree_label(forest, ref.tree, ref.node)
                target = _external(external, lines, str(ref), label)
            label = quoted(f"{index}. {answer.text}", EDGE_LABEL_MAX)
            edges.append(f"    {names.ids[node_id]} -->|{label}| {target}")
    lines.extend(edges)
    if tree.fixes():
        lines.append("    classDef fix fill:#dafbe1,stroke:#1a7f37,color:#0f2e17")
        lines.append("    class " + ",".join(names.ids[f.id] for f in tree.fixes()) + " fix")
    if external:
        lines.append("    classDef link fill:#ddf4ff,stroke:#0969da,color:#0a3069")
        lines.append("    class " + ",".join(external.values()) + " link")
    return "\n".join(lines) + "\n"


def _other_tree_label(forest: Forest, tree_id: str, node_id: str) -> str:
    other = forest.trees[tree_id]
    node = other.nodes[node_id]
    title = node.question if isinstance(node, Question) else node.fix
    return f"\u2192 {tree_id}: {other.title if node_id == other.start else title}"


def _external(known: dict[str, str], lines: list[str], key: str, label: str) -> str:
    """One hexagon per distinct target outside this tree, however many answers lead there."""
    if key not in known:
        known[key] = f"x{len(known) + 1}"
        lines.append(f"    {known[key]}{{{{{quoted(label, NODE_LABEL_MAX)}}}}}")
    return known[key]
