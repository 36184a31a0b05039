"""Check the flags, environment variables and DeepSpeed keys in trees against the real APIs.

A fix (or one of its steps) may declare `targets: {framework: megatron-lm, versions: ">=0.12"}`.
Without it, a command that runs a Megatron entry point (`pretrain_*.py`), a `GPT_ARGS=`-style
variable, or a line of bare `--flags` is taken as Megatron-LM at the default versions of the
list (core 0.10-0.15). Every `NCCL_*`, `TORCH_NCCL_*`, `TORCH_FR_*`, `TORCH_DISTRIBUTED_*`,
`PYTORCH_*ALLOC*` and `NVTE_*` name in any text must be one a library reads; a name that only
circulates as a myth is fine in prose but not in a command, unless the node's `myth:` names it
(text in `myth:` itself is never checked) or the command `unset`s it. The lists load on first use.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import Literal

from trainmedic.trees import apilists
from trainmedic.trees.apilists import Version, VersionRange, show_version
from trainmedic.trees.forest import Forest
from trainmedic.trees.model import Fix, Question, Step, Target, Tree
from trainmedic.trees.problems import Problem

ENV_RE = re.compile(
    r"(?<![A-Za-z0-9_])(?:(?:NCCL|TORCH_NCCL|TORCH_FR|TORCH_DISTRIBUTED|NVTE)_[A-Z0-9_]*[A-Z0-9]"
    r"|PYTORCH_[A-Z0-9_]*ALLOC[A-Z0-9_]*)(?![A-Za-z0-9_*])")
FLAG_RE = re.compile(r"(?<![\w-])--[A-Za-z][A-Za-z0-9_-]*")
VALUE_RE = re.compile(r"(?:=|\s+)(?!-)([^\s\\]+)")
ENTRY_RE = re.compile(r"(?:pretrain_\w+|report_theoretical_memory)\.py\b")
ARGS_VAR_RE = re.compile(
    r"^\s*(?:export\s+)?(?:GPT_ARGS|GPT_MODEL_ARGS|BERT_ARGS|T5_ARGS|MEGATRON_ARGS|MODEL_ARGS|"
    r"MODEL_PARALLEL_ARGS|TRAINING_ARGS|DATA_ARGS|EVAL_AND_LOGGING_ARGS|OUTPUT_ARGS|MLM_ARGS)"
    r"\+?=\s*([(\"']?)")
DS_MARKERS = ('"zero_optimization"', '"offload_optimizer"', '"offload_param"',
              '"train_micro_batch_size_per_gpu"', '"train_batch_size"')
DS_TOKEN_RE = re.compile(r'"([A-Za-z_][A-Za-z0-9_]*)"\s*:\s*(\{)?|\{|\}')
SHELL_LANGS = ("bash", "text", "console")
FLAG_LISTS = ("megatron-lm", "megatron-deepspeed")
# A text without any of these holds no variable this module checks: a cheap test first (and
# cheaper still: every one holds "_", which most prose does not).
_ENV_HINTS = ("NCCL_", "TORCH_", "NVTE_", "PYTORCH_")


def _may_name_env(text: str) -> bool:
    return "_" in text and any(h in text for h in _ENV_HINTS)


@dataclass(frozen=True)
class Context:
    """Which flag list applies, for which versions, and who said so (for the messages)."""

    framework: str
    versions: VersionRange
    declared_by: str  # "fix", "step" or "" (nothing declared: inferred from the command)
    assumed: bool = False  # versions are the list's default range, not declared

    def describe(self) -> str:
        if not self.assumed:
            return f"this {self.declared_by} targets {self.versions.text}"
        who = f"this {self.declared_by} declares no versions" if self.declared_by else \
            "no targets declared"
        return f"{who}, so core {self.versions.text} is assumed (declare targets: " \
               "{framework, versions})"


def check_apis(forest: Forest) -> list[Problem]:
    problems: list[Problem] = []
    for tree in forest.trees.values():
        problems += _check_tree(tree)
    return problems


def _check_tree(tree: Tree) -> list[Problem]:
    out: list[Problem] = []
    file = tree.file
    out += _prose_env(file, tree.src.line, str(tree.summary), "")
    for node in tree.nodes.values():
        if isinstance(node, Question):
            line = node.src.line
            prose = [node.question, *(a.text for a in node.answers),
                     *(a.because for a in node.answers if a.because)]
            for text in prose:
                out += _prose_env(file, line, str(text), "")
            if node.help:
                out += _command_env(file, _lines(str(node.help), line, line_known=False), "",
                                    None)
        else:
            out += _check_fix(file, node)
    return out


def _check_fix(file: str, fix: Fix) -> list[Problem]:
    out: list[Problem] = []
    myth = str(fix.myth or "")
    for text in (fix.fix, fix.why, fix.verify):
        if text:
            out += _prose_env(file, fix.src.line, str(text), myth)
    megatron_like = fix.targets is not None and fix.targets.framework == "megatron-lm"
    used: list[tuple[int, str, str]] = []  # every Megatron-LM flag of the fix, with its value
    for step in fix.steps:
        out += _prose_env(file, step.src.line, str(step.do), myth)
        if not step.code:
            continue
        lines = _lines(step.code, step.code_line or step.src.line, line_known=bool(step.code_line))
        out += _command_env(file, lines, myth, fix)
        context = _declared(fix, step)
        if context and context.framework == "nccl" and context.versions.low:
            out += _nccl_versions(file, lines, context)
        if step.lang in SHELL_LANGS and (context is None or context.framework in FLAG_LISTS):
            # every flag starts with "--": a command without one has none to check
            found = list(_megatron_flags(lines)) if "--" in step.code else []
            if found and (context is None or context.framework == "megatron-lm"):
                megatron_like = True
                used += found
            out += _check_flags(file, [(n, f) for n, f, _v in found], context)
        if ('"' in step.code and any(marker in step.code for marker in DS_MARKERS)) or (
                context and context.framework == "deepspeed" and step.lang == "json"):
            out += _deepspeed_keys(file, lines)
    if megatron_like:
        out += _env_conflicts(file, fix)
    out += _requirements(file, used)
    return out


# -- contexts and lines -----------------------------------------------------------------

def _declared(fix: Fix, step: Step) -> Context | None:
    target: Target | None = step.targets or fix.targets
    if target is None:
        return None
    who = "step" if step.targets else "fix"
    if target.versions:
        return Context(target.framework, VersionRange.parse(target.versions), who)
    if target.framework == "megatron-lm":
        return Context(target.framework, apilists.megatron().default_range, who, assumed=True)
    return Context(target.framework, VersionRange("any"), who)


def _lines(text: str, first: int, *, line_known: bool) -> list[tuple[int, str]]:
    """(line number, text) for each physical line; all on `first` when lines are not known."""
    return [(first + i if line_known else first, line) for i, line in enumerate(text.split("\n"))]


def _strip_comment(line: str) -> str:
    if "#" not in line:
        return line
    if line.lstrip().startswith("#"):
        return ""
    return re.split(r"\s#", line, maxsplit=1)[0]


def _until_separator(text: str) -> str:
    """The text up to the first `;`, `|`, `&`, `)`, `<` or `>` outside quotes (one command)."""
    quote = ""
    for i, char in enumerate(text):
        if quote:
            if char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char in ";|&)<>":
            return text[:i]
    return text


def _megatron_flags(lines: list[tuple[int, str]]) -> Iterator[tuple[int, str, str]]:
    """(line, flag, value) for each flag given to a Megatron entry point, an ARGS variable, or on
    a line of bare flags; options of the launcher before `pretrain_*.py` are not Megatron's."""
    entry = False
    closer = ""  # inside GPT_ARGS=( ... ) or GPT_ARGS=" ... "
    continued = False
    for number, raw in lines:
        line = _strip_comment(raw)
        if entry and not continued:
            entry = False
        segment = ""
        if closer:
            end = line.find(closer)
            segment = line if end < 0 else line[:end]
            closer = "" if end >= 0 else closer
        elif entry:
            segment = _until_separator(line)
        elif match := ENTRY_RE.search(line):
            entry = True
            segment = _until_separator(line[match.end():])
        elif match := ARGS_VAR_RE.match(line):
            opener = match.group(1)
            rest = line[match.end():]
            want = {"(": ")", '"': '"', "'": "'"}.get(opener, "")
            if want and want not in rest:
                closer = want
                segment = rest
            else:
                segment = rest.split(want, 1)[0] if want else _until_separator(rest)
        elif line.lstrip().startswith("--") and not continued:
            segment = _until_separator(line)  # bare flags, not the tail of another command
        continued = line.rstrip().endswith("\\")
        for match in FLAG_RE.finditer(segment):
            value = VALUE_RE.match(segment, match.end())
            yield number, match.group(0), value.group(1) if value else ""


