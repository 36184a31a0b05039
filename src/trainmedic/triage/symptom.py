"""What the user saw (`--symptom`): a prior over the findings, never an override.

Many logs cannot tell by themselves: a frozen job often leaves a log that ends after NCCL's
set-up lines, like a healthy one; a slow run leaves ordinary iteration lines. The person at the
terminal knows whether the job froze, died, crawls, blew up or does not learn - the answer to the
entry tree's first question (trees/triage.yaml, node `what`). Used here as follows:

- a finding whose tree (or node) fits the answer ranks above those that do not, and says so;
- a clear cause in the log still leads even when it does not fit (an OOM makes a job hang);
- when nothing in the log fits and nothing clear outranks it, the answer gives the finding: the
  node a person reaches by answering the entry question that way, refined by the log's last
  lines where they show more (a log ending in NCCL set-up lines, a run that had finished). That
  finding says it comes from the answer, with a low confidence, and quotes only real lines.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from trainmedic.triage.report import Evidence, Finding

SIGNATURE = "reported-symptom"  # the `signature` of a finding that comes from the answer
CONFIDENCE = 0.3  # the answer alone: where the trees go from it
REFINED_CONFIDENCE = 0.4  # the answer and the log's last lines agree on a node
STRONG = 0.8  # a cause at least this confident leads even when it does not fit the answer
TAIL_BYTES = 64 * 1024  # how much of each log's end is read to refine the answer
TAIL_LINES = 5  # the last lines of a log that decide "it stops after NCCL set-up"


@dataclass(frozen=True)
class Symptom:
    """One answer to the entry question, and which trees and nodes are its area."""

    name: str
    said: str  # what the user said, in the words shown back
    tree: str  # where the entry question's answer leads
    node: str | None
    trees: frozenset[str]  # findings in these trees fit the answer
    links: frozenset[str] = frozenset()  # and these nodes of other trees


# The areas follow the trees: the entry answer's tree, the trees it sends on to, and the trees
# whose nodes describe the same thing seen (a loader that hangs, an exit that never ends).
SYMPTOMS: dict[str, Symptom] = {s.name: s for s in (
    Symptom("hang", "the job froze", "nccl-hang", None,
            frozenset({"nccl-hang", "multi-node", "scheduler", "data-pipeline", "checkpoint",
                       "moe", "containers", "sharding", "hardware"}),
            frozenset({"startup#fused-kernels", "startup#extension-build"})),
    Symptom("crash", "a process died or the job was ended", "triage", "died",
            frozenset({"triage", "oom", "nccl-hang", "multi-node", "startup", "hardware",
                       "loss-spike", "checkpoint", "scheduler", "compile", "sharding", "moe",
                       "containers", "data-pipeline", "preflight"})),
    Symptom("slow", "training runs too slowly", "slow-training", "measure-timers",
            frozenset({"slow-training", "multi-node", "containers", "data-pipeline", "hardware",
                       "compile"}),
            # the slow-training tree's answer for GPUs that talk through the CPU leads there
            frozenset({"nccl-hang#topology"})),
    Symptom("diverged", "the loss exploded or became NaN/inf", "loss-spike", None,
            frozenset({"loss-spike", "convergence"})),
    Symptom("not-learning", "the loss does not improve", "convergence",
            None, frozenset({"convergence", "loss-spike"})),
)}
NAMES = tuple(SYMPTOMS)

# the last lines of a run that had finished training (a hang after it is an exit hang): words
# that say so, HF Trainer's final metrics, and the summaries loggers print only when the run
# closes (wandb.finish()'s "Run history:"/"Run summary:", Lightning's "`Trainer.fit` stopped"),
# Megatron-LM's "[after training is done]" and TF Estimator's "Loss for final step:"
_FINISHED = re.compile(
    r"\blast epoch\b|\btrain(?:ing)? (?:has |is )?(?:finished|completed?|done|ended)\b"
    r"|\bfinished training\b|'train_runtime'|\btrain_runtime\b"
    r"|\bafter training is done\b|\bLoss for final step:"
    r"|^wandb: Run (?:history|summary):|`Trainer\.fit` stopped", re.IGNORECASE)
_NCCL_SETUP = re.compile(r"NCCL INFO|NCCL version")
_NAN_VALUE = re.compile(r"(?:^|[\s:=,|])[-+]?(?:nan|inf)(?:$|[\s,|])", re.IGNORECASE)


@dataclass
class Tail:
    """The last lines of one log (1-based line numbers), read only when a symptom is given."""

    file: str
    lines: list[tuple[int, str]] = field(default_factory=list)


@dataclass
class SymptomUse:
    """How the answer was used: shown in one line, and as `symptom` in `--json`."""

    given: str
    said: str
    used: str  # "fits" | "outranked" | "lead" (the answer gave the first finding)
    summary: str

    def to_dict(self) -> dict[str, Any]:
        return {"given": self.given, "said": self.said, "used": self.used,
                "summary": self.summary}

    @classmethod
    def from_dict(cls, data: object) -> SymptomUse | None:
        """What `to_dict()` wrote; None for anything without a known symptom."""
        if not isinstance(data, dict) or data.get("given") not in SYMPTOMS:
            return None
        return cls(str(data["given"]), str(data.get("said") or ""),
                   str(data.get("used") or ""), str(data.get("summary") or ""))


def from_walk(path: Sequence[Any]) -> str | None:
    """The symptom a walk's answer to the entry question means (`path`: the refs visited, each
    with `tree` and `node`), or None when the walk did not answer it with one of them. Lets the
    app triage a log with what the user already said in the walk."""
    for here, there in pairwise(path):
        if (here.tree, here.node) != ("triage", "what"):
            continue
        for symptom in SYMPTOMS.values():
            if there.tree == symptom.tree and (symptom.tree != "triage"
                                               or there.node == symptom.node):
                return symptom.name
    return None


def check(name: str | None) -> Symptom | None:
    """The symptom named, None for none; a one-line UsageError for a name not in the list."""
    if name is None:
        return None
    symptom = SYMPTOMS.get(name)
    if symptom is None:
        from trainmedic.errors import UsageError

        raise UsageError(f"unknown symptom {name!r} (one of: {', '.join(NAMES)})")
    return symptom


def fits(symptom: Symptom, finding: Finding) -> bool:
    return finding.tree in symptom.trees or finding.link in symptom.links


def _strong(finding: Finding) -> bool:
    return finding.kind == "cause" and finding.confidence >= STRONG


def apply(findings: list[Finding], symptom: Symptom, tails: list[Tail], *,
          errors: int) -> tuple[list[Finding], SymptomUse]:
    """The findings reordered by the answer (each marked whether it fits), the answer's own
    finding added where nothing in the log fits, and how the answer was used."""
    for f in findings:
        f.fits_symptom = fits(symptom, f)
    first = [f for f in findings if f.fits_symptom or _strong(f)]
    rest = [f for f in findings if not (f.fits_symptom or _strong(f))]
    own = None
    if not any(f.fits_symptom for f in findings):
        own = _from_answer(symptom, tails, quiet=not findings and errors == 0)
    ordered = first + ([own] if own is not None else []) + rest
    for f in ordered:
        if f is not own:
            f.why = _with_fit(f, symptom)
    top = ordered[0]
    if top is own:
        use = SymptomUse(symptom.name, symptom.said, "lead",
                         f"You said {symptom.said} (--symptom {symptom.name}); nothing in the "
                         f"log fits it, so the first finding comes from your answer: "
                         f"{own.link}")
    elif top.fits_symptom:
        use = SymptomUse(symptom.name, symptom.said, "fits",
                         f"You said {symptom.said} (--symptom {symptom.name}); findings that "
                         f"fit it are listed first")
    else:
        use = SymptomUse(symptom.name, symptom.said, "outranked",
                         f"You said {symptom.said} (--symptom {symptom.name}); a clear cause in "
                         f"the log that does not fit it still leads ({top.link})"
                         + (f", your answer's node follows ({own.link})" if own else ""))
    return ordered, use


def _with_fit(f: Finding, symptom: Symptom) -> str:
    if f.fits_symptom:
        note = f"fits what you reported ({symptom.name})"
    elif _strong(f):
        note = (f"does not fit what you reported ({symptom.name}), but a cause this clear in "
                "the log keeps its place")
    else:
        note = f"does not fit what you reported ({symptom.name}): ranked after those that do"
    return f"{f.why}; {note}" if f.why else note


def _from_answer(symptom: Symptom, tails: list[Tail], *, quiet: bool) -> Finding:
    """The node the entry question's answer leads to, refined by the log's last lines."""
    tree, node = symptom.tree, symptom.node
    evidence: list[Evidence] = []
    shows = ""
    if symptom.name == "hang":
        finished = _matching(tails, _FINISHED)
        setup = _ends_in_nccl_setup(tails)
        if finished:
            tree, node, evidence = "scheduler", "exit-hang", finished
            shows = "the log says training had reached its end: a job that hangs on exit"
        elif setup:
            tree, node, evidence = "nccl-hang", "silent-hang", setup
            shows = ("the log ends after NCCL's set-up lines with no error: a silent hang "
                     "in or after the first collective")
        elif quiet:
            node = "silent-hang"
            shows = "the log holds no error at all: a silent hang"
    elif symptom.name in ("slow", "not-learning"):
        from trainmedic.triage.trends import not_learning_hint, slow_hint

        read = slow_hint if symptom.name == "slow" else not_learning_hint
        for tail in tails:
            hint = read(tail.lines)
            if hint is not None:
                node = hint.node
                evidence = [Evidence(tail.file, n, text) for n, text in hint.lines]
                shows = f"{hint.why} ({tree}#{hint.node})"
                break
    elif symptom.name == "diverged":
        nan = _matching(tails, _NAN_VALUE)
        if nan:
            node, evidence = "nan-loss", nan
            shows = "the log's last lines print NaN/inf values"
    link = f"{tree}#{node}" if node else tree
    if shows:
        summary = (f"you said {symptom.said}; no message in the log explains it, and {shows} "
                   f"(from your answer and the log's last lines)")
        why = ("from your answer (--symptom), not from a known message: the evidence lines are "
               "the log's own last lines that point to this node")
    else:
        summary = (f"you said {symptom.said}; no message in the log explains it: start where "
                   f"the trees go from that answer ({link})")
        why = ("from your answer (--symptom) alone: no line in the log is evidence for it; "
               "walk from here")
    return Finding(
        signature=SIGNATURE, tree=tree, node=node,
        confidence=REFINED_CONFIDENCE if evidence or (shows and quiet) else CONFIDENCE,
        summary=summary, kind="symptom", why=why, count=0, evidence=evidence,
        details={"from": "reported symptom", "symptom": symptom.name,
                 "refined": bool(shows)},
        fits_symptom=True,
    )


def _matching(tails: list[Tail], pattern: re.Pattern[str], most: int = 3) -> list[Evidence]:
    out = []
    for tail in tails:
        for lineno, text in tail.lines:
            if pattern.search(text):
                out.append(Evidence(tail.file, lineno, text))
    return out[-most:]


def _ends_in_nccl_setup(tails: list[Tail]) -> list[Evidence]:
    """Evidence that every log with lines ends in NCCL set-up lines (its last line), or []."""
    out = []
    for tail in tails:
        last = [(n, t) for n, t in tail.lines if t.strip()][-TAIL_LINES:]
        if not last:
            continue
        setup = [(n, t) for n, t in last if _NCCL_SETUP.search(t)]
        if len(setup) * 2 <= len(last):
            return []
        n, text = setup[-1]
        out.append(Evidence(tail.file, n, text))
    return out[:3]


# ---- reading the end of each log ------------------------------------------------------------

def tail_of_bytes(name: str, data: bytes, clean: Callable[[str], str]) -> Tail:
    """The last lines of text held in memory."""
    start = max(0, len(data) - TAIL_BYTES)
    return _tail(name, data[:start].count(b"\n") + 1, data[start:], cut=start > 0, clean=clean)


def tail_of_file(name: str, path: str, clean: Callable[[str], str]) -> Tail | None:
    """The last lines of a plain file, with their line numbers (read from its end, numbered by
    counting its line breaks: `FileEnd`); None when it cannot be read, or keeps changing while
    it is."""
    from trainmedic.triage.fileend import FileEnd

    for _ in range(3):  # a log still being written: its end is read again
        end = FileEnd.read(path, TAIL_BYTES)
        if end is None:
            return None
        first = end.first_line()
        if first is not None:
            return _tail(name, first, end.block, cut=end.offset > 0, clean=clean)
    return None


def _tail(name: str, first: int, data: bytes, *, cut: bool,
          clean: Callable[[str], str]) -> Tail:
    text = data.decode("utf-8", "replace").split("\n")
    lines = list(enumerate(text, first))
    if cut and lines:
        lines = lines[1:]  # the first line may start in the middle
    return Tail(name, [(n, clean(t.rstrip("\r"))) for n, t in lines[-200:] if t.strip()])


def tails_of(sources: Iterable[Any], clean: Callable[[str], str]) -> list[Tail]:
    """The ends of the logs read (plain files and text in memory; stdin and .gz are read once,
    so they are not refined)."""
    from trainmedic.textsafe import inert_line

    out = []
    for source in sources:
        name = inert_line(source.name)  # as the scanner shows it
        if source.data is not None:
            out.append(tail_of_bytes(name, source.data, clean))
        elif source.path is not None and source.path != "-" and not source.gz:
            tail = tail_of_file(name, source.path, clean)
            if tail is not None:
                out.append(tail)
    return out
