"""One answer of a question as an option: its key in a narrow column, the text wrapped beside it,
and where it leads when that is another tree. The walk and the drill draw answers the same way."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.table import Table
from rich.text import Text
from textual.widgets.option_list import Option

if TYPE_CHECKING:
    from trainmedic.trees.forest import Forest, Ref


def answer_option(index: int, label: Text, forest: Forest, here: Ref, goto: str) -> Option:
    """Option `answer-{index}` for the answer labelled `label` (0-based `index`, shown 1-based)."""
    ref = forest.resolve(here.tree, goto)
    if ref is not None and ref.tree != here.tree:
        label.append(f"  ↪ {ref}", style="dim")
    row = Table.grid(padding=(0, 1), expand=True)
    row.add_column(width=2, no_wrap=True)
    row.add_column(ratio=1)
    row.add_row(Text(str(index + 1), style="bold"), label)
    return Option(row, id=f"answer-{index}")
