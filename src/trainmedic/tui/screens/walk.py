"""The walk: a question with numbered answers, or a fix with copyable commands, plus evidence.

One screen follows the session from node to node (recomposed at each step); the keys shown in
the footer change with the kind of node. Probes run in a thread worker, so a hung probe never
freezes the screen; when they answer, the suggestion and its evidence appear beside the question.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.widgets import Footer, OptionList, Static
from textual.widgets.option_list import Option

from trainmedic.textsafe import inert_line
from trainmedic.trees import Fix, Question
from trainmedic.tui.base import AppScreen
from trainmedic.tui.widgets.codeblock import CodeBlock
from trainmedic.tui.widgets.evidence import EvidencePanel
from trainmedic.walk import WalkSession

if TYPE_CHECKING:
    from trainmedic.probes.base import ProbeContext, ProbeResult
    from trainmedic.probes.runner import ProbeRunner


def _digit_bindings(action: str, description: str) -> list[Binding]:
    first = Binding("1", f"{action}(0)", description, key_display="1-9")
    return [first] + [Binding(str(n), f"{action}({n - 1})", description, show=False)
                      for n in range(2, 10)]


class WalkScreen(AppScreen[None]):
    CSS_PATH = "walk.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        *_digit_bindings("answer", "answer"),
        *_digit_bindings("copy", "copy"),
        Binding("n", "did_not_help", "did not help"),
        Binding("escape", "back", "back", key_display="esc"),
        Binding("b", "back", "back", show=False),
        Binding("r", "restart", "restart"),
        Binding("u", "return", "return"),
        Binding("p", "rerun_probes", "probes"),
        Binding("m", "launch_command", "launch"),
        Binding("i", "report", "report"),
        # In the palette and the help screen; hidden in the footer so it fits 80 columns.
        Binding("ctrl+r", "app.probes", "all probes", key_display="^r", show=False),
        Binding("o", "browse", "browse", show=False),
        Binding("h", "home", "home", show=False),
        Binding("question_mark", "app.help", "help", key_display="?"),
    ]

    class ProbesAnswered(Message):
        """The probes run in the background are back (`error`: the runner itself failed)."""

        def __init__(self, names: list[str], results: list[ProbeResult], error: str = "") -> None:
            super().__init__()
            self.names = names
            self.results = results
            self.error = error

    def __init__(self, session: WalkSession) -> None:
        super().__init__()
        self.session = session
        self.running: list[str] = []
        self.suggested_index: int | None = None  # what the answers list marks right now

    # -- layout -------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        s = self.session
        yield Static(self._breadcrumb(), id="crumbs")
        with Horizontal(id="walk-body"):
            with VerticalScroll(id="main"):
                node = s.node
                if isinstance(node, Question):
                    yield from self._compose_question(node)
                else:
                    yield from self._compose_fix(node)
            yield EvidencePanel(id="evidence")
        yield Footer(compact=True)

    def _breadcrumb(self) -> Text:
        """Tree title and the path, oldest steps dropped first: the node you are at must show
        (cut at the end, a long path hid exactly that one)."""
        s = self.session
        title = str(s.forest.trees[s.current.tree].title)
        labels = [ref.node if ref.tree == s.current.tree else str(ref) for ref in s.path()]
        room = self.app.size.width - 2 - len(title) - 2  # padding, title, gap
        shown = [labels[-1]]
        for label in reversed(labels[:-1]):
            more = len(labels) > len(shown) + 1  # older crumbs still left out: "… › " too
            if sum(map(len, shown)) + 3 * len(shown) + len(label) + (4 if more else 0) > room:
                break
            shown.insert(0, label)
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(title, style="bold")
        text.append("  ")
        if len(shown) < len(labels):
            text.append("… › ", style="dim")
        for i, label in enumerate(shown):
            text.append(label, style="bold reverse" if i == len(shown) - 1 else "")
            if i < len(shown) - 1:
                text.append(" › ", style="dim")
        return text

    def on_resize(self) -> None:
        self.query_one("#crumbs", Static).update(self._breadcrumb())

    def _compose_question(self, question: Question) -> ComposeResult:
        yield Static(Text(str(question.question), style="bold"), id="question")
        if question.help:
            help_box = Static(Text(str(question.help).rstrip()), id="help")
            help_box.border_title = "how to check"
            yield help_box
        yield OptionList(*self._answer_options(question), id="answers")
        if self.session.stack:
            yield Static(Text(f"u returns to {self.session.stack[-1]}", style="dim"),
                         classes="hint")

    def _answer_options(self, question: Question) -> list[Option]:
        """One option per answer: its key in a narrow column, the text wrapped beside it."""
        from rich.table import Table

        suggested, _ = self.session.suggestion()
        self.suggested_index = suggested
        options = []
        for i, answer in enumerate(question.answers):
            label = Text(str(answer.text))
            if i == suggested:
                label.append("  ★ suggested", style="bold green")
            ref = self.session.forest.resolve(self.session.current.tree, answer.goto)
            if ref is not None and ref.tree != self.session.current.tree:
                label.append(f"  ↪ {ref}", style="dim")
            row = Table.grid(padding=(0, 1), expand=True)
            row.add_column(width=2, no_wrap=True)
            row.add_column(ratio=1)
            row.add_row(Text(str(i + 1), style="bold"), label)
            options.append(Option(row, id=f"answer-{i}"))
        return options

    def _compose_fix(self, fix: Fix) -> ComposeResult:
        yield Static(Text.assemble(("FIX  ", "bold reverse"), " ", (str(fix.fix), "bold")),
                     id="fix-title")
        yield Static(Text.assemble(("Why  ", "bold"), str(fix.why)), classes="why")
        number = 0
        for i, step in enumerate(fix.steps, start=1):
            yield Static(Text.assemble((f"{i}. ", "bold"), str(step.do)), classes="step")
            if step.code:
                number += 1
                yield CodeBlock(step.code, step.lang, number)
        if fix.verify:
            yield Static(Text.assemble(("Verify  ", "bold green"), str(fix.verify)),
                         classes="verify")
        if fix.myth:
            yield Static(Text.assemble(("Myth  ", "bold yellow"), str(fix.myth)), classes="myth")
        if fix.refs:
            refs = Text()
            refs.append("References\n", style="bold")
            for r in fix.refs:
                refs.append(f"• {r.title}")
                if r.url:
                    refs.append(f"  {r.url}", style="underline")
                refs.append("\n")
            yield Static(refs, classes="refs")
        yield Static(Text("n: this did not help (back to the last question) · i: incident "
                          "report", style="dim"), classes="hint")

    # -- lifecycle ----------------------------------------------------------------------------
    def on_mount(self) -> None:
        # A walk opened and left at once is not worth a file; one with triage evidence is.
        self._after_step(save=bool(self.session.triage or self.session.steps))

    def _after_step(self, *, save: bool = True) -> None:
        if save:
            self.app.save_session(self.session)
        self._update_evidence()
        self._focus_main()
        self._start_probes()
        self.refresh_bindings()

    async def _move(self, moved: bool = True) -> None:
        if not moved:
            return
        self.app.save_session(self.session)
        await self.recompose()
        self._after_step(save=False)

    def _focus_main(self) -> None:
        if self.session.question is not None:
            self.query_one("#answers", OptionList).focus(scroll_visible=False)
        else:
            blocks = self.query(CodeBlock)
            if blocks:
                blocks.first().focus(scroll_visible=False)
        self.query_one("#main", VerticalScroll).scroll_home(animate=False)

    def _update_evidence(self) -> None:
        s = self.session
        suggestion = None
        question = s.question
        index, lines = s.suggestion()
        if question is not None and index is not None:
            suggestion = (f"{index + 1}. {question.answers[index].text}", lines)
        history = [f"{step.node}: {e}" for step in s.steps for e in step.evidence]
        self.query_one(EvidencePanel).show(probes=s.probes, running=self.running,
                                           suggestion=suggestion, triage=s.triage,
                                           history=history if question is None else None)

    # -- probes in the background -------------------------------------------------------------
    def _start_probes(self, *, again: bool = False) -> None:
        """The probes the walk says are due, in a thread: a hung probe never freezes the screen."""
        runner = self.app.probe_runner
        if runner is None:
            return
        due = [p for p in self.session.take_due_probes(again=again) if p not in self.running]
        if not due:
            return
        self.running.extend(due)
        self._update_evidence()
        self._run_probes(runner, due, self.session.probe_context())

    @work(thread=True, group="probes", exit_on_error=False)
    def _run_probes(self, runner: ProbeRunner, names: list[str], context: ProbeContext) -> None:
        try:
            results = runner(names, context)
        except Exception as exc:  # the runner never raises; a stand-in might
            self.post_message(self.ProbesAnswered(names, [], f"{type(exc).__name__}: {exc}"))
            return
        self.post_message(self.ProbesAnswered(names, results))

    def on_walk_screen_probes_answered(self, message: ProbesAnswered) -> None:
        self.running = [n for n in self.running if n not in message.names]
        if message.error:
            self.notify(inert_line(f"probes {','.join(message.names)} failed: {message.error}"),
                        severity="warning", markup=False)
        elif message.results:
            self.session.attach_probes(message.results)
            self.app.save_session(self.session)
        self._refresh_suggestions()

    # -- actions ------------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        s = self.session
        if action == "answer":
            q = s.question
            return q is not None and _index(parameters) < len(q.answers)
        if action == "copy":
            return s.fix is not None and _index(parameters) < len(self.query(CodeBlock))
        if action == "did_not_help":
            return s.fix is not None and bool(s.steps)
        if action == "return":
            return bool(s.stack)
        if action == "report":
            return s.fix is not None
        if action == "restart":
            return bool(s.steps)  # at the first node (or a fix opened from triage) a no-op
        if action == "launch_command":
            return s.wants_launch_command
        if action == "rerun_probes":
            return s.question is not None and bool(s.question.probes) \
                and self.app.probes_enabled
        return True

    async def action_answer(self, index: int) -> None:
        if self.session.question is None or index >= len(self.session.question.answers):
            return
        self.session.answer(index)
        await self._move()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.run_worker(self.action_answer(event.option_index), exclusive=True, group="move")

    def action_copy(self, index: int) -> None:
        blocks = list(self.query(CodeBlock))
        if index < len(blocks):
            blocks[index].action_copy()

    async def action_back(self) -> None:
        if not self.session.back():
            self.app.pop_screen()
            return
        await self._move()

    async def action_did_not_help(self) -> None:
        await self._move(self.session.back_to_question())

    async def action_restart(self) -> None:
        self.session.restart()
        await self._move()

    async def action_return(self) -> None:
        await self._move(self.session.return_from_link())

    def action_rerun_probes(self) -> None:
        self._start_probes(again=True)

    def action_launch_command(self) -> None:
        from trainmedic.tui.dialogs.launch_command import LaunchCommandScreen

        def done(text: str | None) -> None:
            if text is None:
                return
            self.session.set_launch_command(text)
            self.app.save_session(self.session)
            self._start_probes()

        self.app.push_screen(LaunchCommandScreen(self.session.launch_command), done)

    def action_report(self) -> None:
        """The incident report of this walk (as saved, so redacted), to read and save."""
        from trainmedic.export.report import render_report
        from trainmedic.tui.screens.report import ReportScreen

        record = self.session.record()
        self.app.push_screen(ReportScreen(record.id, render_report(record, self.session.forest)))

    def _refresh_suggestions(self) -> None:
        """New probe results: redraw the evidence and the "suggested" mark, keeping the cursor."""
        self._update_evidence()
        question = self.session.question
        if question is not None:
            answers = self.query_one("#answers", OptionList)
            highlighted = answers.highlighted
            answers.set_options(self._answer_options(question))
            answers.highlighted = highlighted

    def on_screen_resume(self) -> None:
        """Back from the probes screen: its results are attached to the walk now."""
        if not self.is_mounted:
            return
        self._refresh_suggestions()

    def action_browse(self) -> None:
        self.app.open_browse(self.session.current)

    def action_home(self) -> None:
        self.app.go_home()


def _index(parameters: tuple[object, ...]) -> int:
    """The index an `answer(n)`/`copy(n)` binding carries."""
    first = parameters[0] if parameters else -1
    return first if isinstance(first, int) else -1
