"""A drill on stdin/stdout: the log, numbered prompts (as `walk --plain`), then the debrief.

For a pipe, a dumb terminal or a scripted class: every answer is one line, so a file of answers
replays a drill. End of input or `q` leaves the drill unscored.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import IO, TYPE_CHECKING

from trainmedic.drills.debrief import Debrief, debrief
from trainmedic.drills.progress import record_result
from trainmedic.drills.run import DrillResult, DrillRun
from trainmedic.errors import UsageError
from trainmedic.export.fixview import walk_fix_view
from trainmedic.plain import make_console, print_breadcrumb, print_fix, print_question
from trainmedic.redact import redact_text
from trainmedic.textsafe import inert
from trainmedic.trees import Fix

if TYPE_CHECKING:
    from rich.console import Console

    from trainmedic.drills.cases import DrillCase
    from trainmedic.trees import Forest

QUESTION_KEYS = "b back, j TREE[#NODE] jump, t triage, ok nothing wrong, d done here, l log, q quit"
FIX_KEYS = ("enter: this is my answer, b back, j TREE[#NODE] jump, t triage, ok nothing wrong, "
            "l log, q quit")


def show_log(console: Console, case: DrillCase) -> None:
    from rich.rule import Rule
    from rich.text import Text

    lines = case.excerpt.rstrip("\n").splitlines()
    console.print(Rule(f"the log ({len(lines)} line{'s' if len(lines) != 1 else ''})",
                       characters="─"))
    console.print(Text(inert(redact_text(case.excerpt.rstrip("\n")))))
    console.print(Rule(characters="─"))


def show_briefing(console: Console, case: DrillCase, area: str | None) -> None:
    from rich.text import Text

    where = f" in {area}" if area else ""
    console.print(Text(f"Incident drill{where}: a real log from a public thread", style="bold"))
    console.print(Text("Its source and what fixed it are shown at the end.", style="dim"))
    if case.framework:
        console.print(Text(f"The job ran: {inert(case.framework)}"))
    show_log(console, case)
    console.print(Text("Walk the trees to the cause, as in an incident: answer by number, jump "
                       "with j TREE#NODE, or t to run triage on this log and go where it "
                       "points. d stops at a question as your answer; ok says the log shows "
                       "nothing wrong.", style="italic"))


def show_debrief(console: Console, report: Debrief) -> None:
    from rich.text import Text

    for title, lines in report.sections():
        console.print()
        console.print(Text(title, style="bold underline"))
        for line in lines:
            console.print(Text(line))


Saver = Callable[[DrillResult], object]


def run_plain_drill(forest: Forest, case: DrillCase, stdin: IO[str], stdout: IO[str], *,
                    area: str | None = None, save: Saver = record_result) -> int:
    console = make_console(stdout)
    drill = DrillRun(forest, case)
    show_briefing(console, case, area)
    while True:
        session = drill.session
        node = session.node
        if isinstance(node, Fix):
            console.print()
            print_breadcrumb(console, session)
            print_fix(console, walk_fix_view(session))
            prompt = f"[{FIX_KEYS}]: "
        else:
            print_question(console, session, None, [])
            prompt = f"answer [1-{len(node.answers)}, {QUESTION_KEYS}]: "
        while True:
            stdout.write(prompt)
            stdout.flush()
            line = stdin.readline()
            choice = line.strip()
            word = choice.lower()
            if not line or word in ("q", "quit"):
                stdout.write("\n")
                console.print("Drill left unfinished: not scored.")
                return 0
            if word in ("b", "back"):
                if not drill.back():
                    console.print("(already at the first question)")
                    continue
                break
            if word in ("l", "log"):
                show_log(console, case)
                break
            if word in ("t", "triage"):
                ref = drill.jump_with_triage()
                console.print(f"triage points to {ref}" if ref is not None
                              else "triage finds no known failure in this log")
                break
            if word == "j" or word.startswith("j "):
                try:
                    drill.jump(choice[1:].strip() or "?")
                except UsageError as exc:
                    console.print(f"cannot jump: {exc}")
                    continue
                break
            if word in ("ok", "d", "done") or (word == "" and isinstance(node, Fix)):
                return _finish(console, drill, save, nothing_wrong=word == "ok")
            if not isinstance(node, Fix) and word.isdigit() \
                    and 1 <= int(word) <= len(node.answers):
                drill.answer(int(word) - 1)
                break
            console.print(f"please type {'enter, ' if isinstance(node, Fix) else 'a number, '}"
                          f"{QUESTION_KEYS if not isinstance(node, Fix) else FIX_KEYS}")


def _finish(console: Console, drill: DrillRun, save: Saver, *, nothing_wrong: bool) -> int:
    result = drill.finish(nothing_wrong=nothing_wrong)
    show_debrief(console, debrief(drill, result))
    try:
        save(result)
    except OSError as exc:
        console.print(f"(progress not saved: {exc.strerror or exc})")
    return 0
