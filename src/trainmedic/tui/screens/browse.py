"""Browse: every tree as an expandable outline, any node opened read-only, search across all."""

from __future__ import annotations

from typing import ClassVar

from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Input, Static, Tree
from textual.widgets.tree import TreeNode

from trainmedic.trees import Fix, Forest, Ref
from trainmedic.tui.base import AppScreen
from trainmedic.tui.search import node_label, search_nodes, tree_order
from trainmedic.tui.widgets.fixpanel import FixPanel
from trainmedic.tui.widgets.footer import KeysFooter
from trainmedic.tui.widgets.nodeview import render_question


def _label(forest: Forest, ref: Ref, prefix: str = "", *, show_tree: bool = False) -> Text:
    node = forest.node(ref)
    text = Text(no_wrap=True, overflow="ellipsis")
    if prefix:
        text.append(prefix, style="dim")
    mark, style = ("✚ ", "green") if isinstance(node, Fix) else ("? ", "bold")
    text.append(mark, style=style)
    if show_tree:
        text.append(f"{ref.tree}: ", style="dim")
    text.append(node_label(forest, ref))
    return text


class Outline(Tree[Ref | None]):
    """The outline, its labels cut with an ellipsis at the pane's edge (no sideways scroll)."""

    def _room(self, node: TreeNode[Ref | None]) -> int:
        depth, parent = 0, node.parent
        while parent is not None and parent is not self.root:
            depth, parent = depth + 1, parent.parent
        return self.size.width - depth * self.guide_depth - 1

    def render_label(self, node: TreeNode[Ref | None], base_style: Style,
                     style: Style) -> Text:
        text = super().render_label(node, base_style, style)
        room = self._room(node)
        if 0 < room < text.cell_len:
            text.truncate(room, overflow="ellipsis")
        return text

    def get_label_width(self, node: TreeNode[Ref | None]) -> int:
        width = super().get_label_width(node)
        room = self._room(node)
        return min(width, room) if room > 0 else width

    def on_resize(self) -> None:
        self._invalidate()


