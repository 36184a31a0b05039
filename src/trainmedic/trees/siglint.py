"""Lint of the log signatures declared on tree nodes.

Every signature is checked where it is written: its id is unique, its regular expressions are
safe on very long lines, its own example lines are recognised (and its counter-examples are
not), its hook and its analysis exist, and every node it or its routes lead to exists in the
loaded forest. A user tree that replaces a built-in one inherits the built-in's signatures; when
it drops a node one of them leads to, the error points at the replacement and names the
signature.

The hooks and analyses are the triage program's; lint gets their names passed in (the model
never imports the engine), as it gets the probes' facts.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from trainmedic.trees.forest import Forest
from trainmedic.trees.model import LogSignature, Route
from trainmedic.trees.problems import Problem

# the regex parser (Python 3.11+): a pattern as a tree of operations
_sre: Any = importlib.import_module("re._parser")

_REPEATS = {_sre.MAX_REPEAT, _sre.MIN_REPEAT}
_UNBOUNDED = _sre.MAXREPEAT
# what a wildcard repeat runs over: `.` (a negated class such as `[^)]*` stops at its own
# terminator and is the usual safe idiom)
_WIDE = {_sre.ANY}


@dataclass(frozen=True)
class Hooks:
    """What the triage program offers signatures: hook name -> the outcomes it can conclude,
    and the names of its whole-log analyses (`derive`)."""

    outcomes: Mapping[str, frozenset[str]]
    derived: frozenset[str]


def regex_risk(pattern: str) -> str | None:
    """Why `pattern` could take minutes on one long line, or None.

    Structural, so it costs nothing: a quantifier over something that itself repeats (`(a+)+`,
    `(\\w+\\s?)*`) backtracks exponentially; a leading unbounded `.*` makes every search
    quadratic in the line length (a search finds a match anywhere without it).
    """
    try:
        parsed = _sre.parse(pattern)
    except re.error:
        return None  # the loader reports it
    items = list(parsed)
    if items and items[0][0] in _REPEATS:
        _lo, hi, sub = items[0][1]
        if hi == _UNBOUNDED and len(sub) == 1 and sub[0][0] in (_sre.ANY, _sre.IN):
            return ("it starts with an unbounded wildcard (like '.*'), which makes a search "
                    "quadratic on long lines; drop it (a search finds the match anywhere)")
    for branch in _branches(items):
        if not (branch and branch[0] == (_sre.AT, _sre.AT_BEGINNING)) and _wild_then_more(
                branch, more=False):
            return ("an unbounded wildcard followed by more pattern (like 'a.*b') is tried from "
                    "every place the line could start a match, which is quadratic on a long "
                    "line: anchor the branch ('^(?=.*a).*b') or list plain words instead")
    nested = _nested_repeat(parsed, inside=False)
    if nested:
        return ("a repeated group holds another repeat (like '(a+)+'), which backtracks "
                "exponentially on a long line that almost matches; make the inner part fixed-"
                "width or the outer one bounded")
    if _ambiguous_repeat(items, inside=False):
        return ("a repeated group holds alternatives that can start alike (like '(a|a)*'), "
                "which backtracks exponentially on a long line that almost matches; make the "
                "alternatives start differently or use a character class")
    return None


def _branches(items: list) -> list[list]:
    """The top-level alternatives of a pattern (the pattern itself when it has none)."""
    if len(items) == 1 and items[0][0] == _sre.BRANCH:
        return [list(b) for b in items[0][1][1]]
    return [items]


def _wild_then_more(items: list, *, more: bool) -> bool:
    """An unbounded `.` repeat that more pattern follows, in `items` or (`more`) after them:
    `x(.*)y` and `(?:.*)?c` hide the wildcard in a group."""
    for i, (op, arg) in enumerate(items):
        after = more or i + 1 < len(items)
        children: list = []
        if op in _REPEATS:
            _lo, hi, sub = arg
            if hi == _UNBOUNDED and len(sub) == 1 and sub[0][0] in _WIDE and after:
                return True
            children = [sub]
            after = after or hi > 1  # a repeated group is followed by itself
        elif op == _sre.SUBPATTERN:
            children = [arg[-1]]
        elif op == _sre.BRANCH:
            children = list(arg[1])
        if any(_wild_then_more(list(child), more=after) for child in children):
            return True
    return False


# ---- alternatives that start alike, under a repeat -------------------------------------------
_EMPTY = -1  # "can match nothing": two such alternatives are ambiguous too
_ALL = frozenset(range(257))  # 0-255, and 256 for every character above
_CATEGORIES = {"CATEGORY_DIGIT": r"\d", "CATEGORY_NOT_DIGIT": r"\D", "CATEGORY_SPACE": r"\s",
               "CATEGORY_NOT_SPACE": r"\S", "CATEGORY_WORD": r"\w", "CATEGORY_NOT_WORD": r"\W"}


def _ambiguous_repeat(items, *, inside: bool) -> bool:
    """A BRANCH under an unbounded repeat whose alternatives can start with the same character
    (or can both match nothing): the engine tries every way to split a run between them."""
    for op, arg in items:
        if op in _REPEATS:
            _lo, hi, sub = arg
            if _ambiguous_repeat(sub, inside=inside or hi == _UNBOUNDED):
                return True
            continue
        if op == _sre.BRANCH:
            if inside and _overlap([_first(list(b)) for b in arg[1]]):
                return True
            children = list(arg[1])
        elif op == _sre.SUBPATTERN:
            children = [arg[-1]]
        elif op in (_sre.ASSERT, _sre.ASSERT_NOT):
            children = [arg[1]]
        else:
            continue
        if any(_ambiguous_repeat(child, inside=inside) for child in children):
            return True
    return False


def _overlap(firsts: list[frozenset[int]]) -> bool:
    seen: set[int] = set()
    for first in firsts:
        if seen & first:
            return True
        seen |= first
    return False


def _first(items: list) -> frozenset[int]:
    """The characters a match of `items` can start with (`_EMPTY`: it can match nothing);
    anything not understood counts as every character."""
    out: set[int] = set()
    for op, arg in items:
        if op in (_sre.AT, _sre.ASSERT, _sre.ASSERT_NOT):
            continue  # zero-width
        if op == _sre.LITERAL:
            return frozenset(out | {min(arg, 256)})
        if op == _sre.NOT_LITERAL or op == _sre.ANY:
            return _ALL
        if op == _sre.IN:
            return frozenset(out | _class(arg))
        if op == _sre.SUBPATTERN:
            first = _first(list(arg[-1]))
        elif op == _sre.BRANCH:
            first = frozenset().union(*(_first(list(b)) for b in arg[1]))
        elif op in _REPEATS:
            first = _first(list(arg[2])) | ({_EMPTY} if arg[0] == 0 else set())
        else:
            return _ALL
        out |= first - {_EMPTY}
        if _EMPTY not in first:
            return frozenset(out)
    return frozenset(out | {_EMPTY})


def _class(items: list) -> set[int]:
    """The characters (0-255, 256 for the rest) a character class `[...]` admits."""
    chars: set[int] = set()
    negate = False
    for op, arg in items:
        if op == _sre.NEGATE:
            negate = True
        elif op == _sre.LITERAL:
            chars.add(min(arg, 256))
        elif op == _sre.RANGE:
            lo, hi = arg
            chars.update(range(min(lo, 256), min(hi, 256) + 1))
        elif op == _sre.CATEGORY and str(arg) in _CATEGORIES:
            rx = re.compile(_CATEGORIES[str(arg)])
            chars.update(c for c in range(256) if rx.match(chr(c)))
            chars.add(256)
        else:
            return set(_ALL)
    return set(_ALL) - chars if negate else chars


def _nested_repeat(items, *, inside: bool) -> bool:
    for op, arg in items:
        if op in _REPEATS:
            _lo, hi, sub = arg
            many = hi == _UNBOUNDED or hi > 1
            if (many and inside) or _nested_repeat(sub, inside=inside or many):
                return True
            continue
        if op == _sre.SUBPATTERN:
            children = [arg[-1]]
        elif op == _sre.BRANCH:
            children = list(arg[1])
        elif op in (_sre.ASSERT, _sre.ASSERT_NOT):
            children = [arg[1]]
        else:
            continue
        if any(_nested_repeat(child, inside=inside) for child in children):
            return True
    return False


def recognises(sig: LogSignature, line: str) -> bool:
    """The signature's own rule for one line: a needle, the `match`, and no `exclude`."""
    if not any(n in line for n in sig.needles):
        return False
    if sig.match is not None and not re.search(sig.match, line):
        return False
    return not (sig.exclude is not None and re.search(sig.exclude, line))


