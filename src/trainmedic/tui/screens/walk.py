"""The walk: a question with numbered answers, or a fix with copyable commands, plus evidence.

One screen follows the session from node to node (recomposed at each step); the keys shown in
the footer change with the kind of node. Probes run in a thread worker, so a hung probe never
freezes the screen; when they answer, the suggestion and its evidence appear beside the question.

The question stays on top; the "how to check" box and the answers share one scroll pane, and
the pane follows the highlight, so every answer can be reached and seen at 80x24 (and 60x20).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.geometry import Region
from textual.message import Message
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from trainmedic.textsafe import inert_line
from trainmedic.trees import Question
from trainmedic.tui.base import AppScreen
from trainmedic.tui.widgets.answers import answer_option
from trainmedic.tui.widgets.evidence import EvidencePanel
from trainmedic.tui.widgets.fixpanel import FixPanel
from trainmedic.tui.widgets.footer import KeysFooter
from trainmedic.walk import WalkSession

if TYPE_CHECKING:
    from trainmedic.probes.base import ProbeContext, ProbeResult
    from trainmedic.probes.runner import ProbeRunner

NARROW = 72  # below this width the evidence panel waits for `v` instead of taking a third


def _digit_bindings(action: str, description: str) -> list[Binding]:
    first = Binding("1", f"{action}(0)", description, key_display="1-9")
    return [first] + [Binding(str(n), f"{action}({n - 1})", description, show=False)
                      for n in range(2, 10)]


class AnswerList(OptionList):
    """The answers, as tall as they are: the pane around them scrolls, to the highlight."""

    def scroll_to_highlight(self, top: bool = False) -> None:
        super().scroll_to_highlight(top)
        self.reveal_highlight()  # at once when laid out (a key press), and again once it is
        self.call_after_refresh(self.reveal_highlight)

    def reveal_highlight(self) -> None:
        """Scroll the pane so the highlighted answer is whole on screen (the first answer
        scrolls to the top when it fits there, so the "how to check" box above it shows too)."""
        pane = self.parent
        index = self.highlighted
        if index is None or not isinstance(pane, VerticalScroll) or not self.is_mounted:
            return
        line = self._index_to_line.get(index)
        if line is None:
            return
        region = Region(0, self.virtual_region.y + line, self.size.width, self._heights[index])
        if index == 0 and region.bottom <= pane.scrollable_content_region.height:
            pane.scroll_home(animate=False, immediate=True)
        else:
            pane.scroll_to_region(region, animate=False, force=True, immediate=True)

    def highlighted_region(self) -> Region | None:
        """Where the highlighted answer is on the screen (tests hold it inside the pane)."""
        index = self.highlighted
        line = self._index_to_line.get(index) if index is not None else None
        if index is None or line is None:
            return None
        return Region(self.region.x, self.region.y + line - int(self.scroll_y),
                      self.region.width, self._heights[index])


class WalkScreen(AppScreen[None]):
    CSS_PATH = "walk.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        *_digit_bindings("answer", "answer"),
        *_digit_bindings("copy", "copy"),
        Binding("y", "confirm_copy", "copy it"),
        Binding("n", "did_not_help", "did not help"),
        Binding("escape", "back", "back", key_display="esc"),
        Binding("b", "back", "back", show=False),
        Binding("r", "restart", "restart"),
        Binding("u", "return", "back to the first tree"),
        Binding("p", "rerun_probes", "probes again", show=False),
        Binding("m", "launch_command", "launch command"),
        Binding("i", "report", "report"),
        Binding("z", "toggle_help", "how to check", show=False),  # z folds, as in vim
        Binding("v", "toggle_evidence", "evidence", show=False),
        Binding("o", "browse", "browse", show=False),
        Binding("h", "home", "home", show=False),
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
        self.help_shown = True  # the "how to check" box (z)
        self.evidence_wanted: bool | None = None  # v: None follows the panel's content
        self._highlight_next: int | None = None  # the answer to highlight after going back
        self._log_route: dict[str, int] | None = None  # question -> answer, to the finding

    # -- layout -------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        s = self.session
        yield Static(self._breadcrumb(), id="crumbs")
        with Horizontal(id="walk-body"):
            question = s.question
            if question is not None:
                yield from self._compose_question(question)
            else:
                from trainmedic.export.fixview import walk_fix_view

                with VerticalScroll(id="main"):
                    hint = "n: this did not help (back to the question) · i: incident report" \
                        if s.steps else "r: start the tree from its first question"
                    yield FixPanel(walk_fix_view(s), hint=hint, id="fix")
            yield EvidencePanel(id="evidence")
        yield KeysFooter()

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
        self._place_evidence()

    def _compose_question(self, question: Question) -> ComposeResult:
        from textual.containers import Vertical

        with Vertical(id="ask"):
            yield Static(Text(str(question.question), style="bold"), id="question")
            with VerticalScroll(id="main"):
                if question.help:
                    help_box = Static(Text(str(question.help).rstrip()), id="help")
                    help_box.border_title = "how to check"
                    help_box.border_subtitle = "z hides"
                    help_box.display = self.help_shown
                    yield help_box
                yield AnswerList(*self._answer_options(question), id="answers")
                if self.session.stack:
                    yield Static(Text(f"u returns to {self.session.stack[-1]}", style="dim"),
                                 classes="hint")

    def _answer_options(self, question: Question) -> list[Option]:
        """One option per answer, marked with what the walk knows about it."""
        suggested, _ = self.session.suggestion()
        self.suggested_index = suggested
        tried = self.session.tried_answers()
        implied = self._implied_answer()
        options = []
        for i, answer in enumerate(question.answers):
            label = Text(str(answer.text))
            if i == suggested:
                label.append("  ★ suggested", style="bold green")
            if i == implied:
                label.append("  ◆ the log pointed here", style="bold cyan")
            if i in tried:
                label.append("  ✗ tried: did not help", style="bold red")
            options.append(answer_option(i, label, self.session.forest, self.session.current,
                                         answer.goto))
        return options

    def _implied_answer(self) -> int | None:
        """The answer the tree's own route to the triage finding takes at this question."""
        if self._log_route is None:
            self._log_route = {}
            finding = self.session.triage.finding if self.session.triage is not None else None
            if finding is not None:
                from trainmedic.errors import UsageError
                from trainmedic.walk import route_to

                try:
                    target = self.session.forest.parse_ref(finding.link)
                except UsageError:  # a finding whose node the trees no longer have
                    return None
                self._log_route = {str(q): i for q, i in route_to(self.session.forest, target)}
        return self._log_route.get(str(self.session.current))

    # -- lifecycle ----------------------------------------------------------------------------
    def on_mount(self) -> None:
        self._after_step()  # a walk with nothing in it yet is not written (saved_walks)

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
        question = self.session.question
        if question is not None:
            answers = self.query_one("#answers", AnswerList)
            answers.focus(scroll_visible=False)
            if self._highlight_next is not None and self._highlight_next < len(question.answers):
                answers.highlighted = self._highlight_next
            self._highlight_next = None
            self.call_after_refresh(answers.reveal_highlight)
        else:
            from trainmedic.tui.widgets.codeblock import CodeBlock

            blocks = self.query_one(FixPanel).query(CodeBlock)
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
        history = [f"{step.node}: {e}" for step in s.steps if not step.implied
                   for e in step.evidence]
        self.query_one(EvidencePanel).show(probes=s.probes, running=self.running,
                                           suggestion=suggestion, triage=s.triage,
                                           history=history if question is None else None)
        self._place_evidence()

    def _place_evidence(self) -> None:
        """Shown when it has something to say and there is room; `v` overrides."""
        panel = self.query_one(EvidencePanel)
        wanted = self.evidence_wanted
        if wanted is None:
            wanted = not panel.empty and self.app.size.width >= NARROW
        panel.display = wanted

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
            return s.fix is not None and self._has_command(_index(parameters) + 1)
        if action == "confirm_copy":
            return s.fix is not None and self.query_one(FixPanel).pending is not None
        if action == "did_not_help":
            return s.fix is not None and bool(s.steps)
        if action == "return":
            return bool(s.stack)
        if action == "report":
            return s.fix is not None
        if action == "restart":
            return bool(s.steps)  # at the first node a no-op
        if action == "launch_command":
            return s.wants_launch_command
        if action == "rerun_probes":
            return s.question is not None and bool(s.question.probes) \
                and self.app.probes_enabled
        if action == "toggle_help":
            return s.question is not None and bool(s.question.help)
        return True

    def _has_command(self, key: int) -> bool:
        panels = self.query(FixPanel)
        return bool(panels) and panels.first().step(key) is not None

    async def action_answer(self, index: int) -> None:
        if self.session.question is None or index >= len(self.session.question.answers):
            return
        self.session.answer(index)
        await self._move()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.run_worker(self.action_answer(event.option_index), exclusive=True, group="move")

    def action_copy(self, index: int) -> None:
        self.query_one(FixPanel).copy(index + 1)
        self.refresh_bindings()

    def action_confirm_copy(self) -> None:
        self.query_one(FixPanel).confirm()
        self.refresh_bindings()

    async def action_back(self) -> None:
        answered = self.session.steps[-1].answer if self.session.steps else None
        undoing = self.session.can_undo_restart
        if not self.session.back():
            self.app.pop_screen()
            return
        if undoing:
            self.notify("Restart undone: back where you were.", timeout=3)
        else:
            self._highlight_next = answered
        await self._move()

    async def action_did_not_help(self) -> None:
        answered = self.session.steps[-1].answer if self.session.steps else None
        if self.session.did_not_help():
            self._highlight_next = answered
            await self._move()

    async def action_restart(self) -> None:
        self.session.restart()
        await self._move()
        self.notify("Restarted at the first question: esc undoes it.", timeout=4)

    async def action_return(self) -> None:
        await self._move(self.session.return_from_link())

    def action_rerun_probes(self) -> None:
        self._start_probes(again=True)

    def action_toggle_help(self) -> None:
        self.help_shown = not self.help_shown
        for box in self.query("#help"):
            box.display = self.help_shown

    def action_toggle_evidence(self) -> None:
        panel = self.query_one(EvidencePanel)
        self.evidence_wanted = not panel.display
        self._place_evidence()

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
        self.app.push_screen(ReportScreen(record.id, render_report(
            record, self.session.forest, in_app=True)))

    def _refresh_suggestions(self) -> None:
        """New probe results: redraw the evidence and the "suggested" mark, keeping the cursor."""
        self._update_evidence()
        question = self.session.question
        if question is not None:
            answers = self.query_one("#answers", AnswerList)
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

    @property
    def mid_walk(self) -> bool:
        """Answers given and no fix reached yet: quitting asks first."""
        return bool(self.session.steps) and self.session.fix is None


def _index(parameters: tuple[object, ...]) -> int:
    """The index an `answer(n)`/`copy(n)` binding carries."""
    first = parameters[0] if parameters else -1
    return first if isinstance(first, int) else -1
