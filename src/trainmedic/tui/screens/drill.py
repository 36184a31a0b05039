"""An incident drill in the app: a real log above, the trees below, then the debrief.

The trainee walks from the entry question with the walk keys (digits, esc back), jumps with `:`
(a `tree#node`) or `t` (where triage points), and ends with enter on a fix, `d` at a question or
`o` for "nothing is wrong in this log". The debrief (score, expert path, what triage says, the
thread) replaces the walk; the log stays in view. The drill engine is `trainmedic.drills`, the
same as `trainmedic drill --plain`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widget import Widget
from textual.widgets import Input, OptionList, Static

from trainmedic.drills.run import DrillRun
from trainmedic.errors import UsageError
from trainmedic.redact import redact_text
from trainmedic.textsafe import inert
from trainmedic.trees import Fix, Question
from trainmedic.tui.base import AppScreen
from trainmedic.tui.widgets.answers import answer_option
from trainmedic.tui.widgets.footer import KeysFooter

if TYPE_CHECKING:
    from trainmedic.drills.cases import DrillCase
    from trainmedic.drills.debrief import Debrief


def _digits() -> list[Binding]:
    first = Binding("1", "answer(0)", "answer", key_display="1-9")
    return [first] + [Binding(str(n), f"answer({n - 1})", "answer", show=False)
                      for n in range(2, 10)]


class DrillScreen(AppScreen[None]):
    CSS_PATH = "drill.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        *_digits(),
        Binding("enter", "submit", "my answer"),
        Binding("escape", "back", "back", key_display="esc"),
        Binding("colon", "jump", "jump", key_display=":"),  # j is "down" on every screen
        Binding("t", "triage", "triage"),
        Binding("d", "done", "done"),
        Binding("o", "nothing_wrong", "nothing wrong"),
        Binding("n", "next", "next drill"),
        Binding("l", "focus_log", "log", show=False),
        Binding("question_mark", "app.help", "help", key_display="?"),
    ]

    def __init__(self, case: DrillCase | None = None, *, area: str | None = None) -> None:
        super().__init__()
        self.area = area
        self._case = case
        self.drill: DrillRun | None = None
        self.report: Debrief | None = None

    # -- layout -------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Static(id="titlebar")
        with VerticalScroll(id="drill-log"):
            yield Static(id="drill-log-text")
        yield Static(id="drill-crumbs")
        yield VerticalScroll(id="drill-main")
        jump = Input(placeholder="tree or tree#node, enter to jump, esc to cancel",
                     id="drill-jump")
        jump.display = False
        yield jump
        yield Static(id="drill-status")
        yield KeysFooter()

    async def on_mount(self) -> None:
        await self.start(self._case)

    async def start(self, case: DrillCase | None) -> None:
        """Begin a drill: `case`, or the next one chosen as `trainmedic drill` chooses."""
        if case is None:
            try:
                case = self._choose()
            except UsageError as exc:
                self.notify(str(exc), severity="error", timeout=8)
                self.app.pop_screen()
                return
        self.drill = DrillRun(self.app.forest, case)
        self.report = None
        where = f" in {self.area}" if self.area else ""
        ran = f"  ·  the job ran: {case.framework}" if case.framework else ""
        title = Text(no_wrap=True, overflow="ellipsis")
        title.append(f"Incident drill{where}", style="bold")
        title.append(f"  a real log; its source and fix come at the end{inert(ran)}",
                     style="dim")
        self.query_one("#titlebar", Static).update(title)
        lines = case.excerpt.rstrip("\n")
        self.query_one("#drill-log-text", Static).update(
            Text(inert(redact_text(lines)), overflow="fold"))
        self.query_one("#drill-log", VerticalScroll).scroll_home(animate=False)
        self._status("Walk to the cause: answer by number, : jumps, t follows triage, "
                     "d stops here, o: nothing wrong.")
        await self._show()

    def _choose(self) -> DrillCase:
        from trainmedic.drills.cases import choose, load_cases
        from trainmedic.drills.progress import load_progress
        from trainmedic.drills.run import playable

        cases, _skipped = load_cases()
        progress, _problem = load_progress()
        return choose(playable(self.app.forest, cases), area=self.area, done=progress.done())

    async def _show(self) -> None:
        """Redraw the walk part (or the debrief) for where the drill stands."""
        main = self.query_one("#drill-main", VerticalScroll)
        await main.remove_children()
        drill = self.drill
        if drill is None:
            return
        if self.report is not None:
            self.query_one("#drill-crumbs", Static).update(Text("Debrief", style="bold"))
            await main.mount_all(self._debrief_widgets(self.report))
        else:
            session = drill.session
            crumbs = Text(" › ".join(str(r) for r in drill.path()), no_wrap=True,
                          overflow="ellipsis", style="dim")
            self.query_one("#drill-crumbs", Static).update(crumbs)
            node = session.node
            widgets = self._question_widgets(node) if isinstance(node, Question) \
                else self._fix_widgets(node)
            await main.mount_all(widgets)
            if isinstance(node, Question):
                self.query_one("#drill-answers", OptionList).focus(scroll_visible=False)
            else:
                main.focus(scroll_visible=False)
        main.scroll_home(animate=False)
        self.refresh_bindings()

    def _question_widgets(self, question: Question) -> list[Widget]:
        drill = self.drill
        assert drill is not None
        options = []
        for i, answer in enumerate(question.answers):
            options.append(answer_option(i, Text(str(answer.text)), drill.forest,
                                         drill.session.current, answer.goto))
        return [Static(Text(str(question.question), style="bold"), id="drill-question"),
                OptionList(*options, id="drill-answers")]

    def _fix_widgets(self, fix: Fix) -> list[Widget]:
        steps = Text()
        for i, step in enumerate(fix.steps, start=1):
            steps.append(f"{i}. ", style="bold")
            steps.append(f"{step.do}\n")
        return [Static(Text.assemble(("FIX  ", "bold reverse"), " ", (str(fix.fix), "bold")),
                       id="drill-fix"),
                Static(Text.assemble(("Why  ", "bold"), str(fix.why)), classes="drill-why"),
                Static(steps),
                Static(Text("enter: this is my answer · esc: back · : jumps elsewhere",
                            style="bold"), classes="drill-hint")]

    def _debrief_widgets(self, report: Debrief) -> list[Widget]:
        score = {"node": "green", "tree": "yellow", "elsewhere": "red"}[report.result.outcome]
        widgets: list[Widget] = []
        for index, (title, lines) in enumerate(report.sections()):
            text = Text()
            text.append(f"{title}\n", style=f"bold {score}" if index == 0 else "bold")
            text.append("\n".join(lines))
            widgets.append(Static(text, classes="drill-section"))
        widgets.append(Static(Text("n: next drill · esc: leave", style="bold"),
                              classes="drill-hint"))
        return widgets

    def _status(self, text: str, style: str = "dim") -> None:
        self.query_one("#drill-status", Static).update(Text(text, style=style))

    # -- actions ------------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        drill = self.drill
        walking = drill is not None and self.report is None
        if action == "answer":
            question = drill.session.question if walking and drill is not None else None
            first = parameters[0] if parameters else -1
            return question is not None and isinstance(first, int) \
                and first < len(question.answers)
        if action == "submit":
            return walking and drill is not None and drill.session.fix is not None \
                and not self.query_one("#drill-jump", Input).display
        if action in ("jump", "triage", "nothing_wrong"):
            return walking
        if action == "done":
            return walking and drill is not None and drill.session.question is not None
        if action == "next":
            return self.report is not None
        return True

    async def action_answer(self, index: int) -> None:
        if self.drill is None or self.report is not None:
            return
        question = self.drill.session.question
        if question is None or index >= len(question.answers):
            return
        self.drill.answer(index)
        await self._show()

    async def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        await self.action_answer(event.option_index)

    async def action_back(self) -> None:
        jump = self.query_one("#drill-jump", Input)
        if jump.display:
            jump.display = False
            await self._show()
            return
        if self.drill is None or self.report is not None or not self.drill.back():
            self.app.pop_screen()
            return
        await self._show()

    def action_jump(self) -> None:
        jump = self.query_one("#drill-jump", Input)
        jump.value = ""
        jump.display = True
        jump.focus()
        self.refresh_bindings()

    async def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if self.drill is None:
            return
        try:
            ref = self.drill.jump(event.value)
        except UsageError as exc:
            self._status(f"cannot jump: {exc}", "yellow")
            return
        event.input.display = False
        self._status(f"jumped to {ref}")
        await self._show()

    async def action_triage(self) -> None:
        if self.drill is None:
            return
        ref = self.drill.jump_with_triage()
        self._status(f"triage points to {ref}" if ref is not None
                     else "triage finds no known failure in this log", "italic")
        await self._show()

    async def action_submit(self) -> None:
        await self._finish(nothing_wrong=False)

    async def action_done(self) -> None:
        await self._finish(nothing_wrong=False)

    async def action_nothing_wrong(self) -> None:
        await self._finish(nothing_wrong=True)

    async def _finish(self, *, nothing_wrong: bool) -> None:
        from trainmedic.drills.debrief import debrief
        from trainmedic.drills.progress import record_result

        if self.drill is None or self.report is not None:
            return
        result = self.drill.finish(nothing_wrong=nothing_wrong)
        self.report = debrief(self.drill, result)
        try:
            record_result(result)
            self._status("Progress saved: trainmedic drill --progress shows it.")
        except OSError as exc:
            self._status(f"progress not saved: {exc.strerror or exc}", "yellow")
        await self._show()

    async def action_next(self) -> None:
        await self.start(None)

    def action_focus_log(self) -> None:
        self.query_one("#drill-log", VerticalScroll).focus()

