"""Home: every tree, log triage, probes and recent walks in one list you filter by typing."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, NamedTuple

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from trainmedic.tui.base import AppScreen
from trainmedic.tui.served import probes_location
from trainmedic.tui.widgets.footer import KeysFooter

if TYPE_CHECKING:
    from trainmedic.saved_walks import SavedWalk, Skipped, WalkRecord

RECENT_WALKS = 5
PLACEHOLDER = "type to filter trees, actions and recent walks"
# Keys that are commands here and on every screen; any other letter starts the filter.
DETAIL_ROWS = 3  # the detail panel's height less its rule
NODE_SEARCH_MIN = 3
NODE_HITS = 8
COMMAND_KEYS = frozenset({"j", "k", "g", "G", "q", "question_mark", "slash"})


def _recent_walks() -> tuple[list[SavedWalk], list[Skipped]]:
    """The newest saved walks. Before the first walk is saved there is no walks folder, and
    then the reader (and the modules it needs) is not imported: the first frame of a first start
    does not wait on it. This is the reader's own first check, so a folder that cannot be
    looked at (Python 3.11 raises) is still the reader's to report."""
    from trainmedic.state import walks_dir

    try:
        if not walks_dir().is_dir():
            return [], []
    except OSError:
        pass
    from trainmedic.saved_walks import list_walks

    return list_walks(limit=RECENT_WALKS)


def _count(n: int, what: str) -> str:
    return f"{n} {what}" if n == 1 else f"{n} {what}{'es' if what.endswith('x') else 's'}"


class Entry(NamedTuple):
    """One line of the home list: what it opens, and the text the filter matches."""

    key: str  # "tree:oom", "action:triage", "walk:<id>"
    label: Text
    haystack: str
    detail: Text
    walk: WalkRecord | None = None  # what a "walk:" entry resumes


