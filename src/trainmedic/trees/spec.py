"""The tree format's keys, in one place.

The loader validates YAML against these tables and `schema.py` turns the same tables into the
JSON Schema that ships with the package; a test holds the key table of docs/tree-format.md to
them, so the documentation, the editor schema and the loader cannot drift apart.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

ID_RE = re.compile(r"^[a-z0-9][a-z0-9-]*$")
# `node`, `tree-id` or `tree-id#node`
GOTO_RE = re.compile(r"^[a-z0-9][a-z0-9-]*(#[a-z0-9][a-z0-9-]*)?$")
LANGS = ("bash", "python", "yaml", "json", "text", "console", "toml", "ini")
OPS = ("==", "!=", "<=", ">=", "<", ">", "contains")
RULE_RE = re.compile(
    r"^\s*(?P<fact>[a-z0-9][a-z0-9-]*\.[a-z0-9_]+)\s*"
    r"(?P<op>==|!=|<=|>=|<|>|contains)\s*(?P<value>\S.*?)\s*$"
)
MAX_ANSWERS = 9  # number keys 1-9 in the app
# A value the reader must fill in before running a command: `<GPU_INDEX>`, `<NODE>`, `<WATTS>`.
# Upper-case so it cannot be mistaken for a real argument; a shell refuses to run it unfilled.
PLACEHOLDER_RE = re.compile(r"<[A-Z][A-Z0-9_]*>")

# What a `danger:` mark can say a step does (kind -> what it means), and what a step `needs:`.
DANGER_KINDS = {
    "reboot": "reboots or powers off the node",
    "gpu-reset": "resets one or more GPUs",
    "power-limit": "changes a GPU's power limit",
    "kernel-module": "loads, unloads or rebuilds kernel modules (modprobe -r, rmmod, dkms)",
    "sysctl": "changes a kernel setting for the whole node",
    "firewall": "changes the node's firewall",
    "service-restart": "starts, stops or restarts a system service",
    "node-state": "drains, resumes or downs a node in the scheduler",
    "kill": "ends processes",
    "force-reinstall": "reinstalls packages over an existing environment",
    "delete-data": "deletes files that cannot be recovered",
    "stress-test": "runs a long stress test that takes the GPUs for itself",
}
NEEDS = {
    "root": "root on the node",
    "slurm-operator": "a Slurm operator or admin",
    "drained-node": "a node drained of other jobs",
    "idle-gpus": "GPUs with no process on them",
}

# -- targets: the framework (and versions) a fix or step is written for ----------------------
# Lint checks flags against the list of the named framework; see trees/apicheck.py.
FRAMEWORKS = ("megatron-lm", "megatron-deepspeed", "deepspeed", "hf-transformers",
              "hf-accelerate", "pytorch", "torchtitan", "nccl", "transformer-engine", "slurm")
_VERSION = r"\d+(?:\.\d+){0,2}"
_VERSION_ITEM = rf"\s*(?:{_VERSION}\s*-\s*{_VERSION}|(?:>=|<=|==|>|<)?\s*{_VERSION})\s*"
# ">=0.12", "0.10-0.15", "<0.16", "0.13", or several joined by commas (all must hold)
VERSIONS_RE = re.compile(rf"^{_VERSION_ITEM}(?:,{_VERSION_ITEM})*$")
TARGET_KEYS_DOC = {"framework": "one of " + ", ".join(FRAMEWORKS),
                   "versions": "version range, e.g. '>=0.12', '0.10-0.15', '<2.24'"}


@dataclass(frozen=True)
class Key:
    name: str
    kind: str  # see KINDS
    required: bool
    doc: str


# the kinds of a log signature (see the section on log signatures below)
SIG_KINDS = {
    "cause": "the failure itself (an OOM, an Xid, a bad configuration)",
    "symptom": "what other ranks or layers print because of a cause (a watchdog timeout)",
    "context": "helps read the other findings (a launcher's summary), never the answer alone",
}
KINDS = {
    "id": "lower-case id: letters, digits and '-'",
    "text": "text, or a mapping of language code to text with `en` required",
    "string": "plain string",
    "goto": "`node`, `tree-id` or `tree-id#node`",
    "rules": "a rule `probe.fact OP value`, or a list of them (all must hold)",
    "strings": "a string or a list of strings",
    "lang": "code language: " + ", ".join(LANGS),
    "answers": "list of answers",
    "steps": "list of steps",
    "refs": "list of references",
    "nodes": "mapping of node id to node",
    "danger": "a mapping {kind, effect}",
    "danger-kind": "what the command does: " + ", ".join(DANGER_KINDS),
    "needs": "one of, or a list of: " + ", ".join(NEEDS),
    "targets": "a framework name, or {framework, versions}",
    "signatures": "list of log signatures: messages that lead triage to this node",
    "sig-kind": "one of: " + ", ".join(SIG_KINDS),
    "number": "a number",
    "fraction": "a number from 0 to 1",
    "regex": "a Python regular expression, searched in the line (write it in 'single quotes')",
    "routes": "list of routes: where a match goes instead, and when",
}

# -- log signatures: what triage recognises in a log, declared on the node it leads to ----------
NEAR_LINES = 40  # how far above a match `near` looks
MIN_NEEDLE = 4  # shorter needles make the prefilter stop on most lines of a log

TREE_KEYS = (
    Key("id", "id", True, "Unique tree id; other trees link to it as `id` or `id#node`."),
    Key("title", "text", True, "Short title shown in lists."),
    Key("summary", "text", True, "One paragraph: what this tree diagnoses."),
    Key("start", "id", True, "The node the walk begins at."),
    Key("tags", "strings", False, "Free words for search."),
    Key("nodes", "nodes", True, "The nodes, by id: each is a question or a fix."),
)

SIGNATURES_KEY = Key("signatures", "signatures", False,
                     "Log signatures: messages that lead `trainmedic triage` to this node.")

QUESTION_KEYS = (
    Key("question", "text", True, "The question, answerable from a login node."),
    Key("help", "text", False, "How to find the answer: commands to run, what to look for."),
    Key("answers", "answers", True, "Answers, most likely first (keys 1-9)."),
    Key("source", "strings", False, "Where the knowledge came from (seed section, document)."),
    SIGNATURES_KEY,
)

FIX_KEYS = (
    Key("fix", "text", True, "The fix's title."),
    Key("why", "text", True, "Why this happens: the mechanism, not a guess."),
    Key("steps", "steps", True, "Ordered steps; at least one carries a command, flag or code."),
    Key("verify", "text", False, "How to tell that the fix worked."),
    Key("myth", "text", False, "A widespread but wrong remedy, named and corrected."),
    Key("refs", "refs", False, "References: documentation, issues, source files."),
    Key("source", "strings", False, "Where the knowledge came from (seed section, document)."),
    Key("targets", "targets", False, "Framework and versions the fix is for (lint checks its "
        "flags against that framework's list)."),
    SIGNATURES_KEY,
)

SIGNATURE_KEYS = (
    Key("id", "id", True, "Unique across all trees; triage names its findings by it."),
    Key("title", "text", True, "What the message means, in a few words (the finding's summary)."),
    Key("kind", "sig-kind", True, "cause, symptom or context: causes are listed before the "
        "symptoms other ranks print because of them."),
    Key("needles", "strings", False, "Plain substrings, case-sensitive, at least "
        f"{MIN_NEEDLE} characters: a line holding one is a candidate (the fast prefilter). "
        "Required unless `derive` is given."),
    Key("match", "regex", False, "A regular expression the candidate line must also match."),
    Key("exclude", "regex", False, "A regular expression that vetoes the line (known noise)."),
    Key("example", "strings", False, "A real line (or a list of them) the signature must "
        "recognise; lint checks it. Required with `needles`."),
    Key("counterexample", "strings", False, "A line (or a list) the signature must not recognise."),
    Key("weight", "number", False, "Decisiveness among findings of the same kind, higher first "
        "(default 5)."),
    Key("confidence", "fraction", False, "How sure a match makes triage, 0 to 1 (default 0.8)."),
    Key("short", "string", False, "A short plural name used when a cause explains these "
        "('NCCL watchdog timeouts')."),
    Key("hook", "id", False, "A named piece of the program for what data cannot express "
        "(reading OOM sizes, Xid codes); `trainmedic lint` lists the known ones."),
    Key("derive", "id", False, "Instead of needles: the finding comes from an analysis of the "
        "whole log (the loss series, the ranks' watchdog lines)."),
    Key("routes", "routes", False, "Where a match goes instead of this node, and when; the "
        "first route whose conditions all hold wins."),
)

ROUTE_KEYS = (
    Key("goto", "goto", True, "`node`, `tree-id` or `tree-id#node`."),
    Key("line", "regex", False, "The matched line also matches this regular expression."),
    Key("near", "strings", False, "One of these substrings is on the matched line or on the "
        f"lines just before it (within {NEAR_LINES} lines: the traceback above an error)."),
    Key("outcome", "id", False, "The signature's hook concluded this (e.g. `fragmented`)."),
    Key("example", "string", False, "A line this route takes (checked against `line`)."),
)

ANSWER_KEYS = (
    Key("text", "text", True, "The answer as the user would say it."),
    Key("goto", "goto", True, "Next node: `node`, `tree-id` or `tree-id#node`."),
    Key("when", "rules", False, "Probe rules that, all holding, suggest this answer."),
    Key("because", "text", False, "Why the rules point at this answer (shown as evidence)."),
)

STEP_KEYS = (
    Key("do", "text", True, "What to do, in one or two sentences."),
    Key("code", "string", False, "The exact command, flags, environment or code to paste."),
    Key("lang", "lang", False, "Language of `code` (default bash)."),
    Key("danger", "danger", False,
        "Marks a destructive or disruptive command: what it does and its consequence."),
    Key("needs", "needs", False,
        "What running the step takes: root, slurm-operator, drained-node, idle-gpus."),
    Key("targets", "targets", False, "Framework and versions of this step, when it differs "
        "from the fix's."),
)

DANGER_KEYS = (
    Key("kind", "danger-kind", True, "What the command does (reboot, gpu-reset, kill, ...)."),
    Key("effect", "text", True, "One line: what it does to the node, to other jobs or users."),
)

REF_KEYS = (
    Key("title", "text", True, "What the reference is."),
    Key("url", "string", False, "Where to read it."),
)

OBJECTS: dict[str, tuple[Key, ...]] = {
    "tree": TREE_KEYS,
    "question": QUESTION_KEYS,
    "fix": FIX_KEYS,
    "answer": ANSWER_KEYS,
    "step": STEP_KEYS,
    "danger": DANGER_KEYS,
    "ref": REF_KEYS,
    "signature": SIGNATURE_KEYS,
    "route": ROUTE_KEYS,
}
