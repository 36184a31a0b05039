"""The walk without a TUI: numbered prompts on stdin/stdout, and the non-interactive `--answers`.

For a dumb terminal, a serial console or a pipe. It drives the same `WalkSession` as the app and
saves the walk after every step. Rich does the formatting and honours NO_COLOR and non-tty
output by itself; every piece of tree text is printed as plain `Text`, never as markup.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Any

from trainmedic.errors import UsageError
from trainmedic.export.fixview import FixView, StepView, walk_fix_view
from trainmedic.saved_walks import WalkRecord
from trainmedic.trees.model import Fix, Question
from trainmedic.walk import Saver, WalkSession

if TYPE_CHECKING:
    from rich.console import Console

    from trainmedic.probes.runner import ProbeRunner


def make_console(file: IO[str]) -> Console:
    from rich.console import Console

    return Console(file=file, highlight=False, soft_wrap=True, emoji=False)


def default_saver(record: WalkRecord) -> object:
    from trainmedic.saved_walks import save_walk

    return save_walk(record)


SAVE_FAILED = 2  # the exit status of a walk that could not be saved: "unreadable/unwritable"


class SaveWatch:
    """The saver, called after every step. A failure (full disk, read-only or unreadable state
    folder, a file where the folder should be, another process saving the walk) never ends the
    walk, but it is said on stderr (once per reason) and the command ends with SAVE_FAILED:
    "a dropped SSH connection loses nothing" must not be silently false."""

    def __init__(self, save: Saver, err: IO[str] | None) -> None:
        self.save = save
        self.err = err
        self.failure = ""

    def __call__(self, record: WalkRecord) -> None:
        from trainmedic.textsafe import inert_line

        try:
            self.save(record)
        except OSError as exc:
            reason = inert_line(f"{exc.filename}: {exc.strerror}" if exc.filename and
                                exc.strerror else (exc.strerror or str(exc)))
            if reason != self.failure:
                import sys

                print(f"trainmedic: warning: cannot save the walk ({reason}); "
                      "`walk --resume` will not see these steps", file=self.err or sys.stderr)
            self.failure = reason
        else:
            self.failure = ""  # saved now: the earlier steps are in this save too

    def status(self, code: int) -> int:
        """`code`, or SAVE_FAILED when the walk's last save failed and nothing worse happened."""
        return code or (SAVE_FAILED if self.failure else 0)


def print_breadcrumb(console: Console, session: WalkSession) -> None:
    from rich.text import Text

    crumbs = " › ".join(str(ref) for ref in session.path())
    console.print(Text(crumbs, style="dim"))


def print_question(console: Console, session: WalkSession, suggested: int | None,
                   evidence: list[str]) -> None:
    from rich.text import Text

    question = session.question
    assert question is not None
    console.print()
    print_breadcrumb(console, session)
    console.print(Text(str(question.question), style="bold"))
    if question.help:
        for help_line in str(question.help).rstrip().splitlines():
            console.print(Text("  " + help_line, style="italic"))
    for i, answer in enumerate(question.answers):
        line = Text(f"  {i + 1}. ", style="bold")
        line.append(str(answer.text))
        if i == suggested:
            line.append("  (suggested)", style="bold green")
        ref = session.forest.resolve(session.current.tree, answer.goto)
        if ref is not None and ref.tree != session.current.tree:
            line.append(f"  -> {ref}", style="dim")
        console.print(line)
    for item in evidence:
        console.print(Text(f"     evidence: {item}", style="green"))


def print_fix(console: Console, view: FixView) -> None:
    """A fix as copyable text: commands are indented, never boxed, so they paste cleanly; the
    mark of a dangerous step comes before its command (`export.fixview` decides the order)."""
    from rich.text import Text

    console.print(Text(f"Fix: {view.title}", style="bold green") + Text(f"  ({view.ref})",
                                                                        style="dim"))
    if view.target:
        console.print(Text(f"For: {view.target}", style="dim"))
    console.print(Text(f"Why: {view.why}"))
    if view.from_log is not None:
        where = f" ({view.from_log.where})" if view.from_log.where else ""
        console.print(Text(f"From your log{where}:", style="bold"))
        if view.from_log.advice:
            console.print(Text(f"   {view.from_log.advice}"))
        for value in view.from_log.values:
            console.print(Text(f"   {value.name} = {value.value}: {value.why}"))
        for command in view.from_log.commands:
            _print_step(console, command, "*")
    for step in view.steps:
        _print_step(console, step, str(step.number))
    if view.verify:
        console.print(Text(f"Verify: {view.verify}"))
    if view.myth:
        console.print(Text(f"Myth: {view.myth}", style="yellow"))
    for ref in view.refs:
        console.print(Text(f"See: {ref.title}" + (f" <{ref.url}>" if ref.url else "")))
    if view.source:
        console.print(Text(f"Source: {'; '.join(view.source)}", style="dim"))