class HomeScreen(AppScreen[None]):
    """`/` filters (like k9s); a letter that is not a command key starts the filter too. While
    filtering, printable keys edit the filter line and the list keeps focus.

    A plain line instead of an `Input` keeps the first frame cheap (no Input CSS to parse).
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "open", "open", priority=True),
        Binding("down", "cursor(1)", "move", key_display="↓↑", show=False, priority=True),
        Binding("up", "cursor(-1)", "move", show=False, priority=True),
        Binding("pagedown", "cursor(10)", "page down", show=False, priority=True),
        Binding("pageup", "cursor(-10)", "page up", show=False, priority=True),
        Binding("home", "cursor(-1000)", "first", show=False, priority=True),
        Binding("end", "cursor(1000)", "last", show=False, priority=True),
        Binding("slash", "filter", "filter", key_display="/"),
        Binding("escape", "clear", "clear the filter", show=False),
        Binding("ctrl+t", "app.triage", "triage"),
        Binding("ctrl+r", "app.probes", "probes"),
        Binding("ctrl+b", "browse", "browse"),
        Binding("q", "app.request_quit", "quit"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self._reported: set[object] = set()  # unreadable saved walks already notified
        self._shown_once = False
        self._detail_key: str | None = "?"  # the entry whose detail is shown ("?": none yet)
        self.entries: list[Entry] = []
        self.shown: list[Entry] = []
        self.filter_text = ""
        self.filtering = False  # `/` pressed: printable keys go to the filter line

    def compose(self) -> ComposeResult:
        served = probes_location()  # in a browser the probes read the server: say so first
        yield Static(Text.assemble(("trainmedic", "bold"), (f"  {served}  ·", "bold")
                                   if served else "", "  from a dead or frozen training job to "
                                   "the fix"), id="titlebar")
        yield Static(Text(f"/ {PLACEHOLDER}", style="dim"), id="filter")
        yield OptionList(id="entries")
        yield Static(id="detail")
        yield KeysFooter()

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
        walks, skipped = _recent_walks()
        for item in skipped:
            if item.path not in self._reported:  # once per file, not at every return to home
                from trainmedic.textsafe import inert_line

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
            detail = Text.assemble((card.title, "bold"), f"   {card.id} · "
                                   f"{_count(card.questions, 'question')} · "
                                   f"{_count(card.fixes, 'fix')}",
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
            entry("action:memory", "Memory estimate", "per-GPU memory of a launch command or "
                  "script; the cheapest changes that fit"),
            entry("action:browse", "Browse all trees", "read every tree as an outline, search"),
            entry("action:cluster", "Cluster", "last sweep of every node: the one that differs"),
            entry("action:drill", "Incident drill", "a real log from a public thread: find the "
                  "cause, then compare"),
        ]

    def _walk_entries(self, walks: list[SavedWalk]) -> list[Entry]:
        if not walks:
            return []
        from trainmedic.textsafe import inert_line

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
        if text or self.filtering:
            line.append(text)
            line.append("▏", style="bold")
            if not text:
                line.append("  type to filter; enter opens, esc clears", style="dim")
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

        self.shown = sorted(matches, key=rank) + self._node_entries(query)
        options = self.query_one("#entries", OptionList)
        options.clear_options()
        options.add_options([Option(e.label, id=e.key) for e in self.shown])
        if self.shown:
            options.highlighted = 0
        self._show_detail()

    def _node_entries(self, query: str) -> list[Entry]:
        """Questions and fixes holding the words, after everything else: engineers search by
        the flag, the variable or the message they hold (3 letters or more: this needs the
        whole forest, which home otherwise does not load)."""
        if len(query.strip()) < NODE_SEARCH_MIN:
            return []
        from trainmedic.tui.search import node_label, search_nodes, search_text, snippet

        forest = self.app.forest
        entries: list[Entry] = []
        for ref in search_nodes(forest, query):
            if len(entries) >= NODE_HITS:
                break
            title = node_label(forest, ref)
            label = Text(no_wrap=True, overflow="ellipsis")
            label.append(f"  ↳ {ref}  ", style="bold")
            label.append(title)
            where = snippet(search_text(forest, ref), query.lower().split()[0])
            detail = Text.assemble((title, "bold"), f"   {ref} · enter walks from here\n",
                                   (where, "dim"))
            entries.append(Entry(f"node:{ref}", label, search_text(forest, ref), detail))
        return entries

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
            detail.update(self._clipped(entry.detail))

    def _clipped(self, text: Text) -> Text:
        """The detail cut to the rows the panel has, ending in "…" where it was cut (not in
        the middle of a sentence without a sign)."""
        width = max(10, self.app.size.width - 2)
        lines = text.wrap(self.app.console, width)
        if len(lines) <= DETAIL_ROWS:
            return text
        kept = lines[:DETAIL_ROWS]
        last = kept[-1]
        last.truncate(width - 1)
        last.rstrip()
        last.append("…")
        return Text("\n").join(kept)

    def current_entry(self) -> Entry | None:
        index = self.query_one("#entries", OptionList).highlighted
        return self.shown[index] if index is not None and index < len(self.shown) else None

    # -- events and actions -------------------------------------------------------------------
    def on_key(self, event: events.Key) -> None:
        if event.key == "backspace" and (self.filtering or self.filter_text):
            self.set_filter(self.filter_text[:-1])
        elif event.key == "ctrl+u":
            self.set_filter("")
        elif event.key == "question_mark":
            return  # help, even while filtering
        elif event.is_printable and event.character and (
                self.filtering or event.key not in COMMAND_KEYS):
            self.filtering = True
            self.set_filter(self.filter_text + event.character)
        else:
            return
        event.stop()
        event.prevent_default()

    def action_filter(self) -> None:
        self.filtering = True
        self.set_filter(self.filter_text)

    def on_paste(self, event: events.Paste) -> None:
        self.filtering = True
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
        self.filtering = False
        self.set_filter("")

    def action_open(self) -> None:
        entry = self.current_entry()
        if entry is None:
            return
        self.filtering = False  # back from what it opens, keys are commands again
        self.set_filter(self.filter_text)
        kind, _, name = entry.key.partition(":")
        app = self.app
        if kind in ("tree", "node"):
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
        elif entry.key == "action:memory":
            app.action_memory()
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

