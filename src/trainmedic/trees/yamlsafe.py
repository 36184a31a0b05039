"""Read a YAML file into plain data that remembers line numbers, refusing anything dangerous.

`yaml.compose` builds only a node graph (no Python objects), and we convert it ourselves: that
keeps safe_load-level safety, gives every key and list item its line, rejects anchors/aliases
(so an alias bomb costs nothing), and catches duplicate keys, which PyYAML silently overwrites.

Only a regular file of at most MAX_BYTES is read (a FIFO would block, `/dev/zero` never ends).
Every string is made inert here, once, as it is loaded (`textsafe.inert`): tree text reaches the
TUI, `walk --plain`, exports and reports, and no front end can forget it. A control character in
a tree is never meant (YAML's "\\e" is how an escape sequence gets in), so it is also an error
that `lint` reports with its line; the tree is still built, from the inert text.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from trainmedic.safefile import TooLarge, read_bounded
from trainmedic.textsafe import has_controls, inert
from trainmedic.trees.problems import Problem

MAX_BYTES = 2 * 1024 * 1024  # the largest built-in tree is well under 200 KB

try:  # the C parser is ~10x faster; fall back where libyaml is missing
    _Loader: type = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - depends on the PyYAML build
    _Loader = yaml.SafeLoader


class LMap(dict):
    """A mapping with the line of the mapping itself, of each key, and of the first line of
    each scalar value's text (a block scalar `|`/`>` starts on the line after its key)."""

    line: int
    key_lines: dict[str, int]
    value_lines: dict[str, int]


class LList(list):
    """A list with the line of the list and of each item."""

    line: int
    item_lines: list[int]


class YamlError(Exception):
    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.message = message


def _convert(node: yaml.Node, seen: set[int], controls: list[int] | None = None) -> Any:
    """Plain data from a node graph; the lines of strings with control characters go to
    `controls` (the strings themselves are made inert)."""
    if controls is None:
        controls = []
    if id(node) in seen:
        raise YamlError(node.start_mark.line + 1, "anchors and aliases are not supported in trees")
    seen.add(id(node))
    line = node.start_mark.line + 1
    if node.tag != _STANDARD[type(node)] and node.tag not in _IMPLICIT_SCALARS:
        shown = node.tag.replace("tag:yaml.org,2002:", "!!")
        raise YamlError(line, f"tag {shown} is not allowed in trees")
    if isinstance(node, yaml.MappingNode):
        out = LMap()
        out.line = line
        out.key_lines = {}
        out.value_lines = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise YamlError(key_node.start_mark.line + 1, "merge keys (<<) are not supported")
            key = _convert(key_node, seen, controls)
            key_line = key_node.start_mark.line + 1
            if not isinstance(key, str):
                raise YamlError(key_line, f"keys must be strings, not {type(key).__name__}")
            if key in out:
                raise YamlError(
                    key_line, f"duplicate key '{key}' (first at line {out.key_lines[key]})"
                )
            out[key] = _convert(value_node, seen, controls)
            out.key_lines[key] = key_line
            if isinstance(value_node, yaml.ScalarNode):
                block = value_node.style in ("|", ">")
                out.value_lines[key] = value_node.start_mark.line + 1 + block
        return out
    if isinstance(node, yaml.SequenceNode):
        items = LList()
        items.line = line
        items.item_lines = []
        for item in node.value:
            items.append(_convert(item, seen, controls))
            items.item_lines.append(item.start_mark.line + 1)
        return items
    if node.tag == "tag:yaml.org,2002:null":
        return None
    # Every value of the format is text: keep what was written, so `text: Yes` stays "Yes"
    # instead of YAML 1.1's boolean, and `title: 42` is the text "42".
    if has_controls(node.value):
        controls.append(line)
        return inert(node.value)
    return node.value


_STANDARD = {
    yaml.MappingNode: "tag:yaml.org,2002:map",
    yaml.SequenceNode: "tag:yaml.org,2002:seq",
    yaml.ScalarNode: "tag:yaml.org,2002:str",
}
_IMPLICIT_SCALARS = {
    f"tag:yaml.org,2002:{name}" for name in ("bool", "int", "float", "null", "timestamp")
}


def _first_alias_line(text: str) -> int | None:
    """The line of the first alias, so the error points at `*name`, not at its anchor."""
    try:
        for event in yaml.parse(text, Loader=_Loader):
            if isinstance(event, yaml.AliasEvent) and event.start_mark is not None:
                return event.start_mark.line + 1
    except yaml.YAMLError:
        return None
    return None


def read_yaml(path: Path, shown: str) -> tuple[Any, list[Problem]]:
    """Parse one file; on failure return (None, [one problem]) and never raise."""

    def fail(line: int, message: str) -> tuple[None, list[Problem]]:
        return None, [Problem(shown, line, "error", message)]

    try:
        data = read_bounded(path, MAX_BYTES)
    except TooLarge as exc:
        return fail(1, f"file is {exc.size / 1e6:.1f} MB; a tree file may be at most "
                       f"{MAX_BYTES // (1024 * 1024)} MB")
    except OSError as exc:
        return fail(1, f"cannot read: {exc.strerror or exc}")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        return fail(line, f"not UTF-8: byte 0x{data[exc.start]:02x} cannot be decoded")
    if not text.strip():
        return fail(1, "file is empty")
    try:
        node = yaml.compose(text, Loader=_Loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        problem = exc.problem or "invalid YAML"
        lines = text.splitlines()
        if mark and mark.line < len(lines) and "\t" in lines[mark.line]:
            problem += " (a tab: YAML indentation must use spaces)"
        return fail(line, f"YAML syntax: {problem}")
    except yaml.YAMLError as exc:
        return fail(1, f"YAML syntax: {str(exc).splitlines()[0]}")
    except RecursionError:
        return fail(1, "YAML nesting is too deep")
    if node is None:
        return fail(1, "file holds no YAML document")
    controls: list[int] = []
    try:
        data = _convert(node, set(), controls)
    except YamlError as exc:
        if exc.message.startswith("anchors"):
            return fail(_first_alias_line(text) or exc.line, exc.message)
        return fail(exc.line, exc.message)
    except RecursionError:
        return fail(1, "YAML nesting is too deep")
    return data, [Problem(shown, line, "error", "control character in the text (an escape "
                          "sequence?); it is shown as a visible escape")
                  for line in sorted(set(controls))]
