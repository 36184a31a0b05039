"""A fix, laid out once for every front end: the app's fix screen and browse, `--plain`, the
Markdown runbook.

Each front end used to walk the `Fix` itself and each kept a different subset (one listed the
references, one the source, one printed the danger marks). `fix_view` decides what a fix shows
and in which order; the front ends only draw it:

    title, target (framework and versions, once), why, "from your log" (values and the exact
    command triage built), steps (each: text, step target if it differs, mark, command),
    verify, myth, references, source.

Steps come right after the why: at 3 a.m. they are what is read; the myth (a remedy that does
not work) follows them.

Commands come as the reader copies them: placeholders (`<GPU_INDEX>`) the walk knows from its
log triage are filled in, and the copy keys (1-9) are numbered here, so the number beside a
command is the same in every view. Plain data only: nothing here draws.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from trainmedic.trees.danger import mark_line
from trainmedic.trees.spec import PLACEHOLDER_RE

if TYPE_CHECKING:
    from trainmedic.trees.model import Fix, Step, Target
    from trainmedic.triage.known import KnownFromLog, KnownValue
    from trainmedic.walk import WalkSession

COPY_KEYS = 9  # the app copies the first nine commands with keys 1-9

FRAMEWORK_NAMES = {
    "megatron-lm": "NVIDIA Megatron-LM", "megatron-deepspeed": "Megatron-DeepSpeed",
    "deepspeed": "DeepSpeed", "hf-transformers": "Hugging Face Transformers",
    "hf-accelerate": "Hugging Face Accelerate", "pytorch": "PyTorch", "torchtitan": "torchtitan",
    "nccl": "NCCL", "transformer-engine": "Transformer Engine", "slurm": "Slurm",
}
_OPS = {">=": "≥ ", "<=": "≤ ", "==": "", ">": "> ", "<": "< "}


def versions_text(versions: str) -> str:
    """`>=0.12` -> `≥ 0.12`, `0.10-0.15` -> `0.10 to 0.15`, `>=2.21,<2.24` -> `≥ 2.21, < 2.24`."""
    parts = []
    for item in versions.split(","):
        item = item.strip()
        m = re.fullmatch(r"(>=|<=|==|>|<)?\s*(\S+?)(?:\s*-\s*(\S+))?", item)
        if m is None:
            parts.append(item)
        elif m[3]:
            parts.append(f"{m[2]} to {m[3]}")
        else:
            parts.append(_OPS[m[1] or "=="] + m[2])
    return ", ".join(parts)


def target_text(target: Target) -> str:
    """`NVIDIA Megatron-LM core ≥ 0.12`, `PyTorch ≥ 2.6`, `DeepSpeed`."""
    name = FRAMEWORK_NAMES.get(target.framework, target.framework)
    if not target.versions:
        return name
    core = " core" if target.framework == "megatron-lm" else ""
    return f"{name}{core} {versions_text(target.versions)}"


@dataclass(frozen=True)
class StepView:
    """One step as it is shown: the mark comes before the command, always."""

    number: int  # 1-based position among the steps ("2." in every view)
    do: str
    code: str | None = None  # as copied: known placeholders filled in
    lang: str = "bash"
    key: int | None = None  # the app's copy key (1-9), None past nine
    mark: str | None = None  # `DANGER (kind): effect. Needs ...` before the command
    danger: bool = False  # the mark warns of damage (not only of a right the step needs)
    target: str | None = None  # only when the step is for other software than the fix
    filled: tuple[str, ...] = ()  # placeholders filled from the log, by name
    unfilled: tuple[str, ...] = ()  # placeholders the reader still fills in

    @property
    def marked(self) -> bool:
        return self.mark is not None


@dataclass(frozen=True)
class Reference:
    title: str
    url: str | None = None


@dataclass(frozen=True)
class FromLog:
    """What the walk's log triage fills in: where it read it, the values, ready commands."""

    where: str
    values: tuple[KnownValue, ...] = ()
    commands: tuple[StepView, ...] = ()
    advice: str = ""  # triage's words for the way back (on the fix the finding leads to)


@dataclass(frozen=True)
class FixView:
    ref: str  # "tree#node"
    title: str
    why: str
    target: str | None = None
    from_log: FromLog | None = None
    steps: tuple[StepView, ...] = ()
    verify: str | None = None
    myth: str | None = None
    refs: tuple[Reference, ...] = ()
    source: tuple[str, ...] = field(default_factory=tuple)

    @property
    def commands(self) -> list[StepView]:
        """Every command that has a copy key, in key order (the log's commands first)."""
        log = list(self.from_log.commands) if self.from_log is not None else []
        return [s for s in [*log, *self.steps] if s.key is not None]

    def command(self, key: int) -> StepView | None:
        return next((s for s in self.commands if s.key == key), None)


def fill(code: str, known: KnownFromLog | None) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """`code` with every `<NAME>` the log knows replaced: (code, filled names, names left)."""
    filled: list[str] = []
    unfilled: list[str] = []

    def put(match: re.Match[str]) -> str:
        name = match[0][1:-1]
        value = known.get(name) if known is not None else None
        if value is None:
            if name not in unfilled:
                unfilled.append(name)
            return match[0]
        if name not in filled:
            filled.append(name)
        return value.value

    return PLACEHOLDER_RE.sub(put, code), tuple(filled), tuple(unfilled)


def fix_view(fix: Fix, ref: str, known: KnownFromLog | None = None) -> FixView:
    """The fix at `ref` as every front end shows it; `known`: what the walk's triage found."""
    keys = iter(range(1, COPY_KEYS + 1))
    log_commands: list[StepView] = []
    if known and known.link == ref:
        for i, command in enumerate(known.commands, start=1):
            log_commands.append(StepView(i, command.do, command.code, command.lang,
                                         next(keys, None)))
    own = fix.targets
    steps = []
    used: list[str] = []
    for number, step in enumerate(fix.steps, start=1):
        view = _step(step, number, own, known, next(keys, None) if step.code else None)
        used += [n for n in view.filled if n not in used]
        steps.append(view)
    from_log = None
    if known and (known.link == ref or used):
        values = known.values if known.link == ref else tuple(
            v for v in known.values if v.name in used)
        from_log = FromLog(known.where, values, tuple(log_commands),
                           known.advice if known.link == ref else "")
    return FixView(
        ref=ref, title=str(fix.fix), why=str(fix.why),
        target=target_text(own) if own is not None else None,
        myth=str(fix.myth) if fix.myth else None, from_log=from_log, steps=tuple(steps),
        verify=str(fix.verify) if fix.verify else None,
        refs=tuple(Reference(str(r.title), r.url) for r in fix.refs),
        source=tuple(str(s) for s in fix.source),
    )


def _step(step: Step, number: int, own: Target | None, known: KnownFromLog | None,
          key: int | None) -> StepView:
    code: str | None = None
    filled: tuple[str, ...] = ()
    unfilled: tuple[str, ...] = ()
    if step.code:
        code, filled, unfilled = fill(step.code.rstrip("\n"), known)
    target = step.targets
    return StepView(
        number=number, do=str(step.do), code=code, lang=step.lang or "bash", key=key,
        mark=mark_line(step.danger, step.needs), danger=step.danger is not None,
        target=target_text(target) if target is not None and target != own else None,
        filled=filled, unfilled=unfilled)


def walk_fix_view(session: WalkSession) -> FixView:
    """The fix a walk stands at, filled with what its log triage found."""
    fix = session.fix
    if fix is None:
        raise ValueError(f"{session.current} is a question, not a fix")
    return fix_view(fix, str(session.current), session.known_values())