def _print_step(console: Console, step: StepView, number: str) -> None:
    from rich.text import Text

    lead = f"{number}. " + (f"[{step.target}] " if step.target else "")
    console.print(Text(lead + step.do))
    if step.mark:
        console.print(Text("   " + step.mark, style="bold red" if step.danger else "bold yellow"))
    if step.code is not None:
        for line in step.code.splitlines():
            console.print(Text("     " + line, style="cyan"))


def run_plain(session: WalkSession, stdin: IO[str], stdout: IO[str], *,
              probe_runner: ProbeRunner | None = None, save: Saver = default_saver,
              err: IO[str] | None = None) -> int:
    """Prompt until a fix is accepted, `q`, or end of input; the walk is saved after each step
    (SAVE_FAILED when the last save failed: said on `err`, stderr by default)."""
    watch = SaveWatch(save, err)
    return watch.status(_prompt(session, stdin, stdout, probe_runner, watch))


def _prompt(session: WalkSession, stdin: IO[str], stdout: IO[str],
            probe_runner: ProbeRunner | None, save: Saver) -> int:
    console = make_console(stdout)
    save(session.record())
    while True:
        node = session.node
        if isinstance(node, Question):
            session.run_due_probes(probe_runner)
            suggested, evidence = session.suggestion()
            print_question(console, session, suggested, evidence)
            back = ", u return" if session.stack else ""
            prompt = f"answer [1-{len(node.answers)}, b back, r restart{back}, q quit]: "
        else:
            console.print()
            print_breadcrumb(console, session)
            print_fix(console, walk_fix_view(session))
            prompt = "[enter/q] done, [n] this did not help, [b] back, [r] restart: "
        while True:
            stdout.write(prompt)
            stdout.flush()
            line = stdin.readline()
            if not line:  # end of input: leave cleanly, the walk is saved
                stdout.write("\n")
                save(session.record())
                return 0
            choice = line.strip().lower()
            if choice in ("q", "quit") or (choice == "" and isinstance(node, Fix)):
                save(session.record())
                return 0
            if choice in ("b", "back"):
                undoing = session.can_undo_restart
                if not session.back():
                    console.print("(already at the first question)")
                    continue
                if undoing:
                    console.print("(restart undone)")
                break
            if choice in ("n", "no") and isinstance(node, Fix):
                if not session.did_not_help():
                    console.print("(no question led here: b or r to go up)")
                    continue
                break
            if choice in ("r", "restart"):
                session.restart()
                break
            if choice in ("u", "return") and session.return_from_link():
                break
            if isinstance(node, Question) and choice.isdigit() \
                    and 1 <= int(choice) <= len(node.answers):
                session.answer(int(choice) - 1)
                break
            what = f"a number 1-{len(node.answers)}, " if isinstance(node, Question) else "n, "
            console.print(f"please type {what}b, r or q")
        save(session.record())


def parse_answers(text: str) -> list[int]:
    """`1,3,2` -> [1, 3, 2] (1-based, as typed)."""
    numbers: list[int] = []
    for part in text.replace(" ", "").split(","):
        if not part.isdigit():
            raise UsageError(f"--answers: '{part}' is not an answer number (expected e.g. 1,3,2)")
        numbers.append(int(part))
    return numbers


def run_answers(session: WalkSession, answers: list[int], stdout: IO[str], *,
                as_json: bool = False, probe_runner: ProbeRunner | None = None,
                save: Saver = default_saver,
                stamp: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
                err: IO[str] | None = None) -> int:
    """Walk with the given 1-based answers (the probes of each question run first, as in the
    other front ends, so the same suggestions are recorded); print the path taken and the fix.

    The walk is saved only when it reaches a fix: a mistyped run must not become the walk
    that `report` and `--resume` pick next. `stamp` adds what every `--json` output starts
    with (the command line's versions). SAVE_FAILED when the walk could not be saved: said on
    `err`, stderr by default."""
    save = watch = SaveWatch(save, err)
    for step, number in enumerate(answers, start=1):
        session.run_due_probes(probe_runner)
        session.answer_typed(number, step)
    if session.question is None:
        save(session.record())
    if as_json:
        import json

        data = session.to_dict()
        stdout.write(json.dumps(stamp(data) if stamp else data, indent=1, ensure_ascii=False)
                     + "\n")
    else:
        _print_path(session, stdout)
    if session.question is not None:
        raise UsageError(f"the answers stop at the question {session.current}; add one more "
                         f"(1-{len(session.question.answers)})")
    return watch.status(0)


def _print_path(session: WalkSession, stdout: IO[str]) -> None:
    from rich.text import Text

    console = make_console(stdout)
    for i, step in enumerate(session.steps, start=1):
        line = Text(f"{i}. {step.question}", style="bold")
        line.append(f"  [{step.node}]", style="dim")
        console.print(line)
        console.print(Text(f"   → {step.answer + 1}. {step.answer_text}"))
    if session.fix is not None:
        console.print()
        print_fix(console, walk_fix_view(session))
