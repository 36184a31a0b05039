"""Commands that can hurt a node, its other users or their jobs, and the marks that warn of them.

A step that reboots, resets, kills, reconfigures or stress-tests must say so (`danger:`), and a
step that needs rights a training engineer often lacks must say which (`needs:`). The patterns
below are the one table lint reads to find such commands; `mark_line` is the one wording every
front end prints before the command, so the warning reads the same everywhere.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from trainmedic.trees.model import Danger, Step
from trainmedic.trees.problems import Problem

if TYPE_CHECKING:
    from trainmedic.trees.forest import Forest


# the regex parser (Python 3.11+): a pattern as a tree of operations
_sre: Any = importlib.import_module("re._parser")
_REPEATS = {_sre.MAX_REPEAT, _sre.MIN_REPEAT, _sre.POSSESSIVE_REPEAT}


@dataclass(frozen=True)
class Pattern:
    """A command shape, the mark it calls for, and the rights it takes."""

    name: str  # how messages name the command
    regex: re.Pattern[str]
    kind: str | None  # the danger kind a step running it must declare (None: privileged only)
    needs: frozenset[str] = frozenset()
    # lowercase ASCII words one of which every match contains (empty: none known); read from
    # the regex itself, so a step holding none of them is passed over without a search
    words: frozenset[str] = frozenset()


def _p(name: str, pattern: str, kind: str | None, *needs: str) -> Pattern:
    return Pattern(name, re.compile(pattern, re.IGNORECASE), kind, frozenset(needs),
                   required_words(pattern))


def required_words(pattern: str) -> frozenset[str]:
    """Lowercase words one of which every match of `pattern` contains, read from its syntax
    tree: a run of ASCII literals in sequence, or one word from each branch of an alternation,
    or the body of a group or of a repeat taken at least once. Empty when there is none.

    Exact on ASCII text, with or without IGNORECASE (which, on ASCII text, matches an ASCII
    letter only to its other case); a non-ASCII literal ends a run, since IGNORECASE lets, say,
    the Kelvin sign match a "k".
    """
    return frozenset(_required(list(_sre.parse(pattern))) or ())


def _required(items: list[Any]) -> set[str] | None:
    best: set[str] | None = None

    def score(option: set[str]) -> tuple[bool, int, int]:  # the rarer in text, the better
        shortest = min(map(len, option))
        return shortest >= 3, -len(option), shortest

    def consider(option: set[str] | None) -> None:
        nonlocal best
        if option and (best is None or score(option) > score(best)):
            best = option

    run = ""
    for op, arg in items:
        if op == _sre.LITERAL and arg < 128:
            run += chr(arg).lower()
            continue
        consider({run} if run else None)
        run = ""
        if op == _sre.SUBPATTERN:
            consider(_required(list(arg[-1])))
        elif op == _sre.ATOMIC_GROUP:
            consider(_required(list(arg)))
        elif op == _sre.BRANCH:  # a word from every branch, or nothing
            options: list[set[str]] = []
            for branch in arg[1]:
                required = _required(list(branch))
                if required is None:
                    break
                options.append(required)
            else:
                consider(set().union(*options))
        elif op in _REPEATS and arg[0] >= 1:
            consider(_required(list(arg[2])))
    consider({run} if run else None)
    return best


# Matched against a step's code with comments removed. Read-only queries (`nvidia-smi -q`,
# `iptables -S`, `sysctl net.x`) are not listed: they change nothing.
PATTERNS: tuple[Pattern, ...] = (
    _p("reboot", r"(?<![\w-])(reboot|poweroff|shutdown\s+-r)\b", "reboot", "root"),
    _p("nvidia-smi -r", r"\bnvidia-smi\b[^\n;|&]*\s(-r|--gpu-reset)\b", "gpu-reset", "root"),
    _p("--gpu-reset", r"--gpu-reset\b", "gpu-reset", "root"),
    _p("nvidia-smi -pl", r"\bnvidia-smi\b[^\n;|&]*\s(-pl|--power-limit)\b", "power-limit",
       "root"),
    _p("modprobe -r", r"\bmodprobe\s+(-\w+\s+)*(-r|--remove)\b", "kernel-module", "root"),
    _p("rmmod", r"\brmmod\b", "kernel-module", "root"),
    _p("dkms", r"\bdkms\s+(autoinstall|install|build|remove|uninstall)\b", "kernel-module",
       "root"),
    _p("sysctl -w", r"\bsysctl\s+(-\w+\s+)*(-w|--write)\b|\bsysctl\s+[\w.]+=", "sysctl", "root"),
    _p("firewall-cmd", r"\bfirewall-cmd\b[^\n;|&]*--(add|remove|reload|complete-reload|"
       r"permanent|set|panic|zone=\S+\s+--(add|remove))", "firewall", "root"),
    _p("iptables", r"\bip6?tables\b[^\n;|&]*\s(-[AIDRFXPNZ]\b|--(append|insert|delete|replace|"
       r"flush|policy|new-chain|delete-chain))", "firewall", "root"),
    _p("ufw", r"\bufw\s+(allow|deny|reject|enable|disable|reset|delete)\b", "firewall", "root"),
    _p("systemctl restart", r"\bsystemctl\s+(-\S+\s+)*(restart|stop|start|reload|kill|"
       r"disable|enable|mask|isolate)\b", "service-restart", "root"),
    _p("scontrol update state=", r"\bscontrol\s+update\b[^\n;|&]*\bstate\s*=\s*"
       r"(drain|resume|down|fail|undrain|power_down|power_up|idle)\b", "node-state",
       "slurm-operator"),
    _p("kill", r"(?:^|[\s;&|(`])kill\s+(-\S+\s+)*(<|\$|%|\d)", "kill"),
    _p("pkill", r"\bpkill\b", "kill"),
    _p("killall", r"\bkillall\b", "kill"),
    _p("--force-reinstall", r"--force-reinstall\b", "force-reinstall"),
    _p("rm -r", r"\brm\s+(-\w+\s+)*-\w*[rR]", "delete-data"),
    _p("dcgmi diag -r 3", r"\bdcgmi\s+diag\b[^\n;|&]*-r\s*['\"]?(3|4|long|xlong)\b",
       "stress-test", "idle-gpus"),
    _p("sudo", r"(?:^|[\s;&|(`])sudo\s", None, "root"),
)

# word -> the patterns (by place in the table) that need it; patterns that need no word
_BY_WORD: dict[str, set[int]] = {}
for _i, _pattern in enumerate(PATTERNS):
    for _word in _pattern.words:
        _BY_WORD.setdefault(_word, set()).add(_i)
_ALWAYS = frozenset(i for i, p in enumerate(PATTERNS) if not p.words)

# Values that differ on every machine: a dangerous command must take them as placeholders.
HARD_CODED: tuple[tuple[str, re.Pattern[str], str], ...] = (
    ("a GPU index", re.compile(r"\b(nvidia-smi|dcgmi)\b[^\n;|&]*\s(-i|--id)[\s=]+\d"),
     "<GPU_INDEX>"),
    ("a wattage", re.compile(r"\s(-pl|--power-limit)[\s=]+\d"), "<WATTS>"),
    ("a subnet", re.compile(r"\b\d{1,3}(\.\d{1,3}){3}/\d{1,2}\b"), "<SUBNET_CIDR>"),
    ("a node name", re.compile(r"\bnodename\s*=\s*(?![\"']?[$<])[\"']?[A-Za-z]", re.IGNORECASE),
     "<NODE>"),
)


def strip_comments(code: str, lang: str) -> str:
    """The code without `#` comments, so a comment that says "reboot" is not a reboot."""
    if lang == "json":
        return code
    if "#" not in code:
        return "\n".join(code.splitlines())  # as below: the same line ends, no comment
    out = []
    for line in code.splitlines():
        quote = ""
        for i, char in enumerate(line):
            if quote:
                if char == quote:
                    quote = ""
            elif char in "'\"":
                quote = char
            elif char == "#" and (i == 0 or line[i - 1].isspace()):
                line = line[:i]
                break
        out.append(line)
    return "\n".join(out)


def matches(step: Step) -> Iterator[Pattern]:
    """The patterns a step's command matches, in table order."""
    if not step.code:
        return
    code = strip_comments(step.code, step.lang)
    candidates: tuple[Pattern, ...] | list[Pattern] = PATTERNS
    if code.isascii():  # where the words test is exact (see `required_words`)
        lowered = code.lower()
        found = {i for word, needing in _BY_WORD.items() if word in lowered for i in needing}
        candidates = [PATTERNS[i] for i in sorted(found | _ALWAYS)]
    for pattern in candidates:
        if pattern.regex.search(code):
            yield pattern


