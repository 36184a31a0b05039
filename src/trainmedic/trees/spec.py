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
}

TREE_KEYS = (
    Key("id", "id", True, "Unique tree id; other trees link to it as `id` or `id#node`."),
    Key("title", "text", True, "Short title shown in lists."),
    Key("summary", "text", True, "One paragraph: what this tree diagnoses."),
    Key("start", "id", True, "The node the walk begins at."),
    Key("tags", "strings", False, "Free words for search."),
    Key("nodes", "nodes", True, "The nodes, by id: each is a question or a fix."),
)

QUESTION_KEYS = (
    Key("question", "text", True, "The question, answerable from a login node."),
    Key("help", "text", False, "How to find the answer: commands to run, what to look for."),
    Key("answers", "answers", True, "Answers, most likely first (keys 1-9)."),
    Key("source", "strings", False, "Where the knowledge came from (seed section, document)."),
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
}
