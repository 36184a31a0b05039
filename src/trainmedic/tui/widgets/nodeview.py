"""A node rendered read-only (browse): the question and where each answer leads, or the fix."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text

from trainmedic.trees import Fix, Forest, Ref


def render_node(forest: Forest, ref: Ref) -> RenderableType:
    node = forest.node(ref)
    head = Text()
    head.append(f"{ref}\n", style="dim")
    if isinstance(node, Fix):
        return Group(head, *_fix_parts(node))
    head.append(str(node.question) + "\n", style="bold")
    if node.help:
        head.append("\n" + str(node.help).rstrip() + "\n", style="italic")
    head.append("\n")
    for i, answer in enumerate(node.answers, start=1):
        target = forest.resolve(ref.tree, answer.goto)
        head.append(f"{i}. ", style="bold")
        head.append(str(answer.text))
        head.append(f"  → {target or answer.goto}\n", style="dim")
        for rule in answer.when:
            head.append(f"     suggested when {rule}\n", style="green")
    if node.source:
        head.append(f"\nsource: {'; '.join(node.source)}\n", style="dim")
    return head


def _fix_parts(fix: Fix) -> list[RenderableType]:
    from rich.syntax import Syntax

    parts: list[RenderableType] = [
        Text.assemble(("FIX  ", "bold reverse"), " ", (str(fix.fix), "bold"), "\n"),
        Text.assemble(("Why  ", "bold"), str(fix.why), "\n"),
    ]
    for i, step in enumerate(fix.steps, start=1):
        parts.append(Text.assemble((f"{i}. ", "bold"), str(step.do)))
        if step.code:
            parts.append(Syntax(step.code.rstrip("\n"), step.lang or "bash", theme="ansi_dark",
                                word_wrap=True, background_color="default", padding=(0, 0, 0, 3)))
    if fix.verify:
        parts.append(Text.assemble("\n", ("Verify  ", "bold green"), str(fix.verify)))
    if fix.myth:
        parts.append(Text.assemble("\n", ("Myth  ", "bold yellow"), str(fix.myth)))
    for r in fix.refs:
        parts.append(Text(f"• {r.title}" + (f"  {r.url}" if r.url else "")))
    return parts
