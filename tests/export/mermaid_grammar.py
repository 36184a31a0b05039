"""A strict grammar for the Mermaid subset trainmedic's exporter emits, checked in Python.

Stricter than Mermaid itself: every label is a double-quoted string holding only safe characters
and `#name;` / `#123;` entity codes, ids are generated (`q1`, `f1`, `x1`), every edge and class
names defined nodes. If the exporter ever emits something outside this subset, the check fails
even where Node and Mermaid are not installed.
"""

from __future__ import annotations

import re

from trainmedic.export.mermaid import SAFE_CHARS

ID = r"[qfx][1-9][0-9]*"
_SAFE = re.escape("".join(sorted(SAFE_CHARS)))
LABEL = rf'"(?:[{_SAFE}]|#quot;|#[0-9]+;)*"'
NODE = re.compile(rf"^    (?P<id>{ID})(?:\[(?P<box>{LABEL})\]|\(\[(?P<fix>{LABEL})\]\)"
                  rf"|\{{\{{(?P<hex>{LABEL})\}}\}})$")
EDGE = re.compile(rf"^    (?P<src>{ID}) -->\|(?P<label>{LABEL})\| (?P<dst>{ID})$")
CLASSDEF = re.compile(r"^    classDef (?P<name>[a-z]+) fill:#[0-9a-f]{6},stroke:#[0-9a-f]{6},"
                      r"color:#[0-9a-f]{6}$")
CLASS = re.compile(rf"^    class (?P<ids>{ID}(?:,{ID})*) (?P<name>[a-z]+)$")
ENTITY = re.compile(r"#(quot|[0-9]+);")


def decode(label: str) -> str:
    """The text a label shows (entities decoded), without its quotes."""
    return ENTITY.sub(lambda m: '"' if m[1] == "quot" else chr(int(m[1])), label[1:-1])


def check(diagram: str) -> list[str]:
    """Problems as `line N: message`; empty when the diagram is in the grammar."""
    lines = diagram.split("\n")
    problems: list[str] = []
    if lines[-1] != "":
        problems.append("diagram does not end with a newline")
    lines = lines[:-1] if lines[-1] == "" else lines
    if not lines or lines[0] != "flowchart TD":
        return ["line 1: must be `flowchart TD`"]
    defined: dict[str, int] = {}
    used: list[tuple[int, str]] = []
    classes: set[str] = set()
    class_uses: list[tuple[int, str]] = []
    for number, line in enumerate(lines[1:], start=2):
        if node := NODE.match(line):
            if node["id"] in defined:
                problems.append(f"line {number}: node {node['id']} defined twice")
            defined[node["id"]] = number
            shape = "box" if node["box"] else "fix" if node["fix"] else "hex"
            if node["id"][0] != {"box": "q", "fix": "f", "hex": "x"}[shape]:
                problems.append(f"line {number}: {node['id']} has the wrong shape")
        elif edge := EDGE.match(line):
            used += [(number, edge["src"]), (number, edge["dst"])]
        elif cdef := CLASSDEF.match(line):
            classes.add(cdef["name"])
        elif cls := CLASS.match(line):
            used += [(number, i) for i in cls["ids"].split(",")]
            class_uses.append((number, cls["name"]))
        else:
            problems.append(f"line {number}: not in the grammar: {line!r}")
    problems += [f"line {n}: {i} is not defined" for n, i in used if i not in defined]
    problems += [f"line {n}: class {c} is not defined" for n, c in class_uses if c not in classes]
    return problems


def labels(diagram: str) -> list[str]:
    """Every label's decoded text, nodes and edges, in order."""
    return [decode(m[0]) for m in re.finditer(LABEL, diagram)]


def node_ids(diagram: str) -> list[str]:
    return [m["id"] for line in diagram.splitlines() if (m := NODE.match(line))]
