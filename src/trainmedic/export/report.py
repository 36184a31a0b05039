"""The incident report of a saved walk: what was asked, what was found, what to attach.

It works from the saved session dict (contracts §5), not from the walk engine's objects, so a
walk saved by any front end (or by an older version) can be reported. The data is gathered into
one plain dict (`build_report`, also the `--json` form) and then rendered as Markdown. Secrets are
removed twice: structurally (secret-named facts, `--api-key VALUE` flags) and by a last pass of
`redact_text` over every string and over the whole rendered page. A saved walk is data (a crafted
one may hold anything): every string is made inert, and every field goes through the Markdown
escaping of `export/markdown.py`.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping
from typing import Any

from trainmedic.export.markdown import code_span, fence, one_line, prose
from trainmedic.redact import REDACTED, is_secret_name, redact_command, redact_text
from trainmedic.textsafe import inert
from trainmedic.trees import Fix, Forest, Question

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


def _node(forest: Forest | None, ref_text: str) -> tuple[str, str, Question | Fix | None]:
    tree_id, _, node_id = str(ref_text).partition("#")
    if forest is None or tree_id not in forest.trees:
        return tree_id, node_id, None
    tree = forest.trees[tree_id]
    return tree_id, node_id or tree.start, tree.nodes.get(node_id or tree.start)


def _path(session: Mapping, forest: Forest | None) -> list[dict]:
    steps = []
    for step in session.get("steps") or []:
        if not isinstance(step, Mapping):
            continue
        _, _, node = _node(forest, str(step.get("node", "")))
        suggested = step.get("suggested")
        suggested_text = None
        if isinstance(suggested, int) and isinstance(node, Question) \
                and 0 <= suggested < len(node.answers):
            suggested_text = str(node.answers[suggested].text)
        steps.append({
            "node": str(step.get("node", "")), "question": str(step.get("question", "")),
            "answer": step.get("answer"), "answer_text": str(step.get("answer_text", "")),
            "goto": str(step.get("goto", "")), "suggested": suggested,
            "suggested_text": suggested_text,
            "followed_suggestion": suggested is not None and suggested == step.get("answer"),
            "evidence": [str(e) for e in step.get("evidence") or []],
        })
    return steps


def _outcome(session: Mapping, forest: Forest | None) -> dict:
    current = str(session.get("current", ""))
    _, _, node = _node(forest, current)
    if isinstance(node, Fix):
        return {"kind": "fix", "node": current, "title": str(node.fix), "why": str(node.why),
                "steps": [{"do": str(s.do), "code": s.code, "lang": s.lang} for s in node.steps],
                "verify": str(node.verify) if node.verify else None,
                "myth": str(node.myth) if node.myth else None}
    if isinstance(node, Question):
        return {"kind": "question", "node": current, "title": str(node.question)}
    return {"kind": "unknown", "node": current, "title": ""}


def _probe_facts(probes: list[dict], name: str) -> dict:
    for probe in probes:
        if probe.get("name") == name and isinstance(probe.get("facts"), Mapping):
            return dict(probe["facts"])
    return {}


def merge_probes(saved: list, fresh: list) -> list[dict]:
    """Latest result per probe name: fresh results replace the saved ones, order kept."""
    merged: dict[str, dict] = {}
    for probe in [*saved, *fresh]:
        data = probe if isinstance(probe, Mapping) else probe.to_dict()
        if isinstance(data, Mapping) and "name" in data:
            merged[str(data["name"])] = dict(data)
    return list(merged.values())


def _triage(raw: object) -> dict | None:
    """The saved triage with anything malformed dropped (a hand-edited file must not crash)."""
    if not isinstance(raw, Mapping):
        return None
    findings = raw.get("findings") if isinstance(raw.get("findings"), list) else []
    files = raw.get("files") if isinstance(raw.get("files"), list) else []
    clean = []
    for finding in findings:
        if not isinstance(finding, Mapping):
            continue
        evidence = finding.get("evidence") if isinstance(finding.get("evidence"), list) else []
        ranks = finding.get("ranks") if isinstance(finding.get("ranks"), list) else []
        clean.append({**finding, "evidence": [e for e in evidence if isinstance(e, Mapping)],
                      "ranks": ranks})
    return {**raw, "findings": clean, "files": [str(f) for f in files]}


def _checklist(session: Mapping, probes: list[dict], triage: Mapping | None,
               repo: Mapping | None) -> list[dict]:
    versions = _probe_facts(probes, "versions")
    env = _probe_facts(probes, "env")
    known = [f"{label} {versions[key]}" for key, label in VERSION_FACTS[:4] if versions.get(key)]
    missing = [label for key, label in VERSION_FACTS[:4] if not versions.get(key)]
    launch = str(session.get("launch_command") or "")
    nccl_debug = str(env.get("nccl_debug", "") or "")
    log_files = [str(f) for f in (triage or {}).get("files") or []]
    log_value = []
    if nccl_debug:
        log_value.append(f"NCCL_DEBUG={nccl_debug} in the probed environment")
    if log_files:
        log_value.append("triaged logs: " + ", ".join(log_files))
    return [
        {"item": "Framework commit (Megatron-LM or the framework you run)",
         "done": repo is not None, "value": _repo_text(repo),
         "hint": "rerun with --repo PATH, or: git -C PATH rev-parse HEAD"},
        {"item": "PyTorch / CUDA / NCCL / TransformerEngine versions",
         "done": not missing, "value": ", ".join(known)
         + (f" (unknown: {', '.join(missing)})" if known and missing else ""),
         "hint": "rerun with --probe, or run `trainmedic probe versions --json`"},
        {"item": "The full launch command, copied as run", "done": bool(launch.strip()),
         "value": "below" if launch.strip() else "",
         "hint": "paste the exact command (sbatch script, torchrun line, environment)"},
        {"item": "Complete logs with NCCL_DEBUG=INFO and TORCH_DISTRIBUTED_DEBUG=DETAIL",
         "done": False, "value": "; ".join(log_value),
         "hint": "export NCCL_DEBUG=INFO TORCH_DISTRIBUTED_DEBUG=DETAIL, rerun, attach every "
                 "rank's log"},
        {"item": "Does it reproduce with a smaller configuration (TP=1 PP=1)?", "done": False,
         "value": "", "hint": "answer yes/no"},
        {"item": "Does it reproduce in an NGC PyTorch container?", "done": False, "value": "",
         "hint": "answer yes/no, with the image tag"},
    ]


def _repo_text(repo: Mapping | None) -> str:
    if not repo:
        return ""
    state = "dirty: uncommitted changes" if repo.get("dirty") else "clean"
    return f"{repo.get('commit', '')} ({state}) in {repo.get('path', '')}"


def build_report(session: Mapping, forest: Forest | None, *, repo: Any = None,
                 fresh_probes: list | None = None) -> dict:
    """Everything the report says, as plain redacted data (the `--json` form)."""
    tree_id = str(session.get("tree") or str(session.get("current", "")).partition("#")[0])
    tree = forest.trees.get(tree_id) if forest is not None else None
    probes = merge_probes([p for p in session.get("probes") or [] if isinstance(p, Mapping)],
                          list(fresh_probes or []))
    triage = _triage(session.get("triage"))
    repo_data = repo.to_dict() if hasattr(repo, "to_dict") else repo
    data = {
        "walk": {"id": str(session.get("id", "")), "tree": tree_id,
                 "tree_title": str(tree.title) if tree else tree_id,
                 "started": str(session.get("started", "")),
                 "updated": str(session.get("updated", "")),
                 "finished": bool(session.get("finished")),
                 "current": str(session.get("current", ""))},
        "outcome": _outcome(session, forest),
        "path": _path(session, forest),
        "probes": probes,
        "triage": triage,
        "repo": repo_data,
        "checklist": _checklist(session, probes, triage, repo_data),
        "launch_command": redact_command(str(session.get("launch_command") or "")),
        "notes": str(session.get("notes") or ""),
    }
    return redact_deep(data)


def render_report(session: Mapping, forest: Forest | None, *, repo: Any = None,
                  fresh_probes: list | None = None) -> str:
    """The Markdown incident report (what the TUI's "report" key shows and saves)."""
    data = build_report(session, forest, repo=repo, fresh_probes=fresh_probes)
    walk = data["walk"]
    out = [f"# Incident report: {one_line(walk['tree_title'])}", "",
           f"Walk {code_span(walk['id'])} of tree {code_span(walk['tree'])}, started "
           f"{one_line(walk['started'] or 'unknown')}, last step "
           f"{one_line(walk['updated'] or 'unknown')}; "
           + ("it reached a fix." if walk["finished"] else "it did not reach a fix."), "",
           "Secrets were redacted by pattern; read this before you attach it anywhere.", "",
           "<!-- Generated by trainmedic report; secrets redacted by pattern. -->", ""]
    out += _render_outcome(data["outcome"])
    out += _render_path(data["path"])
    out += _render_probes(data["probes"])
    out += _render_triage(data["triage"])
    out += _render_checklist(data)
    if data["notes"].strip():
        out += ["## Notes", "", prose(data["notes"]), ""]
    return inert(redact_text("\n".join(out).rstrip("\n") + "\n"))


def _render_outcome(outcome: dict) -> list[str]:
    out = ["## Outcome", ""]
    if outcome["kind"] == "fix":
        out += [f"Fix reached: **{one_line(outcome['title'])}** ({code_span(outcome['node'])}).",
                "", f"**Why.** {prose(outcome['why'])}", ""]
        for index, step in enumerate(outcome["steps"], start=1):
            out.append(f"{index}. {one_line(step['do'])}")
            if step["code"]:
                out += ["", *("   " + line if line else "" for line in
                              fence(step["code"], step["lang"] or "bash"))]
            out.append("")
        if outcome["verify"]:
            out += [f"**Verify.** {prose(outcome['verify'])}", ""]
    elif outcome["kind"] == "question":
        out += [f"The walk stopped at a question ({code_span(outcome['node'])}): "
                f"{one_line(outcome['title'])}", ""]
    else:
        out += [f"The walk stopped at {code_span(outcome['node'] or '?')}, which the loaded "
                "trees no longer contain.", ""]
    return out


def _render_path(path: list[dict]) -> list[str]:
    out = ["## Path taken", ""]
    if not path:
        return [*out, "No question was answered.", ""]
    for index, step in enumerate(path, start=1):
        out.append(f"{index}. **{one_line(step['question'])}** ({code_span(step['node'])})")
        note = ""
        if step["followed_suggestion"]:
            note = " (suggested by the probes)"
        elif step["suggested_text"] is not None:
            note = f" (the probes suggested: {one_line(step['suggested_text'])})"
        out.append(f"   - Answer: {one_line(step['answer_text'])}{note} \u2192 "
                   f"{code_span(step['goto'])}")
        if step["evidence"]:
            out.append("   - Evidence:")
            out += [f"     - {code_span(line)}" for line in step["evidence"]]
    return [*out, ""]


def _render_probes(probes: list[dict]) -> list[str]:
    out = ["## Probe results", ""]
    if not probes:
        return [*out, "No probe results are attached to this walk (rerun with `--probe`).", ""]
    out += ["| Probe | Status | Summary |", "|---|---|---|"]
    for probe in probes:
        out.append(f"| {one_line(probe.get('name', ''), table=True)} | "
                   f"{one_line(probe.get('status', ''), table=True)} | "
                   f"{one_line(probe.get('summary', ''), table=True)} |")
    out.append("")
    for probe in probes:
        body = json.dumps({"facts": probe.get("facts") or {},
                           "evidence": probe.get("evidence") or {}},
                          indent=1, ensure_ascii=False, sort_keys=True)
        # inside an HTML block Markdown is not read: the name is HTML-escaped, not Markdown
        name = html.escape(" ".join(str(probe.get("name", "")).split()))
        out += [f"<details><summary>{name}: facts and raw output</summary>", "",
                *fence(body, "json")]
        if probe.get("raw"):
            out += ["", *fence(str(probe["raw"]), "text")]
        out += ["", "</details>", ""]
    return out


def _render_triage(triage: Mapping | None) -> list[str]:
    out = ["## Triage findings", ""]
    findings = (triage or {}).get("findings") or []
    if not findings:
        return [*out, "No log triage is attached to this walk.", ""]
    for finding in findings:
        link = finding.get("link") or finding.get("tree") or ""
        ranks = finding.get("ranks") or []
        out.append(f"- **{one_line(finding.get('summary', ''))}** "
                   f"({code_span(finding.get('signature', ''))}, confidence "
                   f"{one_line(str(finding.get('confidence', '?')))}"
                   + (f", ranks {one_line(', '.join(str(r) for r in ranks[:16]))}"
                      if ranks else "")
                   + f") \u2192 {code_span('trainmedic walk ' + link)}")
        lines = [f"{e.get('file', '')}:{e.get('line', '')}: {e.get('text', '')}"
                 for e in finding.get("evidence") or [] if isinstance(e, Mapping)]
        if lines:
            out += ["", *("  " + line if line else "" for line in fence("\n".join(lines),
                                                                        "text"))]
        out.append("")
    return out


def _render_checklist(data: dict) -> list[str]:
    out = ["## Minimum information for a bug report", "",
           "What maintainers ask for first (seed 000 §11.9); tick the open boxes before filing.",
           ""]
    for item in data["checklist"]:
        box = "x" if item["done"] else " "
        detail = item["value"] if item["value"] else f"to do: {item['hint']}"
        out.append(f"- [{box}] **{one_line(item['item'])}**: {one_line(detail)}")
    if data["launch_command"].strip():
        out += ["", "Launch command:", "", *fence(data["launch_command"], "bash")]
    return [*out, ""]
