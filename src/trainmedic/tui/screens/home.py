"""Home: every tree, log triage, probes and recent walks in one list you filter by typing."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, NamedTuple

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Footer, OptionList, Static
from textual.widgets.option_list import Option

from trainmedic.textsafe import inert_line
from trainmedic.tui.base import AppScreen
from trainmedic.tui.served import probes_location

if TYPE_CHECKING:
    from trainmedic.saved_walks import SavedWalk, WalkRecord

RECENT_WALKS = 5
PLACEHOLDER = "type to filter trees, actions and recent walks"


class Entry(NamedTuple):
    """One line of the home list: what it opens, and the text the filter matches."""

    key: str  # "tree:oom", "action:triage", "walk:<id>"
    label: Text
    haystack: str
    detail: Text
    walk: WalkRecord | None = None  # what a "walk:" entry resumes


class HomeScreen(AppScreen[None]):
    """Typing filters (like fzf): printable keys edit the filter line, the list keeps focus.

    A plain line instead of an `Input` keeps the first frame cheap (no Input CSS to parse).
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "open", "open", priority=True),
        Binding("down", "cursor(1)", "move", key_display="↓↑", show=False, priority=True),
        Binding("up", "cursor(-1)", "move", show=False, priority=True),
        Binding("pagedown", "cursor(10)", "page down", show=False, priority=True),
        Binding("pageup", "cursor(-10)", "page up", show=False, priority=True),
        Binding("escape", "clear", "clear"),
        Binding("ctrl+b", "browse", "browse"),
        Binding("ctrl+t", "triage", "triage"),
        Binding("ctrl+r", "probes", "probes"),
        Binding("ctrl+n", "app.cluster", "cluster (nodes)", key_display="^n", show=False),
        Binding("f1", "app.help", "help", key_display="F1"),
        Binding("ctrl+q", "app.quit", "quit", key_display="^q", priority=True),
    ]

    def __init__(self) -> None:
        super().__init__()
        self._reported: set[object] = set()  # unreadable saved walks already notified
        self._shown_once = False
        self._detail_key: str | None = "?"  # the entry whose detail is shown ("?": none yet)
        self.entries: list[Entry] = []
        self.shown: list[Entry] = []
        self.filter_text = ""

    def compose(self) -> ComposeResult:
        served = probes_location()  # in a browser the probes read the server: say so first
        yield Static(Text.assemble(("trainmedic", "bold"), (f"  {served}  ·", "bold")
                                   if served else "", "  from a dead or frozen training job to "
                                   "the fix"), id="titlebar")
        yield Static(Text(f"/ {PLACEHOLDER}", style="dim"), id="filter")
        yield OptionList(id="entries")
        yield Static(id="detail")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.reload_walks()
        self.query_one("#entries", OptionList).focus()

    def on_screen_resume(self) -> None:
        """Back from a walk (esc, h, or the palette): list it among the recent walks."""
        if self._shown_once:
            self.reload_walks()
        self._shown_once = True

    # -- content ------------------------------------------------------------------------------
    def reload_walks(self) -> None:
        from trainmedic.saved_walks import list_walks

        walks, skipped = list_walks(limit=RECENT_WALKS)
        for item in skipped:
            if item.path not in self._reported:  # once per file, not at every return to home
                self._reported.add(item.path)
                self.app.notify(inert_line(f"{item.path.name}: {item.reason}; skipped"),
                                title="Saved walk unreadable", severity="warning", timeout=6,
                                markup=False)
        self.entries = self._tree_entries() + self._action_entries() + self._walk_entries(walks)
        self.apply_filter(self.filter_text)

    def _tree_entries(self) -> list[Entry]:
        cards = sorted(self.app.cards, key=lambda c: c.id != "triage")
        entries = []
        width = max((len(c.id) for c in cards), default=4)
        for card in cards:
            label = Text(no_wrap=True, overflow="ellipsis")
            label.append(f"{card.id:<{width}}  ", style="bold")
            label.append(card.title)
            label.append(f"  {card.summary}", style="dim")
            detail = Text.assemble((card.title, "bold"), f"   {card.id} · {card.questions} "
                                   f"questions · {card.fixes} fixes",
                                   (f" · {', '.join(card.tags)}" if card.tags else ""),
                                   "\n", card.summary)
            hay = " ".join([card.id, card.title, card.summary, *card.tags]).lower()
            entries.append(Entry(f"tree:{card.id}", label, hay, detail))
        return entries

    def _action_entries(self) -> list[Entry]:
        def entry(key: str, title: str, line: str) -> Entry:
            label = Text(no_wrap=True, overflow="ellipsis")
            label.append(f"» {title}", style="bold")
            label.append(f"  {line}", style="dim")
            return Entry(key, label, f"{title} {line}".lower(), Text(line))

        return [
            entry("action:triage", "Log triage", "open a log or paste an error; jump to the node"),
            entry("action:probes", "Run probes", "GPUs, environment, versions, Xid, network"),
            entry("action:browse", "Browse all trees", "read every tree as an outline, search"),
            entry("action:cluster", "Cluster", "last sweep of every node: the one that differs"),
            entry("action:drill", "Incident drill", "a real log from a public thread: find the "
                  "cause, then compare"),
        ]

    def _walk_entries(self, walks: list[SavedWalk]) -> list[Entry]:
        entries = []
        for saved in walks[:RECENT_WALKS]:
            walk = saved.record
            when = walk.updated[:16].replace("T", " ")
            done = "fix" if walk.finished else "at"
            label = Text(no_wrap=True, overflow="ellipsis")
            label.append("↺ resume ", style="bold")
            label.append(f"{walk.tree or '?'}  {done} {walk.current or '?'}")
            steps = len(walk.steps)
            label.append(f"  {steps} step{'' if steps == 1 else 's'} · {when}", style="dim")
            detail = Text(f"saved walk {saved.id}\n{inert_line(str(saved.path))}")
            hay = f"resume {saved.id} {walk.current}".lower()
            entries.append(Entry(f"walk:{saved.id}", label, hay, detail, walk))
        return entries

    def set_filter(self, text: str) -> None:
        self.filter_text = text
        line = Text("/ ", style="bold")
        if text:
            line.append(text)
            line.append("▏", style="bold")
        else:
            line.append(PLACEHOLDER, style="dim")
        self.query_one("#filter", Static).update(line)
        self.apply_filter(text)

    def apply_filter(self, query: str) -> None:
        """Entries holding every word; a tree whose id is the query (or starts it) comes first,
        then entries whose text starts with it ("resume" lists saved walks before a tree that
        merely mentions resuming)."""
        words = query.lower().split()
        matches = [e for e in self.entries if all(w in e.haystack for w in words)]
        needle = query.strip().lower()

        def rank(entry: Entry) -> int:
            name = entry.key.partition(":")[2]
            if needle and name == needle:
                return 0
            if needle and name.startswith(needle):
                return 1
            if needle and entry.haystack.startswith(needle):
                return 2
            return 3

        self.shown = sorted(matches, key=rank)  # stable: the list order otherwise
        options = self.query_one("#entries", OptionList)
        options.clear_options()
        options.add_options([Option(e.label, id=e.key) for e in self.shown])
        if self.shown:
            options.highlighted = 0
        self._show_detail()

    def _show_detail(self) -> None:
        entry = self.current_entry()
        key = entry.key if entry is not None else None
        if key == self._detail_key:
            return  # unchanged: a needless update would cost a layout pass (and startup time)
        self._detail_key = key
        detail = self.query_one("#detail", Static)
        if entry is None:
            detail.update(Text("Nothing matches the filter. escape clears it.", style="dim"))
        else:
            detail.update(entry.detail)

    def current_entry(self) -> Entry | None:
        index = self.query_one("#entries", OptionList).highlighted
        return self.shown[index] if index is not None and index < len(self.shown) else None

    # -- events and actions -------------------------------------------------------------------
    def on_key(self, event: events.Key) -> None:
        if event.key == "backspace":
            self.set_filter(self.filter_text[:-1])
        elif event.key == "ctrl+u":
            self.set_filter("")
        elif event.is_printable and event.character:
            self.set_filter(self.filter_text + event.character)
        else:
            return
        event.stop()
        event.prevent_default()

    def on_paste(self, event: events.Paste) -> None:
        self.set_filter(self.filter_text + " ".join(event.text.split()))

    def on_option_list_option_highlighted(self, _event: OptionList.OptionHighlighted) -> None:
        self._show_detail()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.action_open()

    def action_cursor(self, delta: int) -> None:
        options = self.query_one("#entries", OptionList)
        if not self.shown:
            return
        current = options.highlighted or 0
        options.highlighted = max(0, min(len(self.shown) - 1, current + delta))

    def action_clear(self) -> None:
        self.set_filter("")

    def action_open(self) -> None:
        entry = self.current_entry()
        if entry is None:
            return
        kind, _, name = entry.key.partition(":")
        app = self.app
        if kind == "tree":
            app.open_walk(name)
        elif kind == "walk" and entry.walk is not None:
            app.resume(entry.walk)
        elif entry.key == "action:triage":
            app.action_triage()
        elif entry.key == "action:probes":
            app.action_probes()
        elif entry.key == "action:browse":
            app.open_browse()
        elif entry.key == "action:cluster":
            app.action_cluster()
        elif entry.key == "action:drill":
            app.action_drill()

    def action_browse(self) -> None:
        entry = self.current_entry()
        app = self.app
        kind, _, name = entry.key.partition(":") if entry is not None else ("", "", "")
        if kind == "tree":
            app.open_browse(app.forest.start(name))
        else:
            app.open_browse()

    def action_triage(self) -> None:
        self.app.action_triage()

    def action_probes(self) -> None:
        self.app.action_probes()
