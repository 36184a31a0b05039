"""A fix drawn from its `FixView`: the one widget behind the walk's fix screen and browse.

What a fix shows, and in which order, is decided once in `trainmedic.export.fixview` (the same
layout `--plain` and the runbook print). This widget only draws it and copies its commands:
a command whose step is marked (a reboot, a GPU reset, root needed) is copied only on a second
key, with the consequence shown first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from trainmedic.tui.widgets.codeblock import CodeBlock, copied_message

if TYPE_CHECKING:
    from textual.timer import Timer

    from trainmedic.export.fixview import FixView, StepView

CONFIRM_S = 10.0  # a second key later than this asks again


def step_text(step: StepView, number: str) -> Text:
    text = Text()
    text.append(f"{number}. ", style="bold")
    if step.target:
        text.append(f"[{step.target}] ", style="dim")
    text.append(step.do)
    return text


def mark_text(step: StepView) -> Text:
    """The warning before a marked command: words first, so it reads without colour."""
    assert step.mark is not None
    return Text("⚠ " + step.mark, style="bold red" if step.danger else "bold yellow")


def references(view: FixView) -> Text:
    """Titles, and each URL on its own line, never wrapped inside (a link must stay whole)."""
    refs = Text()
    refs.append("References\n", style="bold")
    for ref in view.refs:
        refs.append(f"• {ref.title}\n")
        if ref.url:
            refs.append(f"  {ref.url}\n", style="underline")
    refs.rstrip()
    return refs


class FixPanel(Vertical):
    """Title, target, why, what the log filled in, steps, verify, myth, references, source."""

    DEFAULT_CSS = """
    FixPanel {
        height: auto;
    }
    FixPanel Static {
        text-overflow: ellipsis;  /* prose wraps between words; a longer word is cut, not broken */
    }
    FixPanel > .fix-title {
        margin: 1 0 0 0;
    }
    FixPanel > .target {
        color: $text-muted;
    }
    FixPanel > .why, FixPanel > .myth, FixPanel > .verify, FixPanel > .refs,
    FixPanel > .from-log {
        margin-top: 1;
    }
    FixPanel > .steps-head {
        margin-top: 1;
    }
    FixPanel > .source, FixPanel > .hint {
        margin-top: 1;
        color: $text-muted;
    }
    FixPanel .refs {
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    FixPanel .mark {
        margin-left: 3;
    }
    FixPanel .from-log {
        height: auto;
        border: round $success 60%;
        border-title-color: $text-muted;
        padding: 0 1;
    }
    FixPanel CodeBlock {
        border: round $primary 40%;
        border-title-color: $text-muted;
        border-subtitle-color: $text-muted;
        padding: 0 1;
        margin: 0 0 0 3;
    }
    FixPanel CodeBlock:focus {
        border: round $primary;
        border-subtitle-color: $foreground;
    }
    FixPanel CodeBlock.confirm {
        border: heavy $warning;
        border-subtitle-color: $warning;
    }
    FixPanel .from-log CodeBlock {
        margin: 0;
    }
    FixPanel .from-log > Static {
        text-overflow: ellipsis;  /* a long path is cut with "…", never broken in two */
    }
    """

    def __init__(self, view: FixView, *, hint: str = "", **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]  # Widget's own keywords
        self.view = view
        self.hint = hint
        self.pending: int | None = None  # the marked command waiting for its second key
        self._pending_timer: Timer | None = None

    def compose(self) -> ComposeResult:
        view = self.view
        yield Static(Text.assemble(("FIX  ", "bold reverse"), " ", (view.title, "bold")),
                     classes="fix-title")
        if view.target:
            yield Static(Text(f"for {view.target}"), classes="target")
        yield Static(Text.assemble(("Why  ", "bold"), view.why), classes="why")
        log = view.from_log
        if log is not None:
            with Vertical(classes="from-log") as box:
                box.border_title = "from your log" + (f" ({log.where})" if log.where else "")
                if log.advice and not log.commands:  # the commands say it, shorter
                    yield Static(Text(log.advice), classes="advice")
                for value in log.values:
                    yield Static(Text.assemble((f"{value.name} = {value.value}", "bold"),
                                               f"  {value.why}"))
                for command in log.commands:
                    yield Static(step_text(command, "*"))
                    yield CodeBlock(command.code or "", command.lang, command.key)
        yield Static(Text("Steps", style="bold"), classes="steps-head")
        for step in view.steps:
            yield Static(step_text(step, str(step.number)), classes="step")
            if step.mark:  # before the command, always: it is read before it is copied
                yield Static(mark_text(step), classes="mark")
            if step.code is not None:
                yield CodeBlock(step.code, step.lang, step.key, marked=step.marked)
            if step.filled:
                yield Static(Text(f"   filled in from your log: {', '.join(step.filled)}",
                                  style="dim green"), classes="filled")
        if view.verify:
            yield Static(Text.assemble(("Verify  ", "bold green"), view.verify),
                         classes="verify")
        if view.myth:
            yield Static(Text.assemble(("Myth  ", "bold yellow"), view.myth), classes="myth")
        if view.refs:
            yield Static(references(view), classes="refs")
        if view.source:
            yield Static(Text(f"Source: {'; '.join(view.source)}"), classes="source")
        if self.hint:
            yield Static(Text(self.hint), classes="hint")

    # -- copying ------------------------------------------------------------------------------
    def block(self, key: int) -> CodeBlock | None:
        return next((b for b in self.query(CodeBlock) if b.number == key), None)

    def step(self, key: int) -> StepView | None:
        return self.view.command(key)

    def copy(self, key: int) -> bool:
        """Copy command `key`; a marked one only when asked twice. False: no such command."""
        block, step = self.block(key), self.step(key)
        if block is None or step is None:
            return False
        if step.marked and self.pending != key:
            self.cancel()
            self.pending = key
            block.ask_again(str(key))
            block.scroll_visible(animate=False)
            self.app.notify(f"{step.mark}\nPress {key} again (or y) to copy it.",
                            title=f"Command {key} is marked", severity="warning",
                            timeout=CONFIRM_S, markup=False)
            self._pending_timer = self.set_timer(CONFIRM_S, self.cancel)
            return True
        self.cancel()
        self.app.copy_to_clipboard(block.code)
        self.app.notify(copied_message(key), timeout=4)
        return True

    def confirm(self) -> bool:
        """`y`: copy the marked command waiting for its second key."""
        return self.pending is not None and self.copy(self.pending)

    def cancel(self) -> None:
        if self._pending_timer is not None:
            self._pending_timer.stop()
            self._pending_timer = None
        if self.pending is not None:
            block = self.block(self.pending)
            if block is not None:
                block.asked()
        self.pending = None

    def on_code_block_copy_requested(self, message: CodeBlock.CopyRequested) -> None:
        message.stop()
        if message.block.number is not None:
            self.copy(message.block.number)
        else:
            self.app.copy_to_clipboard(message.block.code)
            self.app.notify(copied_message(None), timeout=4)