# -- flags ----------------------------------------------------------------------------------

def _check_flags(file: str, found: list[tuple[int, str]], context: Context | None
                 ) -> list[Problem]:
    if not found:
        return []
    if context is None:
        context = Context("megatron-lm", apilists.megatron().default_range, "", assumed=True)
    out: list[Problem] = []
    for line, flag in found:
        if context.framework == "megatron-deepspeed":
            message = _mds_problem(flag)
            if message:
                out.append(Problem(file, line, "warning", message))
            continue
        severity, message = _megatron_problem(flag, context)
        if message:
            out.append(Problem(file, line, severity, message))
    return out


def _megatron_problem(flag: str, context: Context
                      ) -> tuple[Literal["error", "warning"], str | None]:
    mlm = apilists.megatron()
    wrong = mlm.wrong.get(flag)
    if wrong:
        return "error", f"wrong Megatron flag {flag}: {wrong['why']}; use {wrong['use']}"
    if not mlm.known(flag):
        hint = ""
        if flag in apilists.megatron_deepspeed():
            hint = "; it is a Megatron-DeepSpeed flag (declare targets: megatron-deepspeed)"
        elif "_" in flag:
            hint = ("; underscores suggest another program, e.g. Hugging Face TrainingArguments "
                    "(declare targets: hf-transformers)")
        else:
            close = difflib.get_close_matches(flag, mlm.flags, n=1, cutoff=0.8)
            hint = f"; did you mean {close[0]}?" if close else ""
        return "error", f"unknown Megatron flag {flag} (not in core {mlm.span}){hint}"
    presence = mlm.presence(flag)
    inside = list(_within(context.versions, tuple(presence)))
    missing = [v for v in inside if presence[v] is False]
    if missing:
        return "error", _version_message(flag, presence, inside, missing, context)
    if flag in mlm.deprecated:
        return "warning", f"Megatron flag {flag} is deprecated: {mlm.deprecated[flag]}"
    return "error", None


