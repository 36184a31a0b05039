"""Every answer of every built-in question can be reached by keys and is on screen when
highlighted, at the advertised 80x24 and at 60x20 (issue 18 item 1, review F1).

The walk screen is opened on each question in turn; ↓ moves through the answers and after each
press the highlighted answer must lie whole inside the scroll pane (not below the fold, not
under the footer), and the question must still be on screen.
"""

from __future__ import annotations

import pytest
from tui_helpers import run

from trainmedic.trees import Question, load_forest
from trainmedic.tui.app import TrainmedicApp
from trainmedic.tui.screens.walk import AnswerList, WalkScreen
from trainmedic.walk import WalkSession


def _inside(inner, outer) -> bool:
    return outer.y <= inner.y and inner.bottom <= outer.bottom


@pytest.mark.parametrize("size", [(80, 24), (60, 20)], ids=["80x24", "60x20"])
def test_every_answer_of_every_builtin_question_is_reachable_and_visible(size):
    forest = load_forest()
    questions = [(ref, node) for ref, node in forest.iter_nodes() if isinstance(node, Question)]
    assert len(forest.trees) >= 14 and len(questions) > 40
    seen: list[str] = []

    async def go():
        app = TrainmedicApp(forest, probes=False)
        async with app.run_test(size=size) as pilot:
            for ref, question in questions:
                app.push_screen(WalkScreen(WalkSession(forest, ref)))
                await pilot.pause()
                screen = app.screen
                answers = screen.query_one("#answers", AnswerList)
                pane = screen.query_one("#main")
                footer_top = app.size.height - 1
                title = screen.query_one("#question")
                for index in range(len(question.answers)):
                    if index:
                        await pilot.press("down")
                        await pilot.pause()
                    assert answers.highlighted == index, (ref, index)
                    for _ in range(10):  # a loaded machine may take a frame more to scroll
                        where = answers.highlighted_region()
                        if where is not None and _inside(where, pane.region):
                            break
                        await pilot.pause(0.05)
                    assert where is not None, (ref, index)
                    assert _inside(where, pane.region), (f"{ref} answer {index + 1} at rows "
                                                         f"{where.y}-{where.bottom} outside the "
                                                         f"pane {pane.region}")
                    assert where.bottom <= footer_top, (ref, index)
                    assert title.region.y >= 0 and title.region.height > 0, ref
                    seen.append(f"{ref}:{index}")
                app.pop_screen()
                await pilot.pause()

    run(go())
    assert len(seen) == sum(len(q.answers) for _ref, q in questions)