class BrowseScreen(AppScreen[None]):
    CSS_PATH = "browse.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "search", "search", key_display="/"),
        Binding("w", "walk", "walk from here"),
        Binding("asterisk", "expand_all", "expand all", key_display="*"),
        Binding("x", "export", "export"),
        Binding("escape", "leave", "back", key_display="esc"),
        Binding("1", "copy(1)", "copy", key_display="1-9", show=False),
        *[Binding(str(n), f"copy({n})", "copy", show=False) for n in range(2, 10)],
        Binding("y", "confirm_copy", "copy it", show=False),
    ]

    def __init__(self, focus: Ref | None = None, *, search: bool = False) -> None:
        super().__init__()
        self.focus_ref = focus
        self.start_in_search = search
        self.query_text = ""

    def compose(self) -> ComposeResult:
        yield Static(Text.assemble(("Browse", "bold"), "  read-only: enter expands, w walks from "
                                   "the highlighted node", no_wrap=True, overflow="ellipsis"),
                     id="titlebar")
        yield Input(placeholder="/ search every tree: words, flags, variables, commands…",
                    id="search")
        with Horizontal(id="browse-body"):
            yield Outline("trees", id="outline")
            with VerticalScroll(id="node-view"):
                yield Static(id="node-detail")
        yield KeysFooter()

    @property
    def forest(self) -> Forest:
        return self.app.forest

    def on_mount(self) -> None:
        outline = self.query_one("#outline", Tree)
        outline.show_root = False
        outline.guide_depth = 3
        self._build_outline()
        if self.start_in_search:
            self.query_one("#search", Input).focus()
        else:
            outline.focus()

    # -- outline ------------------------------------------------------------------------------
    def _build_outline(self) -> None:
        outline = self.query_one("#outline", Tree)
        outline.clear()
        target: TreeNode | None = None
        for tree_id in tree_order(self.forest):
            tree = self.forest.trees[tree_id]
            label = Text(no_wrap=True, overflow="ellipsis")
            label.append(f"{tree_id} ", style="bold")
            label.append(str(tree.title), style="dim")
            branch = outline.root.add(label, data=None, expand=False)
            start = Ref(tree_id, tree.start)
            node = self._add(branch, start, "")
            if self.focus_ref is not None and self.focus_ref.tree == tree_id:
                branch.expand()
                target = self._reveal(node, self.focus_ref) or node
        if target is not None:
            self.call_after_refresh(self._select, target)
        elif outline.root.children:
            outline.cursor_line = 0

    def _add(self, parent: TreeNode, ref: Ref, prefix: str) -> TreeNode:
        same_tree = parent.data is None or parent.data.tree == ref.tree
        node = self.forest.node(ref)
        expandable = same_tree and not isinstance(node, Fix)
        if not same_tree:
            label = Text(f"{prefix}↪ {ref}  ", style="dim") + _label(self.forest, ref)
            return parent.add_leaf(label, data=ref)
        return parent.add(_label(self.forest, ref, prefix), data=ref, allow_expand=expandable)

    def _populate(self, tree_node: TreeNode) -> None:
        ref: Ref | None = tree_node.data
        if ref is None or tree_node.children:
            return
        node = self.forest.node(ref)
        if isinstance(node, Fix):
            return
        for i, answer in enumerate(node.answers, start=1):
            target = self.forest.resolve(ref.tree, answer.goto)
            if target is not None:
                self._add(tree_node, target, f"{i}. {answer.text} → ")

    def _reveal(self, start: TreeNode, want: Ref, depth: int = 0) -> TreeNode | None:
        """Expand the outline down to `want` (first path found), returning its node."""
        if start.data == want:
            return start
        if depth > 30 or not start.allow_expand:
            return None
        self._populate(start)
        for child in start.children:
            found = self._reveal(child, want, depth + 1)
            if found is not None:
                start.expand()
                return found
        return None

    def _select(self, node: TreeNode) -> None:
        outline = self.query_one("#outline", Tree)
        outline.move_cursor(node)
        self._show(node.data)

    def _show(self, ref: Ref | None) -> None:
        """The node read-only: a fix through the same panel as the walk's fix screen."""
        view = self.query_one("#node-view", VerticalScroll)
        for panel in view.query(FixPanel):
            panel.remove()
        detail = self.query_one("#node-detail", Static)
        if ref is None:
            detail.display = True
            detail.update(Text("Expand a tree (enter) to read its nodes.", style="dim"))
            return
        node = self.forest.node(ref)
        if isinstance(node, Fix):
            from trainmedic.export.fixview import fix_view

            detail.display = False
            view.mount(FixPanel(fix_view(node, str(ref)), hint=f"{ref} · w walks here"))
        else:
            detail.display = True
            detail.update(render_question(self.forest, ref))
        view.scroll_home(animate=False)

    def on_tree_node_expanded(self, event: Tree.NodeExpanded) -> None:
        self._populate(event.node)

    def on_tree_node_highlighted(self, event: Tree.NodeHighlighted) -> None:
        data = event.node.data
        if data is None and event.node.parent is not None and event.node.children:
            data = event.node.children[0].data
        self._show(data)

    # -- search -------------------------------------------------------------------------------
    def on_input_changed(self, event: Input.Changed) -> None:
        self.query_text = event.value.strip()
        if not self.query_text:
            self._build_outline()
            return
        outline = self.query_one("#outline", Tree)
        outline.clear()
        hits = list(search_nodes(self.forest, self.query_text))
        by_tree: dict[str, TreeNode] = {}
        for ref in hits:
            if ref.tree not in by_tree:
                title = self.forest.trees[ref.tree].title
                by_tree[ref.tree] = outline.root.add(Text.assemble((ref.tree, "bold"), " ",
                                                                   (str(title), "dim")),
                                                     expand=True)
            by_tree[ref.tree].add(_label(self.forest, ref), data=ref,
                                  allow_expand=not isinstance(self.forest.node(ref), Fix))
        if not hits:
            outline.root.add_leaf(Text(f"nothing matches '{self.query_text}'", style="dim"))
        self._show(hits[0] if hits else None)  # not the node read before the search

    def on_input_submitted(self, _event: Input.Submitted) -> None:
        self.query_one("#outline", Tree).focus()

    # -- actions ------------------------------------------------------------------------------
    def action_search(self) -> None:
        self.query_one("#search", Input).focus()

    def _ref_in_view(self) -> Ref | None:
        node = self.query_one("#outline", Tree).cursor_node
        ref = node.data if node is not None else None
        if ref is None and node is not None and node.children:
            ref = node.children[0].data
        return ref

    def action_walk(self) -> None:
        ref = self._ref_in_view()
        if ref is not None:
            self.app.open_walk(ref)

    def _tree_in_view(self) -> str | None:
        """The tree under the cursor (its branch, or any node in it)."""
        node = self.query_one("#outline", Tree).cursor_node
        while node is not None:
            if isinstance(node.data, Ref):
                return node.data.tree
            if node.children and isinstance(node.children[0].data, Ref):
                return node.children[0].data.tree
            node = node.parent
        return None

    def action_export(self) -> None:
        from trainmedic.tui.dialogs.export import ExportScreen

        tree_id = self._tree_in_view()
        if tree_id is None:
            self.notify("Move the cursor onto a tree first.", severity="warning")
            return
        self.app.push_screen(ExportScreen(self.forest, tree_id))

    def action_expand_all(self) -> None:
        """Everything under the cursor's tree (a search's hits included)."""
        node = self.query_one("#outline", Tree).cursor_node
        if node is None:
            return
        branch = node
        while branch.parent is not None and branch.parent.parent is not None:
            branch = branch.parent
        self._expand(branch, 0)

    def _expand(self, node: TreeNode, depth: int) -> None:
        if depth > 12 or not node.allow_expand:
            return
        self._populate(node)
        node.expand()
        for child in node.children:
            self._expand(child, depth + 1)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("copy", "confirm_copy"):
            panels = self.query(FixPanel)
            if not panels:
                return False
            if action == "confirm_copy":
                return panels.first().pending is not None
            key = parameters[0] if parameters else None
            return isinstance(key, int) and panels.first().step(key) is not None
        return True

    def action_copy(self, key: int) -> None:
        self.query_one(FixPanel).copy(key)
        self.refresh_bindings()

    def action_confirm_copy(self) -> None:
        self.query_one(FixPanel).confirm()
        self.refresh_bindings()

    def action_leave(self) -> None:
        search = self.query_one("#search", Input)
        if search.has_focus and search.value:
            search.value = ""
            return
        self.app.pop_screen()