@cache  # every flag of a fix asks about the same versions and range
def _within(versions: VersionRange, points: tuple[Version, ...]) -> tuple[Version, ...]:
    return tuple(v for v in points if versions.contains(v))


def _version_message(flag: str, presence: dict[apilists.Version, bool | None],
                     inside: list[apilists.Version], missing: list[apilists.Version],
                     context: Context) -> str:
    present = [v for v in inside if presence[v]]
    everywhere = [v for v, there in presence.items() if there]
    if not present:
        where = (f"core {show_version(everywhere[0])}-{show_version(everywhere[-1])}"
                 if everywhere else "no pinned core version")
        return f"Megatron flag {flag} is not in core {context.versions.text} (it is in {where}); " \
               f"{context.describe()}"
    if missing[0] < present[0]:
        return f"{flag} needs core >= {show_version(present[0])}; {context.describe()}"
    last = max(v for v in present if v < missing[-1])
    return f"{flag} was removed after core {show_version(last)}; {context.describe()}"


def _requirements(file: str, used: list[tuple[int, str, str]]) -> list[Problem]:
    """Flags that fail without another one in the same fix (e.g. --optimizer-cpu-offload needs
    --use-precision-aware-optimizer)."""
    needs = apilists.megatron().requires if used else {}
    values: dict[str, set[str]] = {}
    for _line, flag, value in used:
        values.setdefault(flag, set()).add(value)
    out = []
    for line, flag, _value in used:
        for need in needs.get(flag, []):
            given = values.get(need["flag"])
            allowed = need.get("values")
            if given is None or (allowed and not given & set(allowed)):
                wanted = f"{need['flag']} {'|'.join(allowed)}" if allowed else need["flag"]
                out.append(Problem(file, line, "error",
                                   f"{flag} needs {wanted} in the same fix: {need['why']}"))
    return out


def _mds_problem(flag: str) -> str | None:
    if flag in apilists.megatron_deepspeed():
        return None
    hint = ""
    if apilists.megatron().known(flag):
        hint = "; it is a Megatron-LM flag"
    return f"Megatron-DeepSpeed flag {flag} is not in the reference list{hint}"


# -- environment variables ------------------------------------------------------------------

def _unknown_env(name: str) -> str:
    env = apilists.env_variables()
    close = difflib.get_close_matches(name, env.known, n=1, cutoff=0.8)
    hint = f"; did you mean {close[0]}?" if close else ""
    return (f"unknown environment variable {name}: no library reads it (not in the NCCL, "
            f"PyTorch or TransformerEngine lists){hint}")


def _prose_env(file: str, line: int, text: str, myth: str) -> list[Problem]:
    """In prose, a name must exist, or be a known myth (being discussed)."""
    if not _may_name_env(text):
        return []
    env = apilists.env_variables()
    out = []
    for name in dict.fromkeys(ENV_RE.findall(text)):
        if name in env.known or name in env.myths or name in env.removed or name in myth:
            continue
        out.append(Problem(file, line, "error", _unknown_env(name)))
    return out


