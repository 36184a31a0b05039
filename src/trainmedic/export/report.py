"""The incident report of a saved walk: what was asked, what was found, what to attach.

It works from the saved walk (`WalkRecord`), not from a live session, so a walk saved by any
front end (or by an older version) can be reported, and the app's `i` and `trainmedic report`
print the same page. The report's parts are gathered once (`_Report`); `build_report` gives them
as plain data (the `--json` form), `render_report` as Markdown. Secrets are removed twice:
structurally (secret-named facts, `--api-key VALUE` flags) and by a last pass of `redact_text`
over every string and over the whole rendered page. A saved walk is data (a crafted one may hold
anything): every string is made inert, and every field goes through the Markdown escaping of
`export/markdown.py`.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from trainmedic.export.escalation import MINIMUM, Ask
from trainmedic.export.markdown import code_span, fence, one_line, prose
from trainmedic.redact import REDACTED, is_secret_name, redact_command, redact_text
from trainmedic.textsafe import inert
from trainmedic.trees import Fix, Forest, Question
from trainmedic.trees.danger import mark_line

if TYPE_CHECKING:
    from trainmedic.export.repoinfo import RepoInfo
    from trainmedic.probes.base import ProbeResult
    from trainmedic.saved_walks import StepRecord, WalkRecord
    from trainmedic.triage.attachment import TriageAttachment
    from trainmedic.triage.report import Finding

VERSION_FACTS = (("torch", "PyTorch"), ("torch_cuda", "CUDA (PyTorch build)"),
                 ("nccl", "NCCL"), ("transformer_engine", "TransformerEngine"),
                 ("python", "Python"), ("megatron_core", "Megatron Core"),
                 ("flash_attn", "FlashAttention"), ("apex", "Apex"), ("deepspeed", "DeepSpeed"))


def redact_deep(value: Any, key: str = "") -> Any:
    """Every string in nested data redacted; values under secret-named keys hidden entirely."""
    if key and is_secret_name(key) and not isinstance(value, bool | int | float | type(None)):
        return REDACTED
    if isinstance(value, str):
        return inert(redact_text(value))
    if isinstance(value, Mapping):
        return {inert(str(k)): redact_deep(v, str(k)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_deep(v) for v in value]
    return value


def _node(forest: Forest | None, ref_text: str) -> Question | Fix | None:
    tree_id, _, node_id = ref_text.partition("#")
    if forest is None or tree_id not in forest.trees:
        return None
    tree = forest.trees[tree_id]
    return tree.nodes.get(node_id or tree.start)


@dataclass(frozen=True)
class PathStep:
    """One answered question as the report tells it."""

    node: str
    question: str
    answer: int
    answer_text: str
    goto: str
    suggested: int | None
    suggested_text: str | None  # the suggested answer's text, when the trees still have it
    followed_suggestion: bool
    evidence: list[str]
    implied: bool = False  # answered by the log triage that opened the walk

    @classmethod
    def of(cls, step: StepRecord, forest: Forest | None) -> PathStep:
        node = _node(forest, step.node)
        suggested_text = None
        if step.suggested is not None and isinstance(node, Question) \
                and 0 <= step.suggested < len(node.answers):
            suggested_text = str(node.answers[step.suggested].text)
        return cls(step.node, step.question, step.answer, step.answer_text, step.goto,
                   step.suggested, suggested_text, step.suggested == step.answer,
                   list(step.evidence), step.implied)


@dataclass(frozen=True)
class CodeStep:
    do: str
    code: str | None
    lang: str | None
    mark: str | None = None  # the warning before a disruptive or privileged command


@dataclass(frozen=True)
class Outcome:
    """Where the walk ended: a fix (with its steps), a question, or a node the trees lost."""

    kind: str  # "fix", "question" or "unknown"
    node: str
    title: str
    why: str | None = None
    steps: tuple[CodeStep, ...] = ()
    verify: str | None = None
    myth: str | None = None

    @classmethod
    def of(cls, current: str, forest: Forest | None) -> Outcome:
        node = _node(forest, current)
        if isinstance(node, Fix):
            return cls("fix", current, str(node.fix), str(node.why),
                       tuple(CodeStep(str(s.do), s.code, s.lang, mark_line(s.danger, s.needs))
                             for s in node.steps),
                       str(node.verify) if node.verify else None,
                       str(node.myth) if node.myth else None)
        if isinstance(node, Question):
            return cls("question", current, str(node.question))
        return cls("unknown", current, "")


@dataclass(frozen=True)
class ChecklistItem:
    item: str
    done: bool
    value: str
    hint: str


def merge_probes(saved: Iterable[ProbeResult], fresh: Iterable[ProbeResult]) -> list[ProbeResult]:
    """Latest result per probe name: fresh results replace the saved ones, order kept."""
    merged: dict[str, ProbeResult] = {}
    for probe in [*saved, *fresh]:
        merged[probe.name] = probe
    return list(merged.values())


def _probe_facts(probes: list[ProbeResult], name: str) -> dict[str, object]:
    return next((dict(p.facts) for p in probes if p.name == name), {})


def _repo_text(repo: RepoInfo | None) -> str:
    if repo is None:
        return ""
    state = "dirty: uncommitted changes" if repo.dirty else "clean"
    return f"{repo.commit} ({state}) in {repo.path}"


def _checklist_item(ask: Ask, walk: WalkRecord, probes: list[ProbeResult],
                    repo: RepoInfo | None, in_app: bool = False) -> ChecklistItem:
    assert ask.checklist is not None
    done, value = False, ""
    if ask.fill == "repo":
        done, value = repo is not None, _repo_text(repo)
    elif ask.fill == "versions":
        versions = _probe_facts(probes, "versions")
        known = [f"{label} {versions[key]}" for key, label in VERSION_FACTS[:4]
                 if versions.get(key)]
        missing = [label for key, label in VERSION_FACTS[:4] if not versions.get(key)]
        done = not missing
        value = ", ".join(known) + (f" (unknown: {', '.join(missing)})"
                                    if known and missing else "")
    elif ask.fill == "launch":
        done = bool(walk.launch_command.strip())
        value = "below" if done else ""
    elif ask.fill == "logs":
        parts = []
        nccl_debug = str(_probe_facts(probes, "env").get("nccl_debug") or "")
        if nccl_debug:
            parts.append(f"NCCL_DEBUG={nccl_debug} in the probed environment")
        if walk.triage is not None and walk.triage.files:
            parts.append("triaged logs: " + ", ".join(walk.triage.files))
        value = "; ".join(parts)  # logs are never "done": only people know they are complete
    return ChecklistItem(ask.checklist, done, value,
                         ask.app_hint if in_app and ask.app_hint else ask.hint)


class _Report:
    """Everything the report says, gathered once from the saved walk."""

    def __init__(self, walk: WalkRecord, forest: Forest | None, repo: RepoInfo | None,
                 fresh_probes: Iterable[ProbeResult], in_app: bool = False) -> None:
        self.walk = walk
        tree = forest.trees.get(walk.tree) if forest is not None else None
        self.tree_title = str(tree.title) if tree else walk.tree
        self.outcome = Outcome.of(walk.current, forest)
        self.path = [PathStep.of(step, forest) for step in walk.steps]
        self.probes = merge_probes(walk.probes, fresh_probes)
        self.triage: TriageAttachment | None = walk.triage
        self.repo = repo
        self.checklist = [_checklist_item(ask, walk, self.probes, repo, in_app)
                          for ask in MINIMUM if ask.checklist is not None]
        self.launch_command = redact_command(walk.launch_command)

    def to_dict(self) -> dict[str, Any]:
        walk = self.walk
        return redact_deep({
            "walk": {"id": walk.id, "tree": walk.tree, "tree_title": self.tree_title,
                     "started": walk.started, "updated": walk.updated,
                     "finished": walk.finished, "current": walk.current},
            "outcome": asdict(self.outcome),
            "path": [asdict(step) for step in self.path],
            "tried": [t.to_dict() for t in walk.tried],
            "probes": [p.to_dict() for p in self.probes],
            "triage": self.triage.to_dict() if self.triage is not None else None,
            "repo": self.repo.to_dict() if self.repo is not None else None,
            "checklist": [asdict(item) for item in self.checklist],
            "launch_command": self.launch_command,
            "notes": walk.notes,
        })


def build_report(walk: WalkRecord, forest: Forest | None, *, repo: RepoInfo | None = None,
                 fresh_probes: Iterable[ProbeResult] = ()) -> dict[str, Any]:
    """Everything the report says, as plain redacted data (the `--json` form)."""
    return _Report(walk, forest, repo, fresh_probes).to_dict()


def render_report(walk: WalkRecord, forest: Forest | None, *, repo: RepoInfo | None = None,
                  fresh_probes: Iterable[ProbeResult] = (), in_app: bool = False) -> str:
    """The Markdown incident report (what the TUI's "report" key shows and saves); `in_app`:
    its hints name the app's keys instead of command-line flags."""
    report = _Report(walk, forest, repo, fresh_probes, in_app)
    out = [f"# Incident report: {one_line(report.tree_title)}", "",
           f"Walk {code_span(walk.id)} of tree {code_span(walk.tree)}, started "
           f"{one_line(walk.started or 'unknown')}, last step "
           f"{one_line(walk.updated or 'unknown')}; "
           + ("it reached a fix." if walk.finished else "it did not reach a fix."), "",
           "Secrets were redacted by pattern; read this before you attach it anywhere.", "",
           "<!-- Generated by trainmedic report; secrets redacted by pattern. -->", ""]
    out += _render_outcome(report.outcome)
    out += _render_tried(walk)
    out += _render_path(report.path)
    out += _render_probes(report.probes, in_app)
    out += _render_triage(report.triage)
    out += _render_checklist(report.checklist, report.launch_command)
    if walk.notes.strip():
        out += ["## Notes", "", prose(walk.notes), ""]
    return inert(redact_text("\n".join(out).rstrip("\n") + "\n"))


def _render_outcome(outcome: Outcome) -> list[str]:
    out = ["## Outcome", ""]
    if outcome.kind == "fix":
        out += [f"Fix reached: **{one_line(outcome.title)}** ({code_span(outcome.node)}).",
                "", f"**Why.** {prose(outcome.why or '')}", ""]
        for index, step in enumerate(outcome.steps, start=1):
            out.append(f"{index}. {one_line(step.do)}")
            if step.mark:
                out += ["", f"   > **{one_line(step.mark)}**"]
            if step.code:
                out += ["", *("   " + line if line else "" for line in
                              fence(step.code, step.lang or "bash"))]
            out.append("")
        if outcome.verify:
            out += [f"**Verify.** {prose(outcome.verify)}", ""]
    elif outcome.kind == "question":
        out += [f"The walk stopped at a question ({code_span(outcome.node)}): "
                f"{one_line(outcome.title)}", ""]
    else:
        out += [f"The walk stopped at {code_span(outcome.node or '?')}, which the loaded "
                "trees no longer contain.", ""]
    return out


def _render_tried(walk: WalkRecord) -> list[str]:
    """Fixes the person reached and said did not help: the report must not hide them."""
    if not walk.tried:
        return []
    out = ["## Fixes tried", ""]
    for tried in walk.tried:
        out.append(f"- Tried fix **{one_line(tried.title or tried.node)}** "
                   f"({code_span(tried.node)}): did not help.")
    return [*out, ""]


def _render_path(path: list[PathStep]) -> list[str]:
    out = ["## Path taken", ""]
    if not path:
        return [*out, "No question was answered.", ""]
    for index, step in enumerate(path, start=1):
        out.append(f"{index}. **{one_line(step.question)}** ({code_span(step.node)})")
        note = ""
        if step.implied:
            note = " (implied by the log triage)"
        elif step.followed_suggestion:
            note = " (suggested by the probes)"
        elif step.suggested_text is not None:
            note = f" (the probes suggested: {one_line(step.suggested_text)})"
        out.append(f"   - Answer: {one_line(step.answer_text)}{note} \u2192 "
                   f"{code_span(step.goto)}")
        if step.evidence:
            out.append("   - Evidence:")
            out += [f"     - {code_span(line)}" for line in step.evidence]
    return [*out, ""]


def _render_probes(probes: list[ProbeResult], in_app: bool = False) -> list[str]:
    out = ["## Probe results", ""]
    if not probes:
        how = "^r in the walk runs them" if in_app else "rerun with `--probe`"
        return [*out, f"No probe results are attached to this walk ({how}).", ""]
    out += ["| Probe | Status | Summary |", "|---|---|---|"]
    for probe in probes:
        out.append(f"| {one_line(probe.name, table=True)} | "
                   f"{one_line(probe.status, table=True)} | "
                   f"{one_line(probe.summary, table=True)} |")
    out.append("")
    for probe in probes:
        body = json.dumps(redact_deep({"facts": probe.facts, "evidence": probe.evidence}),
                          indent=1, ensure_ascii=False, sort_keys=True)
        # inside an HTML block Markdown is not read: the name is HTML-escaped, not Markdown
        name = html.escape(" ".join(probe.name.split()))
        out += [f"<details><summary>{name}: facts and raw output</summary>", "",
                *fence(body, "json")]
        if probe.raw:
            out += ["", *fence(probe.raw, "text")]
        out += ["", "</details>", ""]
    return out


def _finding_line(finding: Finding) -> str:
    ranks = ", ".join(str(r) for r in finding.ranks[:16])
    about = [code_span(finding.signature)] if finding.signature else []
    if finding.confidence > 0:  # 0: a walk saved by 0.1.0's app did not keep it
        about.append(f"confidence {round(finding.confidence, 2)}")
    if ranks:
        about.append(f"ranks {ranks}")
    return (f"- **{one_line(finding.summary)}**" + (f" ({', '.join(about)})" if about else "")
            + f" \u2192 {code_span('trainmedic walk ' + finding.link)}")


def _render_triage(triage: TriageAttachment | None) -> list[str]:
    out = ["## Triage findings", ""]
    if triage is None:
        return [*out, "No log triage is attached to this walk.", ""]
    chosen = triage.finding
    for finding in triage.findings:
        out.append(_finding_line(finding)
                   + (" (the walk started here)" if finding is chosen
                      and len(triage.findings) > 1 else ""))
        lines = [f"{e.file}:{e.line}: {e.text}" for e in finding.evidence]
        if lines:
            out += ["", *("  " + line if line else "" for line in fence("\n".join(lines),
                                                                        "text"))]
        out.append("")
    return out


def _render_checklist(checklist: list[ChecklistItem], launch_command: str) -> list[str]:
    out = ["## Minimum information for a bug report", "",
           "What maintainers ask for first; tick the open boxes before filing.", ""]
    for item in checklist:
        box = "x" if item.done else " "
        detail = item.value if item.value else f"to do: {item.hint}"
        out.append(f"- [{box}] **{one_line(item.item)}**: {one_line(detail)}")
    if launch_command.strip():
        out += ["", "Launch command:", "", *fence(launch_command, "bash")]
    return [*out, ""]
