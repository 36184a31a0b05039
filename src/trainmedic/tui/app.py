"""The Textual app: owns the forest, the probe runner and saving; screens do the showing.

The probe runner and the saver can be injected, so tests drive the app with fake probes and a
fake disk, and the UI never waits on a real probe.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.dom import DOMNode
from textual.screen import Screen

from trainmedic.errors import UsageError

if TYPE_CHECKING:
    from textual.command import Provider

    from trainmedic.probes.runner import ProbeRunner
    from trainmedic.saved_walks import WalkRecord
    from trainmedic.trees import Forest, Ref
    from trainmedic.triage.attachment import TriageAttachment
    from trainmedic.tui.home_cards import TreeCard
    from trainmedic.walk import Saver, WalkSession


class TreesBroken(Exception):
    """A tree file broke after home was painted from cached cards.

    Raised out of whatever handler needed the forest: Textual ends the app on it and, because
    it has `__rich__`, prints that one line instead of a traceback.
    """

    def __rich__(self) -> str:
        return f"trainmedic: error: {self.args[0]}"


def node_search_provider() -> type[Provider]:
    """Imported on first use of the palette: `textual.command` is not needed to paint home."""
    from trainmedic.tui.search import NodeSearchProvider

    return NodeSearchProvider


class TrainmedicApp(App[int]):
    """Home screen first; a walk, browse, triage or probes screen is pushed on top of it."""

    TITLE = "trainmedic"
    CSS_PATH = str(Path(__file__).with_name("app.tcss"))  # absolute: subclasses live elsewhere
    COMMANDS: ClassVar = App.COMMANDS | {node_search_provider}
    # One meaning per key on every screen (a screen adds its own keys, never re-uses these).
    # Not priority, except the ways out: a text field still gets its letters.
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("question_mark", "help", "help", key_display="?"),
        Binding("f1", "help", "help", key_display="F1", show=False),
        Binding("q", "request_quit", "quit", show=False),
        Binding("ctrl+c", "request_quit", "quit", key_display="^c", show=False, priority=True),
        Binding("ctrl+q", "request_quit", "quit", key_display="^q", show=False, priority=True),
        Binding("slash", "search", "search", key_display="/", show=False),
        Binding("j", "nav('down')", "down", show=False),
        Binding("k", "nav('up')", "up", show=False),
        Binding("g", "nav('home')", "first", show=False),
        Binding("G", "nav('end')", "last", show=False),
        Binding("ctrl+b", "browse", "browse trees", key_display="^b", show=False),
        Binding("ctrl+t", "triage", "log triage", key_display="^t", show=False),
        Binding("ctrl+r", "probes", "run probes", key_display="^r", show=False),
        Binding("ctrl+n", "cluster", "cluster", key_display="^n", show=False),
        # Last in every footer, cut first when the width runs out (see widgets/footer.py).
        Binding("ctrl+p", "command_palette", "palette", key_display="^p"),
    ]

    def __init__(
        self,
        forest: Forest | None = None,
        *,
        cards: list[TreeCard] | None = None,
        forest_loader: Callable[[], Forest] | None = None,
        session: WalkSession | None = None,
        probes: bool = True,
        probe_runner: ProbeRunner | None = None,
        save: Saver | None = None,
    ) -> None:
        super().__init__()
        if forest is None and forest_loader is None:
            raise ValueError("give a forest or a forest_loader")
        self._forest = forest
        self._forest_loader = forest_loader
        self._forest_lock = threading.Lock()
        self._cards = cards
        self._initial_session = session
        self.probes_enabled = probes
        self._probe_runner = probe_runner
        self._save = save
        self._save_failed = False
        self._on_exit: list[Callable[[], object]] = []
        self.closing = False  # set while the app shuts down: background work must not save
        self.trees_error = ""  # set when the lazy forest load failed: the CLI exits 2

    # -- the trees ------------------------------------------------------------------------------
    @property
    def forest(self) -> Forest:
        """The whole forest, loaded on first use when home was painted from cached cards."""
        if self._forest is None:
            with self._forest_lock:
                if self._forest is None:
                    assert self._forest_loader is not None
                    try:
                        self._forest = self._forest_loader()
                    except UsageError as exc:  # a tree file broke since the cards were saved
                        self.trees_error = str(exc)
                        raise TreesBroken(str(exc)) from None
        return self._forest

    @property
    def cards(self) -> list[TreeCard]:
        """Id, title, summary, tags and counts of every tree: what the home list shows."""
        if self._cards is None:
            from trainmedic.tui.home_cards import cards_from_forest

            self._cards = cards_from_forest(self.forest)
        return self._cards

    # -- collaborators ------------------------------------------------------------------------
    @property
    def probe_runner(self) -> ProbeRunner | None:
        """The injected runner, else `run_probes`; None with `--no-probes`."""
        if not self.probes_enabled:
            return None
        if self._probe_runner is None:
            from trainmedic.walk import default_probe_runner

            self._probe_runner = default_probe_runner()
        return self._probe_runner

    def save_session(self, session: WalkSession) -> None:
        """Save after every step; a failing disk is reported once and never ends the walk."""
        try:
            record = session.record()
            if self._save is not None:
                self._save(record)
            else:
                from trainmedic.saved_walks import save_walk

                save_walk(record)
        except OSError as exc:
            if not self._save_failed:
                self._save_failed = True
                self.notify(f"cannot save the walk: {exc}", severity="warning", markup=False)

    def stop_on_exit(self, stop: Callable[[], object]) -> None:
        """Call `stop` when the app closes (a sweep in flight holds the exit for a node timeout
        otherwise); once per callable."""
        if stop not in self._on_exit:
            self._on_exit.append(stop)

    # -- navigation ---------------------------------------------------------------------------
    def get_default_screen(self) -> Screen[None]:
        from trainmedic.tui.screens.home import HomeScreen

        return HomeScreen()

    def on_mount(self) -> None:
        if self._initial_session is not None:
            self.open_walk(self._initial_session)

    def on_unmount(self) -> None:
        self.closing = True
        for stop in self._on_exit:
            stop()

    def open_walk(self, target: WalkSession | Ref | str, *,
                  triage: TriageAttachment | None = None) -> None:
        from trainmedic.tui.screens.walk import WalkScreen
        from trainmedic.walk import WalkSession

        try:
            if isinstance(target, WalkSession):
                session = target
            elif triage is not None:  # on the tree's own route, so there is a way up
                session = WalkSession.from_finding(self.forest, target, triage)
            else:
                session = WalkSession(self.forest, target)
        except UsageError as exc:
            self.notify(str(exc), severity="error", markup=False)
            return
        self.push_screen(WalkScreen(session))

    def resume(self, record: WalkRecord) -> None:
        from trainmedic.walk import resume

        try:
            session, note = resume(self.forest, record)
        except UsageError as exc:
            self.notify(str(exc), severity="error", timeout=8, markup=False)
            return
        if note:
            self.notify(note, severity="warning", timeout=8, markup=False)
        self.open_walk(session)

    def open_browse(self, ref: Ref | None = None, *, search: bool = False) -> None:
        from trainmedic.tui.screens.browse import BrowseScreen

        self.push_screen(BrowseScreen(ref, search=search))

    def action_browse(self) -> None:
        self.open_browse()

    def action_search(self) -> None:
        """`/` where the screen has no search of its own: search every tree (in browse)."""
        self.open_browse(search=True)

    def action_memory(self) -> None:
        from trainmedic.tui.screens.memory import MemoryScreen

        self.push_screen(MemoryScreen())

    def action_nav(self, key: str) -> None:
        """j/k/g/G: the arrow, home and end keys of whatever has focus (vim and less habits)."""
        self.simulate_key(key)

    def action_request_quit(self) -> None:
        """q, ^c, ^q: quit at once, except in the middle of a walk (one question answered, no
        fix yet), where it asks first; the walk is saved either way."""
        from trainmedic.tui.dialogs.quit import QuitScreen
        from trainmedic.tui.screens.walk import WalkScreen

        if isinstance(self.screen, QuitScreen):
            self.exit()
            return
        mid_walk = any(isinstance(s, WalkScreen) and s.mid_walk for s in self.screen_stack)
        if not mid_walk:
            self.exit()
            return

        def done(quit_: bool | None) -> None:
            if quit_:
                self.exit()

        self.push_screen(QuitScreen(), done)

    def go_home(self) -> None:
        while len(self.screen_stack) > 1:
            self.pop_screen()  # the home screen refreshes its recent walks when it resumes

    def action_help(self) -> None:
        from trainmedic.tui.dialogs.help import HelpScreen

        if isinstance(self.screen, HelpScreen):
            self.screen.dismiss()
        else:
            self.push_screen(HelpScreen(self.help_sections()))

    def help_sections(self) -> list[tuple[str, list[BindingType]]]:
        """Every screen's keys, for the help dialog: titled, in the order people meet them."""
        from trainmedic.tui.dialogs.export import ExportScreen
        from trainmedic.tui.dialogs.launch_command import LaunchCommandScreen
        from trainmedic.tui.screens.browse import BrowseScreen
        from trainmedic.tui.screens.cluster import ClusterScreen
        from trainmedic.tui.screens.drill import DrillScreen
        from trainmedic.tui.screens.home import HomeScreen
        from trainmedic.tui.screens.memory import MemoryScreen
        from trainmedic.tui.screens.probes import ProbesScreen
        from trainmedic.tui.screens.report import ReportScreen
        from trainmedic.tui.screens.triage import TriageScreen
        from trainmedic.tui.screens.walk import WalkScreen
        from trainmedic.tui.widgets.codeblock import CodeBlock

        longer = {"command_palette": "command palette: actions and node search"}
        everywhere = [Binding(b.key, b.action, longer.get(b.action, b.description), show=True,
                              key_display=b.key_display) for b in self.BINDINGS
                      if isinstance(b, Binding)]
        return [
            ("Everywhere (not while typing in a text field)", [
                *everywhere, Binding("tab", "", "next pane (the evidence panel scrolls)")]),
            ("Home", [Binding("", "", "type (or /) to filter trees, actions, walks and nodes; "
                              "backspace, ^u edit it", key_display="a-z"),
                      *HomeScreen.BINDINGS]),
            ("Question / fix", [*WalkScreen.BINDINGS, *CodeBlock.BINDINGS,
                                Binding("enter", "", "choose the highlighted answer")]),
            ("Browse", list(BrowseScreen.BINDINGS)),
            ("Export runbook (browse x)", [*ExportScreen.BINDINGS,
                                           Binding("enter", "", "write the file")]),
            ("Incident report (fix i)", list(ReportScreen.BINDINGS)),
            ("Log triage", list(TriageScreen.BINDINGS)),
            ("Memory estimate", list(MemoryScreen.BINDINGS)),
            ("Cluster", list(ClusterScreen.BINDINGS)),
            ("Probes", list(ProbesScreen.BINDINGS)),
            ("Incident drill", list(DrillScreen.BINDINGS)),
            ("Launch command", list(LaunchCommandScreen.BINDINGS)),
        ]

    def action_triage(self) -> None:
        """The one triage screen: installed, so an analysis left running (or its findings)
        is still there when the screen is opened again."""
        from trainmedic.triage.symptom import from_walk
        from trainmedic.tui.screens.triage import TriageScreen

        if not self.is_screen_installed("triage"):
            self.install_screen(TriageScreen(), "triage")
        screen = self.get_screen("triage")
        if self.screen is not screen:
            # opened from a walk that answered "What do you see?": triage with that answer
            session = getattr(self.screen, "session", None)
            if isinstance(screen, TriageScreen):
                screen.symptom = from_walk(session.path()) if session is not None else None
            if self.get_screen("triage") in self.screen_stack:
                while self.screen is not self.get_screen("triage"):
                    self.pop_screen()
            else:
                self.push_screen("triage")

    def action_probes(self) -> None:
        """All probes; opened from a walk, their results are attached to that walk."""
        from trainmedic.tui.screens.probes import ProbesScreen

        self.push_screen(ProbesScreen(self._walk_in_view()))

    def _walk_in_view(self) -> WalkSession | None:
        """The session of the walk screen under any dialogs (the palette, help), or None."""
        from textual.screen import ModalScreen

        from trainmedic.tui.screens.walk import WalkScreen

        for screen in reversed(self.screen_stack):
            if isinstance(screen, ModalScreen):
                continue
            return screen.session if isinstance(screen, WalkScreen) else None
        return None

    def action_cluster(self) -> None:
        from trainmedic.tui.screens.cluster import ClusterScreen

        self.push_screen(ClusterScreen())

    def action_drill(self) -> None:
        from trainmedic.tui.screens.drill import DrillScreen

        self.push_screen(DrillScreen())

    # -- command palette ----------------------------------------------------------------------
    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        """The palette's actions: this screen's own keys, then the app's, each once and in
        words; none of Textual's widget internals (focus next, copy selected text, ...)."""
        seen: set[str] = set()

        def once(title: str) -> bool:
            key = title.lower()
            if key in seen:
                return False
            seen.add(key)
            return True

        own = {(b.key, b.action) for b in type(screen).__dict__.get("BINDINGS", [])
               if isinstance(b, Binding)}  # what this screen declares, not Textual's Screen
        for active in screen.active_bindings.values():
            binding = active.binding
            if active.node is not screen or (binding.key, binding.action) not in own \
                    or not active.enabled or not binding.description \
                    or "(" in binding.action or not once(binding.description):
                continue  # a widget's key, a disabled one, or one of the numbered keys
            title = binding.description[0].upper() + binding.description[1:]
            yield SystemCommand(title, f"key: {binding.key_display or binding.key}",
                                partial(_run_action, screen, binding.action))
        for title, help_text, callback in (
                ("Log triage", "Open a log or paste an error (^t)", self.action_triage),
                ("Run probes", "Check this machine (^r)", self.action_probes),
                ("Memory estimate", "Per-GPU memory of a launch command or script",
                 self.action_memory),
                ("Cluster", "Last sweep of every node; run a new one (^n)", self.action_cluster),
                ("Browse trees", "Every tree as an outline, searchable (^b)", self.open_browse),
                ("Incident drill", "A real log: find the cause, then compare",
                 self.action_drill),
                ("Home", "The list of trees and recent walks", self.go_home),
                ("Keys", "Every key of every screen (?)", self.action_help),
                ("Quit", "Leave trainmedic (q)", self.action_request_quit)):
            if once(title):
                yield SystemCommand(title, help_text, callback)


async def _run_action(node: DOMNode, action: str) -> None:
    await node.app.run_action(action, node)