def step_problems(step: Step, file: str) -> list[Problem]:
    """What lint says about one step: a missing mark, a missing right, a hard-coded value."""
    found = list(matches(step))
    problems = []

    def error(message: str) -> None:
        problems.append(Problem(file, step.src.line, "error", message))

    dangerous = [p for p in found if p.kind]
    if dangerous and step.danger is None:
        first = dangerous[0]
        error(f"step runs '{first.name}' without a danger mark; add danger: "
              f"{{kind: {first.kind}, effect: <what it does to the node and its users>}}")
    missing = sorted({need for p in found for need in p.needs} - set(step.needs))
    if missing:
        names = ", ".join(sorted({p.name for p in found if p.needs & set(missing)}))
        error(f"step runs '{names}' but does not say it needs {', '.join(missing)}; "
              f"add needs: [{', '.join(missing)}]")
    if step.code and (dangerous or step.danger is not None):
        code = strip_comments(step.code, step.lang)
        for what, regex, placeholder in HARD_CODED:
            if regex.search(code):
                error(f"a dangerous step hard-codes {what}; write the placeholder "
                      f"{placeholder} for the reader to fill in")
    return problems


def check_danger(forest: Forest) -> list[Problem]:
    """Every step of every fix: dangerous and privileged commands carry their marks."""
    problems = []
    for tree in forest.trees.values():
        for fix in tree.fixes():
            for step in fix.steps:
                problems += step_problems(step, tree.file)
    return problems


def placeholders(code: str) -> list[str]:
    """The `<NAME>` values a command leaves to the reader, in order of first use."""
    from trainmedic.trees import spec  # the key tables: for front ends, not for lint

    return list(dict.fromkeys(spec.PLACEHOLDER_RE.findall(code)))


def describe_needs(needs: list[str]) -> str:
    from trainmedic.trees import spec

    return ", ".join(spec.NEEDS.get(n, n) for n in needs)


def mark_line(danger: Danger | None, needs: list[str]) -> str | None:
    """The one-line warning printed before a marked command, or None for an ordinary step.

    `DANGER (gpu-reset): Ends every process on the GPU. Needs root on the node, ...`
    """
    parts = []
    if danger is not None:
        effect = " ".join(str(danger.effect).split())
        if effect and effect[-1] not in ".!?":
            effect += "."
        parts.append(f"DANGER ({danger.kind}): {effect}")
    if needs:
        lead = "Needs" if danger is not None else "NEEDS"
        parts.append(f"{lead} {describe_needs(needs)}.")
    return " ".join(parts) or None