def check_signatures(forest: Forest, hooks: Hooks | None = None) -> list[Problem]:
    problems: list[Problem] = []
    own_ids: dict[str, LogSignature] = {}
    for tree in forest.trees.values():
        for sig in tree.signatures():
            first = own_ids.get(sig.id)
            if first is not None:
                problems.append(Problem(sig.src.file, sig.src.line, "error",
                                        f"signature id '{sig.id}' is declared twice (also at "
                                        f"{first.src})"))
                continue
            own_ids[sig.id] = sig
            problems += _check_one(forest, sig, hooks, inherited=False)
    own_set = set(own_ids)
    for sig in forest.signatures():
        if sig.id not in own_set:
            problems += _check_one(forest, sig, hooks, inherited=True)
    return problems


def _check_one(forest: Forest, sig: LogSignature, hooks: Hooks | None, *,
               inherited: bool) -> list[Problem]:
    out: list[Problem] = []
    tree = forest.trees.get(sig.tree)
    if inherited:
        # Written in a built-in file the user replaced: only what the replacement broke counts,
        # and the error points at the replacement.
        if tree is None:
            return out
        where = (tree.file, tree.src.line)
        if sig.node not in tree.nodes:
            out.append(Problem(*where, "error",
                               f"built-in signature '{sig.id}' ({sig.src}) leads to "
                               f"'{sig.link}', which this tree no longer has: keep node "
                               f"'{sig.node}', or declare a signature '{sig.id}' here"))
        for route in sig.routes:
            if forest.resolve(sig.tree, route.goto) is None:
                out.append(Problem(*where, "error",
                                   f"built-in signature '{sig.id}' ({route.src}) routes "
                                   f"{_condition(route)} to '{route.goto}', which this tree no "
                                   f"longer has: keep that node, or declare a signature "
                                   f"'{sig.id}' here"))
        return out

    def error(line: int, message: str) -> None:
        out.append(Problem(sig.src.file, line, "error", f"signature '{sig.id}': {message}"))

    for key, pattern in (("match", sig.match), ("exclude", sig.exclude)):
        risk = regex_risk(pattern) if pattern else None
        if risk:
            error(sig.src.line, f"'{key}' is unsafe on long lines: {risk}")
    if sig.needles:
        for example in sig.examples:
            if not recognises(sig, example):
                error(sig.src.line, f"does not recognise its own example {_short(example)}: "
                      f"{_why_not(sig, example)}")
        for example in sig.counterexamples:
            if recognises(sig, example):
                error(sig.src.line, f"recognises its counter-example {_short(example)}")
    if hooks is not None:
        if sig.hook is not None and sig.hook not in hooks.outcomes:
            error(sig.src.line, f"no hook named '{sig.hook}' (hooks: "
                  f"{', '.join(sorted(hooks.outcomes)) or 'none'})")
        if sig.derive is not None and sig.derive not in hooks.derived:
            error(sig.src.line, f"no analysis named '{sig.derive}' (analyses: "
                  f"{', '.join(sorted(hooks.derived)) or 'none'})")
    for route in sig.routes:
        if forest.resolve(sig.tree, route.goto) is None:
            error(route.src.line, f"routes {_condition(route)} to '{route.goto}', which is "
                  f"neither a node of tree '{sig.tree}' nor a tree id with that node")
        if route.line:
            risk = regex_risk(route.line)
            if risk:
                error(route.src.line, f"route 'line' is unsafe on long lines: {risk}")
            if route.example is not None and not re.search(route.line, route.example):
                error(route.src.line, f"route 'line' does not match its example "
                      f"{_short(route.example)}")
        if sig.derive and (route.line or route.near):
            error(route.src.line, "a derived signature has no line: its routes can only use "
                  "'outcome'")
        if route.outcome is not None:
            if sig.hook is None and sig.derive is None:
                error(route.src.line, f"route 'outcome: {route.outcome}' needs a 'hook' that "
                      "concludes it")
            elif hooks is not None:
                known = hooks.outcomes.get(sig.hook or sig.derive or "")
                if known is not None and route.outcome not in known:
                    can = ", ".join(sorted(known)) or "nothing"
                    error(route.src.line, f"'{sig.hook or sig.derive}' never concludes "
                          f"'{route.outcome}' (it concludes: {can})")
    return out


def _condition(route: Route) -> str:
    if route.outcome:
        return f"outcome '{route.outcome}'"
    if route.near:
        return f"near '{route.near[0]}'"
    return "its 'line'"


def _short(text: str) -> str:
    return repr(text if len(text) <= 80 else text[:77] + "...")


def _why_not(sig: LogSignature, line: str) -> str:
    if not any(n in line for n in sig.needles):
        return "it holds none of the needles"
    if sig.match is not None and not re.search(sig.match, line):
        return "'match' does not match it"
    return "'exclude' vetoes it"
