"""Build model objects from line-aware YAML data, collecting every problem instead of stopping.

Validation follows the key tables in `spec.py`; whatever is wrong is reported with its line and
the object is still built from what is right, so one typo does not hide the rest of the file.
"""

from __future__ import annotations

import difflib
import math
import re
from pathlib import Path
from typing import Any

from trainmedic.trees import spec
from trainmedic.trees.model import (
    Answer,
    Danger,
    Fix,
    LogSignature,
    Node,
    Question,
    Reference,
    Route,
    Rule,
    Source,
    Step,
    Target,
    Text,
    Tree,
)
from trainmedic.trees.problems import Problem
from trainmedic.trees.yamlsafe import LList, LMap, read_yaml

_TYPE_NAMES = {
    str: "a string", int: "a number", float: "a number", bool: "true/false",
    type(None): "empty", LMap: "a mapping", LList: "a list", dict: "a mapping", list: "a list",
}


def _type_name(value: Any) -> str:
    return _TYPE_NAMES.get(type(value), type(value).__name__)


class _Builder:
    def __init__(self, shown: str) -> None:
        self.file = shown
        self.problems: list[Problem] = []
        self.tree_id = ""  # known before the nodes are built; signatures carry it

    def error(self, line: int, message: str) -> None:
        self.problems.append(Problem(self.file, line, "error", message))

    def warning(self, line: int, message: str) -> None:
        self.problems.append(Problem(self.file, line, "warning", message))

    # -- generic key checking -------------------------------------------------------------

    def check_keys(self, data: LMap, keys: tuple[spec.Key, ...], what: str) -> None:
        allowed = {k.name for k in keys}
        for key in data:
            if key not in allowed:
                close = difflib.get_close_matches(key, sorted(allowed), n=1)
                hint = f" (did you mean '{close[0]}'?)" if close else ""
                self.error(
                    data.key_lines[key],
                    f"unknown key '{key}' in {what}{hint}; allowed: {', '.join(sorted(allowed))}",
                )
        for k in keys:
            if k.required and k.name not in data:
                self.error(data.line, f"{what} is missing required key '{k.name}'")

    def line_of(self, data: LMap, key: str) -> int:
        return data.key_lines.get(key, data.line)

    def text(self, data: LMap, key: str, what: str) -> Text | None:
        if key not in data:
            return None
        value, line = data[key], self.line_of(data, key)
        if isinstance(value, str):
            if not value.strip():
                self.error(line, f"'{key}' of {what} is empty")
            return Text(value.strip())
        if isinstance(value, LMap):
            bad = [lang for lang, t in value.items() if not isinstance(t, str)]
            if bad:
                self.error(line, f"translation '{bad[0]}' of '{key}' in {what} must be text")
                return None
            if "en" not in value:
                self.error(line, f"'{key}' of {what} has translations but no 'en' text")
                return None
            return Text(value["en"].strip(), {k: v.strip() for k, v in value.items()})
        self.error(line, f"'{key}' of {what} must be text, not {_type_name(value)}")
        return None

    def string(self, data: LMap, key: str, what: str) -> str | None:
        if key not in data:
            return None
        value = data[key]
        if isinstance(value, str):
            return value
        self.error(self.line_of(data, key),
                   f"'{key}' of {what} must be a string, not {_type_name(value)}")
        return None

    def strings(self, data: LMap, key: str, what: str) -> list[str]:
        if key not in data:
            return []
        value = data[key]
        if isinstance(value, str):
            return [value]
        if isinstance(value, LList) and all(isinstance(v, str) for v in value):
            return list(value)
        self.error(self.line_of(data, key),
                   f"'{key}' of {what} must be a string or a list of strings")
        return []

    def ident(self, data: LMap, key: str, what: str) -> str | None:
        value = data.get(key)
        if key not in data:
            return None
        if not isinstance(value, str) or not spec.ID_RE.match(value):
            self.error(self.line_of(data, key),
                       f"'{key}' of {what} must be an id ({spec.KINDS['id']}), got {value!r}")
            return None
        return value

    def items(self, data: LMap, key: str, what: str) -> list[tuple[LMap, int]]:
        """The list under `key`, each item checked to be a mapping."""
        if key not in data:
            return []
        value = data[key]
        line = self.line_of(data, key)
        if not isinstance(value, LList):
            self.error(line, f"'{key}' of {what} must be a list, not {_type_name(value)}")
            return []
        out = []
        for item, item_line in zip(value, value.item_lines, strict=True):
            if isinstance(item, LMap):
                out.append((item, item_line))
            else:
                kind = _type_name(item)
                self.error(item_line,
                           f"each item of '{key}' in {what} must be a mapping, not {kind}")
        return out

    # -- objects ---------------------------------------------------------------------------

    def rules(self, data: LMap, what: str) -> list[Rule]:
        if "when" not in data:
            return []
        value, line = data["when"], self.line_of(data, "when")
        if isinstance(value, str):
            entries = [(value, line)]
        elif isinstance(value, LList):
            entries = list(zip(value, value.item_lines, strict=True))
        else:
            self.error(line, f"'when' of {what} must be a rule or a list of rules")
            return []
        rules = []
        for entry, entry_line in entries:
            rule = parse_rule(entry, Source(self.file, entry_line))
            if isinstance(rule, str):
                self.error(entry_line, rule)
            else:
                rules.append(rule)
        return rules

    def danger(self, step: LMap, step_what: str) -> Danger | None:
        """`danger: {kind, effect}`: what a disruptive command does, in one line."""
        if "danger" not in step:
            return None
        data, line = step["danger"], self.line_of(step, "danger")
        what = f"the danger mark of {step_what}"
        if not isinstance(data, LMap):
            self.error(line, f"'danger' of {step_what} must be a mapping like "
                             f"{{kind: reboot, effect: ...}}, not {_type_name(data)}")
            return None
        self.check_keys(data, spec.DANGER_KEYS, what)
        kind = data.get("kind")
        if "kind" in data and kind not in spec.DANGER_KINDS:
            close = difflib.get_close_matches(str(kind), list(spec.DANGER_KINDS), n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            self.error(self.line_of(data, "kind"), f"'kind' of {what} is {kind!r}{hint}; "
                                                   f"one of: {', '.join(spec.DANGER_KINDS)}")
            return None
        effect = self.text(data, "effect", what)
        if effect is not None and "\n" in effect:
            self.warning(self.line_of(data, "effect"), f"'effect' of {what} should be one line")
        if not isinstance(kind, str) or effect is None:
            return None
        return Danger(kind, effect, Source(self.file, line))

    def needs(self, step: LMap, step_what: str) -> list[str]:
        """`needs: root` or `needs: [root, drained-node]`, each one of `spec.NEEDS`."""
        needs = self.strings(step, "needs", step_what)
        known = [n for n in needs if n in spec.NEEDS]
        for need in needs:
            if need not in spec.NEEDS:
                close = difflib.get_close_matches(need, list(spec.NEEDS), n=1)
                hint = f" (did you mean '{close[0]}'?)" if close else ""
                self.error(self.line_of(step, "needs"), f"'needs' of {step_what} names "
                           f"{need!r}{hint}; one of: {', '.join(spec.NEEDS)}")
        return list(dict.fromkeys(known))

    def answer(self, data: LMap, line: int, node_id: str) -> Answer | None:
        what = f"an answer of node '{node_id}'"
        self.check_keys(data, spec.ANSWER_KEYS, what)
        text = self.text(data, "text", what)
        goto = data.get("goto")
        if "goto" in data and (not isinstance(goto, str) or not spec.GOTO_RE.match(goto)):
            self.error(self.line_of(data, "goto"),
                       f"'goto' of {what} must be {spec.KINDS['goto']}, got {goto!r}")
            goto = None
        rules = self.rules(data, what)
        because = self.text(data, "because", what)
        if because and not rules:
            self.warning(self.line_of(data, "because"), f"'because' of {what} has no 'when' rules")
        if text is None or goto is None:
            return None
        return Answer(text, goto, rules, because, Source(self.file, line))

    def question(self, node_id: str, data: LMap, node_line: int) -> Question:
        what = f"question '{node_id}'"
        self.check_keys(data, spec.QUESTION_KEYS, what)
        answers = []
        raw_answers = self.items(data, "answers", what)
        if "answers" in data and isinstance(data["answers"], LList) and not data["answers"]:
            self.error(self.line_of(data, "answers"), f"{what} has no answers")
        for item, line in raw_answers:
            answer = self.answer(item, line, node_id)
            if answer:
                answers.append(answer)
        if len(raw_answers) > spec.MAX_ANSWERS:
            self.warning(self.line_of(data, "answers"),
                         f"{what} has {len(raw_answers)} answers; only 1-9 get a number key")
        seen: dict[str, int] = {}
        for answer in answers:
            key = answer.text.lower()
            if key in seen:
                self.warning(answer.src.line,
                             f"{what} repeats the answer '{answer.text}' (line {seen[key]})")
            seen.setdefault(key, answer.src.line)
        return Question(
            id=node_id,
            question=self.text(data, "question", what) or Text(""),
            answers=answers,
            help=self.text(data, "help", what),
            source=self.strings(data, "source", what),
            src=Source(self.file, node_line),
            signatures=self.signatures(data, node_id),
        )

    def fix(self, node_id: str, data: LMap, node_line: int) -> Fix:
        what = f"fix '{node_id}'"
        self.check_keys(data, spec.FIX_KEYS, what)
        steps = []
        if "steps" in data and isinstance(data["steps"], LList) and not data["steps"]:
            self.error(self.line_of(data, "steps"), f"{what} has no steps")
        for item, line in self.items(data, "steps", f"{what}"):
            step_what = f"a step of fix '{node_id}'"
            self.check_keys(item, spec.STEP_KEYS, step_what)
            do = self.text(item, "do", step_what)
            code = self.string(item, "code", step_what)
            lang = self.string(item, "lang", step_what) or "bash"
            if lang not in spec.LANGS:
                self.error(self.line_of(item, "lang"),
                           f"'lang' of {step_what} must be one of {', '.join(spec.LANGS)}")
            if code is not None and not code.strip():
                self.error(self.line_of(item, "code"), f"'code' of {step_what} is empty")
                code = None
            danger = self.danger(item, step_what)
            needs = self.needs(item, step_what)
            if (danger or needs) and code is None and "code" not in item:
                key = "danger" if danger else "needs"
                self.warning(self.line_of(item, key),
                             f"'{key}' of {step_what} marks a step that has no 'code'")
            if do is not None:
                steps.append(Step(do, code.rstrip("\n") if code else None, lang,
                                  Source(self.file, line), danger, needs,
                                  targets=self.targets(item, step_what),
                                  code_line=item.value_lines.get("code", 0)))
        refs = []
        for item, line in self.items(data, "refs", what):
            self.check_keys(item, spec.REF_KEYS, f"a reference of fix '{node_id}'")
            title = self.text(item, "title", f"a reference of fix '{node_id}'")
            if title is not None:
                refs.append(Reference(title, self.string(item, "url", "a reference"),
                                      Source(self.file, line)))
        return Fix(
            id=node_id,
            fix=self.text(data, "fix", what) or Text(""),
            why=self.text(data, "why", what) or Text(""),
            steps=steps,
            verify=self.text(data, "verify", what),
            myth=self.text(data, "myth", what),
            refs=refs,
            source=self.strings(data, "source", what),
            src=Source(self.file, node_line),
            targets=self.targets(data, what),
            signatures=self.signatures(data, node_id),
        )

    # -- log signatures ---------------------------------------------------------------------

    def signatures(self, data: LMap, node_id: str) -> list[LogSignature]:
        out = []
        for item, line in self.items(data, "signatures", f"node '{node_id}'"):
            sig = self.signature(item, line, node_id)
            if sig is not None:
                out.append(sig)
        return out

    def regex(self, data: LMap, key: str, what: str) -> str | None:
        """A pattern that compiles (Python `re`); the error says where it failed."""
        pattern = self.string(data, key, what)
        if pattern is None:
            return None
        try:
            re.compile(pattern)
        except re.error as exc:
            self.error(self.line_of(data, key),
                       f"'{key}' of {what} is not a valid regular expression: {exc}")
            return None
        return pattern

    def number(self, data: LMap, key: str, what: str, default: float, *,
               fraction: bool = False) -> float:
        if key not in data:
            return default
        raw = data[key]
        try:
            # YAML reads `yes`/`true` as a boolean, which float() would take as 1.0
            value = float("nan") if isinstance(raw, bool) else float(raw)
        except (TypeError, ValueError):
            value = float("nan")
        if not math.isfinite(value):
            self.error(self.line_of(data, key), f"'{key}' of {what} must be a number, not "
                                                f"{_shown(raw)}")
            return default
        if fraction and not 0.0 <= value <= 1.0:
            self.error(self.line_of(data, key), f"'{key}' of {what} must be between 0 and 1, "
                                                f"not {value:g}")
            return default
        return value

    def signature(self, data: LMap, line: int, node_id: str) -> LogSignature | None:
        sig_id = self.ident(data, "id", f"a signature of node '{node_id}'")
        what = f"signature '{sig_id}'" if sig_id else f"a signature of node '{node_id}'"
        self.check_keys(data, spec.SIGNATURE_KEYS, what)
        kind = data.get("kind")
        if "kind" in data and kind not in spec.SIG_KINDS:
            self.error(self.line_of(data, "kind"),
                       f"'kind' of {what} is {kind!r}; one of: {', '.join(spec.SIG_KINDS)}")
            kind = None
        needles = self.strings(data, "needles", what)
        derive = self.ident(data, "derive", what)
        examples = self.strings(data, "example", what)
        if needles and derive:
            self.error(self.line_of(data, "derive"),
                       f"{what} has both 'needles' and 'derive'; it is one or the other")
        elif not needles and not derive:
            self.error(line, f"{what} needs 'needles' (the messages it looks for), or 'derive'")
        if needles and not examples:
            self.error(line, f"{what} has no 'example': give a real log line it recognises")
        for needle in needles:
            if len(needle) < spec.MIN_NEEDLE or "\n" in needle:
                self.error(self.line_of(data, "needles"),
                           f"needle {needle!r} of {what} must be one line of at least "
                           f"{spec.MIN_NEEDLE} characters (short needles stop the prefilter "
                           "on most lines)")
        match = self.regex(data, "match", what)
        exclude = self.regex(data, "exclude", what)
        broken = ("match" in data and match is None) or ("exclude" in data and exclude is None)
        routes = tuple(r for r in (self.route(item, item_line, what)
                                   for item, item_line in self.items(data, "routes", what))
                       if r is not None)
        title = self.text(data, "title", what)
        if sig_id is None or title is None or kind is None or broken:
            return None  # reported above; a half-read signature would match the wrong lines
        return LogSignature(
            id=sig_id, title=title, kind=kind, tree=self.tree_id, node=node_id,
            needles=tuple(n for n in needles if len(n) >= spec.MIN_NEEDLE),
            match=match, exclude=exclude, examples=tuple(examples),
            counterexamples=tuple(self.strings(data, "counterexample", what)),
            weight=self.number(data, "weight", what, 5.0),
            confidence=self.number(data, "confidence", what, 0.8, fraction=True),
            short=self.string(data, "short", what), hook=self.ident(data, "hook", what),
            derive=derive, routes=routes, src=Source(self.file, line),
        )

    def route(self, data: LMap, line: int, sig_what: str) -> Route | None:
        what = f"a route of {sig_what}"
        self.check_keys(data, spec.ROUTE_KEYS, what)
        goto = data.get("goto")
        if "goto" in data and (not isinstance(goto, str) or not spec.GOTO_RE.match(goto)):
            self.error(self.line_of(data, "goto"),
                       f"'goto' of {what} must be {spec.KINDS['goto']}, got {goto!r}")
            return None
        conditions = [k for k in ("line", "near", "outcome") if k in data]
        if not conditions:
            self.error(line, f"{what} has no condition: give 'line', 'near' or 'outcome'")
        pattern = self.regex(data, "line", what)
        for needle in self.strings(data, "near", what):
            if len(needle) < spec.MIN_NEEDLE:
                self.error(self.line_of(data, "near"), f"'near' text {needle!r} of {what} must "
                           f"be at least {spec.MIN_NEEDLE} characters")
        if not isinstance(goto, str) or ("line" in data and pattern is None) or not conditions:
            return None
        return Route(goto=goto, line=pattern, near=tuple(self.strings(data, "near", what)),
                     outcome=self.ident(data, "outcome", what),
                     example=self.string(data, "example", what), src=Source(self.file, line))

    def targets(self, data: LMap, what: str) -> Target | None:
        """`targets: megatron-lm` or `targets: {framework: megatron-lm, versions: ">=0.12"}`."""
        if "targets" not in data:
            return None
        value, line = data["targets"], self.line_of(data, "targets")
        if isinstance(value, str):
            value = {"framework": value}
        elif isinstance(value, LMap):
            keys = (spec.Key("framework", "string", True, ""),
                    spec.Key("versions", "string", False, ""))
            self.check_keys(value, keys, f"'targets' of {what}")
        else:
            self.error(line, f"'targets' of {what} must be {spec.KINDS['targets']}")
            return None
        framework, versions = value.get("framework"), value.get("versions")
        if framework is None:
            return None
        if framework not in spec.FRAMEWORKS:
            close = difflib.get_close_matches(str(framework), spec.FRAMEWORKS, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            self.error(line, f"unknown framework '{framework}' in 'targets' of {what}{hint}; "
                             f"known: {', '.join(spec.FRAMEWORKS)}")
            return None
        if versions is not None and (not isinstance(versions, str)
                                     or not spec.VERSIONS_RE.match(versions)):
            self.error(line, f"cannot read versions {versions!r} in 'targets' of {what}: write "
                             "e.g. '>=0.12', '0.10-0.15' or '>=2.21,<2.24'")
            versions = None
        return Target(framework, versions)

    def node(self, node_id: str, data: Any, line: int) -> Node | None:
        if not spec.ID_RE.match(node_id):
            self.error(line, f"node id '{node_id}' must be {spec.KINDS['id']}")
        if not isinstance(data, LMap):
            self.error(line, f"node '{node_id}' must be a mapping, not {_type_name(data)}")
            return None
        if "question" in data and "fix" in data:
            self.error(line, f"node '{node_id}' has both 'question' and 'fix'; it must be one")
            data = LMap({k: v for k, v in data.items() if k != "fix"})
            data.line, data.key_lines, data.value_lines = line, {}, {}
        if "question" in data:
            return self.question(node_id, data, line)
        if "fix" in data:
            return self.fix(node_id, data, line)
        self.error(line, f"node '{node_id}' needs a 'question' or a 'fix' key")
        return None

    def tree(self, data: Any) -> Tree | None:
        if not isinstance(data, LMap):
            line = getattr(data, "line", 1)
            self.error(line, f"a tree file must hold a mapping, not {_type_name(data)}")
            return None
        self.check_keys(data, spec.TREE_KEYS, "the tree")
        tree_id = self.ident(data, "id", "the tree")
        self.tree_id = tree_id or ""
        start = self.ident(data, "start", "the tree")
        nodes: dict[str, Node] = {}
        raw_nodes = data.get("nodes")
        if "nodes" in data:
            if not isinstance(raw_nodes, LMap):
                kind = _type_name(raw_nodes)
                self.error(self.line_of(data, "nodes"),
                           f"'nodes' must be a mapping of node id to node, not {kind}")
            else:
                if not raw_nodes:
                    self.error(self.line_of(data, "nodes"), "'nodes' is empty")
                for node_id, node_data in raw_nodes.items():
                    node = self.node(node_id, node_data, raw_nodes.key_lines[node_id])
                    if node is not None:
                        nodes[node_id] = node
        if tree_id is None:
            return None
        return Tree(
            id=tree_id,
            title=self.text(data, "title", "the tree") or Text(tree_id),
            summary=self.text(data, "summary", "the tree") or Text(""),
            start=start or "",
            nodes=nodes,
            tags=self.strings(data, "tags", "the tree"),
            src=Source(self.file, self.line_of(data, "id")),
            start_src=Source(self.file, self.line_of(data, "start")),
        )


def _parse_value(text: str) -> spec_scalar:
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


spec_scalar = bool | int | float | str


def parse_rule(entry: Any, src: Source) -> Rule | str:
    """Parse `probe.fact OP value`; a string result is the error message."""
    if not isinstance(entry, str):
        example = "gpu.max_memory_fraction >= 0.95"
        return f"a rule must be text like '{example}', not {_type_name(entry)}"
    match = spec.RULE_RE.match(entry)
    if not match:
        return (f"cannot read rule {entry!r}: write 'probe.fact OP value' with OP one of "
                f"{' '.join(spec.OPS)}")
    # RULE_RE matches only the operators of spec.OPS, which are the values of the Op type
    return Rule(match["fact"], match["op"], _parse_value(match["value"]), src)  # type: ignore[arg-type]


def load_tree_file(path: Path, shown: str | None = None) -> tuple[Tree | None, list[Problem]]:
    """Load one tree file; problems are returned, never raised."""
    shown = shown or str(path)
    data, problems = read_yaml(path, shown)
    if data is None:
        return None, problems
    builder = _Builder(shown)
    builder.problems.extend(problems)  # control characters: the tree is built from inert text
    tree = builder.tree(data)
    return tree, builder.problems


def _shown(value: object) -> str:
    """A bad value in one short line of an error message."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
