"""Evaluate a question's probe rules against facts and say which answer they suggest, and why.

Rules are data (`fact OP value`) compared here with plain operators: no tree ever runs code.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from typing import Any

from trainmedic.trees.model import Question, Rule

_COMPARE: dict[str, Callable[[Any, Any], Any]] = {  # Any: operator's own signatures
    "==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
    ">": operator.gt, ">=": operator.ge,
}


def evaluate(rule: Rule, facts: Mapping[str, object]) -> bool | None:
    """True/False, or None when the fact is missing or cannot be compared."""
    if rule.fact not in facts:
        return None
    actual = facts[rule.fact]
    if actual is None:
        return None
    try:
        if rule.op == "contains":
            if isinstance(actual, str):
                return str(rule.value).lower() in actual.lower()
            if isinstance(actual, list | tuple | set):
                return rule.value in actual or str(rule.value) in {str(v) for v in actual}
            return None
        if isinstance(actual, str) and isinstance(rule.value, str):
            return bool(_COMPARE[rule.op](actual.lower(), rule.value.lower()))
        return bool(_COMPARE[rule.op](actual, rule.value))
    except TypeError:
        return None


def _show(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value == "":
        return "(empty)"
    return str(value)


_OP_WORDS = {"==": "", "!=": "not ", "<": "below ", "<=": "at most ", ">": "above ",
             ">=": "at least ", "contains": "contains "}


def in_words(rule: Rule, actual: object) -> str:
    """A rule that held, for people: `gpu: max memory fraction 0.99 (at least 0.95)`, not
    `gpu.max_memory_fraction = 0.99 (>= 0.95)`."""
    fact = rule.fact_name.replace("_", " ")
    line = f"{rule.probe}: {fact} {_show(actual)}"
    if rule.op != "==" or _show(actual) != _show(rule.value):
        line += f" ({_OP_WORDS[rule.op]}{_show(rule.value)})"
    return line


def suggest(
    question: Question,
    facts: Mapping[str, object],
    evidence: Mapping[str, str] | None = None,
) -> tuple[int | None, list[str]]:
    """The first answer whose rules all hold, and the evidence lines behind it.

    `evidence` maps a fact (`gpu.max_memory_fraction`) to a human line from its probe
    ("GPU 3: 79.4 of 80.0 GiB used"); without one the rule is said in words (`in_words`).
    """
    for index, answer in enumerate(question.answers):
        if not answer.when:
            continue
        results = [evaluate(rule, facts) for rule in answer.when]
        if all(r is True for r in results):
            lines = []
            for rule in answer.when:
                human = (evidence or {}).get(rule.fact)  # the probe's own words come first
                lines.append(human or in_words(rule, facts[rule.fact]))
            if answer.because:
                lines.append(str(answer.because))
            return index, lines
    return None, []
