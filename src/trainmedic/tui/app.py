"""The Textual app: owns the forest, the probe runner and saving; screens do the showing.

Probes and triage are optional collaborators found at run time (guarded imports), and can be
injected, so tests drive the app with fake probes and the UI never waits on a real one.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.screen import Screen

from trainmedic.errors import UsageError

if TYPE_CHECKING:
    from textual.command import Provider

    from trainmedic.trees import Forest, Ref
    from trainmedic.tui.catalog import TreeCard
    from trainmedic.walk import WalkSession

ProbeRunner = Callable[[list[str] | None], list[Any]]


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
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("f1", "help", "help", key_display="F1", show=False),
        Binding("ctrl+q", "quit", "quit", key_display="^q", show=False, priority=True),
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
        triage_api: Any | None = None,
        save: Callable[[dict[str, Any]], object] | None = None,
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
        self._triage_api = triage_api
        self._save = save
        self._save_failed = False
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
            from trainmedic.tui.catalog import cards_from_forest

            self._cards = cards_from_forest(self.forest)
        return self._cards

    # -- collaborators ------------------------------------------------------------------------
    @property
    def probe_runner(self) -> ProbeRunner | None:
        """The injected runner, else `trainmedic.probes.runner.run_probes` if it exists."""
        if self._probe_runner is None:
            if not self.probes_enabled:
                return None
            from trainmedic.plain import load_probe_runner

            self._probe_runner = load_probe_runner()
        return self._probe_runner

    @property
    def triage_api(self) -> Any | None:
        """An object with `triage_paths(paths)` and `triage_text(text)`, or None."""
        if self._triage_api is None:
            try:
                import trainmedic.triage as triage

                if hasattr(triage, "triage_paths") and hasattr(triage, "triage_text"):
                    self._triage_api = triage
            except ImportError:
                return None
        return self._triage_api

    def save_session(self, session: WalkSession) -> None:
        """Save after every step; a failing disk is reported once and never ends the walk."""
        try:
            if self._save is not None:
                self._save(session.to_dict())
            else:
                from trainmedic.state import save_walk

                save_walk(session.to_dict())
        except OSError as exc:
            if not self._save_failed:
                self._save_failed = True
                self.notify(f"cannot save the walk: {exc}", severity="warning")

    # -- navigation ---------------------------------------------------------------------------
    def get_default_screen(self) -> Screen:
        from trainmedic.tui.screens.home import HomeScreen

        return HomeScreen()

    def on_mount(self) -> None:
        if self._initial_session is not None:
            self.open_walk(self._initial_session)

    def on_unmount(self) -> None:
        """A cluster sweep still in flight would hold the exit for up to a node timeout."""
        cluster = sys.modules.get("trainmedic.tui.screens.cluster")
        if cluster is not None and "trainmedic.cluster.fanout" in sys.modules:
            cluster.stop_sweeps()

    def open_walk(self, target: WalkSession | Ref | str, *, triage: dict | None = None) -> None:
        from trainmedic.tui.screens.walk import WalkScreen
        from trainmedic.walk import WalkSession

        try:
            session = target if isinstance(target, WalkSession) else WalkSession(
                self.forest, target)
        except UsageError as exc:
            self.notify(str(exc), severity="error")
            return
        if triage is not None:
            session.triage = triage
        self.push_screen(WalkScreen(session))

    def resume(self, data: dict[str, Any]) -> None:
        from trainmedic.walk import WalkSession

        try:
            session = WalkSession.from_dict(self.forest, data)
        except UsageError as exc:
            self.notify(str(exc), severity="error", timeout=8)
            return
        self.open_walk(session)

    def open_browse(self, ref: Ref | None = None) -> None:
        from trainmedic.tui.screens.browse import BrowseScreen

        self.push_screen(BrowseScreen(ref))

    def go_home(self) -> None:
        while len(self.screen_stack) > 1:
            self.pop_screen()  # the home screen refreshes its recent walks when it resumes

    def action_help(self) -> None:
        from trainmedic.tui.screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_triage(self) -> None:
        from trainmedic.tui.screens.triage import TriageScreen

        self.push_screen(TriageScreen())

    def action_probes(self) -> None:
        """All probes; opened from a walk, their results are attached to that walk."""
        from trainmedic.tui.screens.probes import ProbesScreen

        self.push_screen(ProbesScreen(self._walk_in_view()))

    def _walk_in_view(self) -> WalkSession | None:
        """The session of the walk screen under any dialogs (the palette, help), or None."""
        from textual.screen import ModalScreen

        for screen in reversed(self.screen_stack):
            if isinstance(screen, ModalScreen):
                continue
            return getattr(screen, "session", None) if type(screen).__name__ == "WalkScreen" \
                else None
        return None

    def action_cluster(self) -> None:
        from trainmedic.tui.screens.cluster import ClusterScreen

        self.push_screen(ClusterScreen())

    # -- command palette ----------------------------------------------------------------------
    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """Every action shown in the footer of this screen, plus the app-wide ones."""
        yield from super().get_system_commands(screen)
        seen: set[str] = set()
        for active in screen.active_bindings.values():
            binding = active.binding
            if not active.enabled or not binding.description or binding.action in seen:
                continue
            if binding.action in ("quit", "app.quit", "command_palette"):
                continue
            seen.add(binding.action)
            title = binding.description[0].upper() + binding.description[1:]
            yield SystemCommand(title, f"key: {binding.key_display or binding.key}",
                                partial(_run_action, active.node, binding.action))
        yield SystemCommand("Log triage", "Open a log or paste an error", self.action_triage)
        yield SystemCommand("Run probes", "Check this machine", self.action_probes)
        yield SystemCommand("Cluster", "Last sweep of every node; run a new one",
                            self.action_cluster)
        yield SystemCommand("Browse trees", "Every tree as an outline", self.open_browse)


async def _run_action(node: Any, action: str) -> None:
    await node.run_action(action)
