"""The tree model: plain dataclasses that remember the file and line they came from.

Front ends, exporters and the walk engine read these; none of them sees YAML.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal


@dataclass(frozen=True)
class Source:
    """Where an object was written, so every message can say `file:line`."""

    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


class Text(str):
    """English text that may carry translations (`{en: ..., zh: ...}` in YAML).

    It *is* the English string, so every consumer can treat it as `str`; the JSON export keeps
    the `translations` (no front end shows them yet).
    """

    translations: dict[str, str]

    def __new__(cls, value: str, translations: dict[str, str] | None = None) -> Text:
        obj = super().__new__(cls, value)
        obj.translations = dict(translations or {})
        return obj


Op = Literal["==", "!=", "<", "<=", ">", ">=", "contains"]
Scalar = bool | int | float | str


@dataclass(frozen=True)
class Rule:
    """`probe.fact OP value`: a declarative condition over one probe fact (never code)."""

    fact: str  # "probe.fact"
    op: Op
    value: Scalar
    src: Source

    @property
    def probe(self) -> str:
        return self.fact.split(".", 1)[0]

    @property
    def fact_name(self) -> str:
        return self.fact.split(".", 1)[1]

    def __str__(self) -> str:
        if isinstance(self.value, bool):
            value = str(self.value).lower()
        elif isinstance(self.value, str):
            value = f'"{self.value}"'
        else:
            value = str(self.value)
        return f"{self.fact} {self.op} {value}"


@dataclass
class Answer:
    text: Text
    goto: str  # "node", "tree-id" or "tree-id#node"
    when: list[Rule] = field(default_factory=list)  # all must hold to suggest this answer
    because: Text | None = None
    src: Source = Source("", 0)


@dataclass(frozen=True)
class Route:
    """Where a signature's match goes instead of its own node, when every condition holds."""

    goto: str  # "node", "tree-id" or "tree-id#node"
    line: str | None = None  # a regex the matched line must match
    near: tuple[str, ...] = ()  # substrings, one on the matched line or just above it
    outcome: str | None = None  # what the signature's hook concluded
    example: str | None = None
    src: Source = Source("", 0)


@dataclass(frozen=True)
class LogSignature:
    """A message in a training log that leads triage to the node it is declared on.

    Data only: `needles` (plain substrings for the prefilter), an optional confirming `match`
    and vetoing `exclude` regex, and the real `examples` lint checks them with. `hook` names
    the program's code for what data cannot express (OOM sizes, Xid details); `derive` names an
    analysis of the whole log instead of needles. `tree` and `node` say where it was declared.
    """

    id: str
    title: Text
    kind: str  # spec.SIG_KINDS
    tree: str
    node: str
    needles: tuple[str, ...] = ()
    match: str | None = None
    exclude: str | None = None
    examples: tuple[str, ...] = ()
    counterexamples: tuple[str, ...] = ()
    weight: float = 5.0
    confidence: float = 0.8
    short: str | None = None
    hook: str | None = None
    derive: str | None = None
    routes: tuple[Route, ...] = ()
    src: Source = Source("", 0)

    @property
    def link(self) -> str:
        return f"{self.tree}#{self.node}"


@dataclass
class Question:
    id: str
    question: Text
    answers: list[Answer]
    help: Text | None = None
    source: list[str] = field(default_factory=list)  # provenance: "seed 000 §11.2"
    src: Source = Source("", 0)
    kind: Literal["question"] = "question"
    signatures: list[LogSignature] = field(default_factory=list)

    @property
    def probes(self) -> list[str]:
        """Probes whose facts any answer's rules read, in first-use order."""
        seen: dict[str, None] = {}
        for answer in self.answers:
            for rule in answer.when:
                seen.setdefault(rule.probe, None)
        return list(seen)


@dataclass(frozen=True)
class Danger:
    """A disruptive command's mark: what it does (`kind`, see `spec.DANGER_KINDS`) and to whom."""

    kind: str
    effect: Text
    src: Source = Source("", 0)


@dataclass(frozen=True)
class Target:
    """The framework (and version range) a fix or step is written for: lint checks its flags
    against that framework's list, for those versions."""

    framework: str
    versions: str | None = None  # e.g. ">=0.12", "0.10-0.15"; None: the list's default range


@dataclass
class Step:
    do: Text
    code: str | None = None
    lang: str = "bash"
    src: Source = Source("", 0)
    danger: Danger | None = None
    needs: list[str] = field(default_factory=list)  # spec.NEEDS: root, slurm-operator, ...

    targets: Target | None = None
    code_line: int = 0  # line of the first line of `code`, so lint can point into it

    @property
    def marked(self) -> bool:
        """True when the step warns before its command (a danger or a privilege it needs)."""
        return self.danger is not None or bool(self.needs)


@dataclass
class Reference:
    title: Text
    url: str | None = None
    src: Source = Source("", 0)


@dataclass
class Fix:
    id: str
    fix: Text  # the title
    why: Text
    steps: list[Step]
    verify: Text | None = None
    myth: Text | None = None
    refs: list[Reference] = field(default_factory=list)
    source: list[str] = field(default_factory=list)
    src: Source = Source("", 0)
    kind: Literal["fix"] = "fix"
    targets: Target | None = None
    signatures: list[LogSignature] = field(default_factory=list)

    @property
    def title(self) -> Text:
        return self.fix


Node = Question | Fix


@dataclass
class Tree:
    id: str
    title: Text
    summary: Text
    start: str
    nodes: dict[str, Node]
    tags: list[str] = field(default_factory=list)
    src: Source = Source("", 0)
    start_src: Source = Source("", 0)

    @property
    def file(self) -> str:
        return self.src.file

    def questions(self) -> list[Question]:
        return [n for n in self.nodes.values() if isinstance(n, Question)]

    def fixes(self) -> list[Fix]:
        return [n for n in self.nodes.values() if isinstance(n, Fix)]

    def signatures(self) -> list[LogSignature]:
        """Every log signature declared on a node of this tree, in file order."""
        return [sig for node in self.nodes.values() for sig in node.signatures]