def _command_env(file: str, lines: list[tuple[int, str]], myth: str, fix: Fix | None
                 ) -> list[Problem]:
    """In a command, a name must be read by a library, not removed, not a myth (unless the
    node's myth names it or the command unsets it); an old name is fine where the fix also
    writes the new one."""
    env = apilists.env_variables()
    out = []
    for number, raw in lines:
        if not _may_name_env(raw) or raw.lstrip().startswith("unset "):
            continue
        for name in dict.fromkeys(ENV_RE.findall(raw)):
            if name in env.myths:
                if name not in myth:
                    out.append(Problem(file, number, "error", f"{name} is read by nothing "
                                       f"({env.myths[name]}); if this step handles the myth on "
                                       "purpose, name it in the fix's myth: line"))
            elif name in env.removed:
                gone = env.removed[name]
                out.append(Problem(file, number, "error",
                                   f"{name} is no longer read ({gone['why']}); use {gone['use']}"))
            elif name not in env.known:
                out.append(Problem(file, number, "error", _unknown_env(name)))
            elif name in env.old_names and env.old_names[name] not in _node_text(fix):
                out.append(Problem(file, number, "warning", f"{name} is an old name, still read "
                                   f"with a deprecation warning; use {env.old_names[name]}"))
    return out


def _node_text(fix: Fix | None) -> str:
    if fix is None:
        return ""
    return " ".join([str(fix.why), str(fix.verify or ""),
                     *(f"{s.do} {s.code or ''}" for s in fix.steps)])


def _nccl_versions(file: str, lines: list[tuple[int, str]], context: Context) -> list[Problem]:
    """A variable newer than the lowest NCCL release the step targets is ignored there."""
    env = apilists.env_variables()
    low = context.versions.low
    assert low is not None
    out = []
    for number, raw in lines:
        for name in ENV_RE.findall(raw):
            since = env.since.get(name)
            if since and since[: len(low.version)] > low.version:
                out.append(Problem(file, number, "error", f"{name} needs NCCL >= "
                                   f"{show_version(since)}; this {context.declared_by} targets "
                                   f"{context.versions.text}"))
    return out


def _env_conflicts(file: str, fix: Fix) -> list[Problem]:
    """Variables a Megatron version refuses (e.g. NVTE_FUSED_ATTN with core >= 0.11).

    A step's own targets win over its fix's: a step written for Transformer Engine without
    Megatron (or for an older core) may set what a newer Megatron refuses.
    """
    mlm = apilists.megatron()

    def megatron_range(targets: Target | None) -> VersionRange | None:
        if targets is None:
            return mlm.default_range
        if targets.framework != "megatron-lm":
            return None
        return VersionRange.parse(targets.versions) if targets.versions else mlm.default_range

    fix_range = megatron_range(fix.targets)
    written = " ".join([str(fix.verify or ""), *(f"{s.do} {s.code or ''}" for s in fix.steps)])
    out = []
    for conflict in mlm.env_conflicts:
        if not any(name in written for name in conflict["variables"]):
            continue  # the pattern below needs one of the names, written out
        since = apilists.parse_version(conflict["since"])
        pattern = re.compile(r"(?<![A-Za-z0-9_])(" + "|".join(conflict["variables"]) + r")=")

        def refused(versions: VersionRange | None, since: Version = since) -> bool:
            return versions is not None and any(
                versions.contains(v) for v in [*mlm.versions, mlm.newer] if v >= since)

        texts: list[tuple[int, str]] = []
        for step in fix.steps:
            if not refused(megatron_range(step.targets) if step.targets else fix_range):
                continue
            texts.append((step.src.line, str(step.do)))
            if step.code:
                texts += _lines(step.code, step.code_line or step.src.line,
                                line_known=bool(step.code_line))
        if refused(fix_range):
            texts.append((fix.src.line, str(fix.verify or "")))
        for number, text in texts:
            for name in dict.fromkeys(pattern.findall(text)):
                out.append(Problem(file, number, "error", conflict["message"].format(var=name)))
    return out


# -- DeepSpeed config keys ------------------------------------------------------------------

def _deepspeed_keys(file: str, lines: list[tuple[int, str]]) -> list[Problem]:
    """Every key of a ds_config snippet, except those inside `params` (optimizer kwargs)."""
    keys = apilists.deepspeed_keys()
    out = []
    stack: list[str] = []
    for number, raw in lines:
        for match in DS_TOKEN_RE.finditer(raw):
            key, opens = match.group(1), match.group(2)
            if key is not None:
                if "params" not in stack and key not in keys:
                    close = difflib.get_close_matches(key, keys, n=1, cutoff=0.8)
                    hint = f"; did you mean {close[0]}?" if close else ""
                    out.append(Problem(file, number, "error",
                                       f"unknown DeepSpeed config key {json.dumps(key)}{hint}"))
                if opens:
                    stack.append(key)
            elif match.group(0) == "{":
                stack.append("")
            elif stack:
                stack.pop()
    return out
