"""A question rendered read-only (browse): the question, how to check, where each answer leads.

A fix is shown by `FixPanel`, the same widget as the walk's fix screen.
"""

from __future__ import annotations

from rich.text import Text

from trainmedic.trees import Forest, Question, Ref


def render_question(forest: Forest, ref: Ref) -> Text:
    node = forest.node(ref)
    assert isinstance(node, Question)
    head = Text()
    head.append(f"{ref}\n", style="dim")
    head.append(str(node.question) + "\n", style="bold")
    if node.help:
        head.append("\n" + str(node.help).rstrip() + "\n", style="italic")
    head.append("\n")
    for i, answer in enumerate(node.answers, start=1):
        target = forest.resolve(ref.tree, answer.goto)
        head.append(f"{i}. ", style="bold")
        head.append(str(answer.text))
        head.append(f"  → {target or answer.goto}\n", style="dim")
        if answer.when:
            rules = " and ".join(str(rule) for rule in answer.when)
            head.append(f"     suggested by the probes when {rules}\n", style="green")
    if node.source:
        head.append(f"\nsource: {'; '.join(node.source)}\n", style="dim")
    head.rstrip()
    return head
