"""What every `--json` output starts with: its schema version and the trainmedic version; and
the JSON Schemas of the outputs scripts read most.

One helper for every command, so a script reading any output can tell which shape it reads
(`schema_version`, which changes when a field is removed or changes meaning) and which release
wrote it (`trainmedic_version`, the same string `trainmedic --version` prints). `trainmedic
schema --output NAME` prints the JSON Schema of one output; the tests validate real outputs
against them. (Triage also tells a file trainmedic wrote from a log by the stamp.)
"""

from __future__ import annotations

from typing import Any

from trainmedic import __version__

SCHEMA_BASE = "https://github.com/trainmedic/trainmedic/schema/"

VERSIONS = {"triage": 1, "memory": 1, "probe": 1, "preflight": 1, "lint": 1, "export": 1,
            "cluster": 1, "report": 1, "walk": 1, "drill": 1}


def stamped(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    """`payload` with its schema version and the trainmedic version first."""
    return {"schema_version": VERSIONS[kind], "trainmedic_version": __version__, **payload}


def _version(kind: str) -> dict[str, Any]:
    return {"const": VERSIONS[kind], "description": "Changes when a field is removed or changes "
            "meaning; new fields may appear in any version."}


_NUM = {"type": "number"}
_STR = {"type": "string"}
_INT = {"type": "integer"}
_NULL_STR = {"type": ["string", "null"]}
_NULL_INT = {"type": ["integer", "null"]}

_EVIDENCE = {
    "type": "object",
    "required": ["file", "line", "text"],
    "properties": {"file": _STR, "line": _INT, "text": _STR, "rank": _NULL_INT,
                   "host": _NULL_STR},
}
_FINDING = {
    "type": "object",
    "required": ["signature", "tree", "node", "link", "confidence", "summary", "kind", "guess",
                 "why", "count", "ranks", "evidence", "details"],
    "properties": {
        "signature": _STR, "tree": _STR, "node": _NULL_STR,
        "link": {"type": "string", "description": "`tree` or `tree#node`: trainmedic walk LINK"},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        "summary": _STR,
        "kind": {"enum": ["cause", "symptom", "guess", "context"],
                 "description": "cause > symptom > guess (no signature knew it) > context"},
        "guess": {"type": "boolean"},
        "why": _STR, "count": _INT,
        "ranks": {"type": "array", "items": _INT},
        "hosts": {"type": "array", "items": _STR},
        "first_time": _NULL_STR,
        "evidence": {"type": "array", "items": _EVIDENCE},
        "details": {"type": "object"},
        "fits_symptom": {"type": "boolean", "description": "only with --symptom: whether the "
                         "finding's tree or node fits what the user saw"},
    },
}
_SYMPTOM = {
    "type": "object",
    "required": ["given", "said", "used", "summary"],
    "description": "only with --symptom: what the user saw and how it was used",
    "properties": {
        "given": {"enum": ["hang", "crash", "slow", "diverged", "not-learning"]},
        "said": _STR,
        "used": {"enum": ["fits", "outranked", "lead"],
                 "description": "fits: the first finding fits it (findings that fit come "
                 "first); outranked: a clear cause that does not fit still leads; lead: nothing "
                 "in the log fits, so the first finding comes from the answer (signature "
                 "reported-symptom)"},
        "summary": _STR,
    },
}
_CHECK = {
    "type": "object",
    "required": ["name", "status", "message"],
    "properties": {"name": _STR, "status": {"enum": ["pass", "warn", "fail", "skip"]},
                   "message": _STR},
}
_MEMORY_REQUIRED = ("weight_and_optimizer_mib", "activation_mib", "total_mib", "capacity_mib",
                    "verdict")
_MEMORY_PROPERTIES: dict[str, Any] = {
    "weight_and_optimizer_mib": _NUM, "activation_mib": _NUM, "total_mib": _NUM,
    "capacity_mib": {"type": ["number", "null"]}, "capacity_source": _NULL_STR,
    "verdict": _STR,
    "stages": {"type": "array", "items": {"type": "object"}},
    "suggestions": {"type": "array", "items": {"type": "object"}},
    "checks": {"type": "array", "items": _CHECK},
    "notes": {"type": "array", "items": _STR},
    "inputs": {"type": "object"},
}
_MEMORY = {"type": "object", "required": list(_MEMORY_REQUIRED), "properties": _MEMORY_PROPERTIES}


def _schema(kind: str, title: str, required: list[str],
            properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"{SCHEMA_BASE}{kind}.schema.json",
        "title": title,
        "type": "object",
        "required": ["schema_version", "trainmedic_version", *required],
        "properties": {"schema_version": _version(kind),
                       "trainmedic_version": {"type": "string"}, **properties},
    }


SCHEMAS: dict[str, dict[str, Any]] = {
    "triage": _schema("triage", "trainmedic triage --json", [
        "findings", "loss", "ranks", "files", "candidate_lines", "skipped", "errors", "next"], {
        "findings": {"type": "array", "items": _FINDING,
                     "description": "most decisive first"},
        "loss": {"type": "object"},
        "ranks": {"type": "object"},
        "files": {"type": "array", "items": _STR},
        "candidate_lines": _INT,
        "skipped": {"type": "array", "items": {
            "type": "object", "required": ["file", "reason"],
            "properties": {"file": _STR, "reason": _STR}}},
        "root_cause": {"type": ["object", "null"], "description": "the launcher's first "
                       "observed failure: rank, host, exitcode"},
        "errors": {"type": "integer", "description": "lines holding an error word "
                   "(Error, Exception, Killed, an exit code, ...; frame lines aside), known or "
                   "not, among the lines triage read (a line whose only needle is a generic "
                   "error word is left to the guess, not read): a cheap count, not each "
                   "line's verdict"},
        "next": {"type": ["string", "null"], "description": "the walk command to continue"},
        "symptom": _SYMPTOM,
    }),
    "memory": _schema("memory", "trainmedic memory --json", list(_MEMORY_REQUIRED),
                      _MEMORY_PROPERTIES),
    "probe": _schema("probe", "trainmedic probe --json", ["host", "time", "probes"], {
        "host": _STR, "time": _STR,
        "probes": {"type": "array", "items": {
            "type": "object", "required": ["name", "status", "summary", "facts"],
            "properties": {"name": _STR,
                           "status": {"enum": ["ok", "warn", "fail", "unavailable", "unknown"]},
                           "summary": _STR, "facts": {"type": "object"},
                           "evidence": {"type": "object"}, "duration_s": _NUM,
                           "raw": _NULL_STR}}},
    }),
    "preflight": _schema("preflight", "trainmedic preflight --json",
                         ["ok", "checks", "memory"], {
        "ok": {"type": "boolean"},
        "checks": {"type": "array", "items": _CHECK},
        "memory": {"oneOf": [_MEMORY, {"type": "null"}],
                   "description": "null when the script holds no model to estimate"},
        "training_command": {"type": ["object", "null"]},
    }),
}
