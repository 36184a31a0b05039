"""The JSON Schema of the tree format, generated from `spec.py` so the two cannot drift."""

from __future__ import annotations

from typing import Any

from trainmedic.trees import spec

SCHEMA_ID = "https://github.com/trainmedic/trainmedic/schema/tree.schema.json"


def _kind(kind: str) -> dict[str, Any]:
    text = {"oneOf": [
        {"type": "string", "minLength": 1},
        {"type": "object", "required": ["en"],
         "additionalProperties": {"type": "string"},
         "description": "translations by language code; 'en' is required"},
    ]}
    rule = {"type": "string", "pattern": spec.RULE_RE.pattern}
    need = {"enum": list(spec.NEEDS)}
    framework = {"enum": list(spec.FRAMEWORKS)}
    targets = {"oneOf": [framework, {
        "type": "object", "required": ["framework"], "additionalProperties": False,
        "properties": {
            "framework": {**framework, "description": spec.TARGET_KEYS_DOC["framework"]},
            "versions": {"type": "string", "pattern": spec.VERSIONS_RE.pattern,
                         "description": spec.TARGET_KEYS_DOC["versions"]}}}]}
    table: dict[str, dict[str, Any]] = {
        "id": {"type": "string", "pattern": spec.ID_RE.pattern},
        "text": text,
        "string": {"type": "string"},
        "goto": {"type": "string", "pattern": spec.GOTO_RE.pattern},
        "rules": {"oneOf": [rule, {"type": "array", "items": rule, "minItems": 1}]},
        "strings": {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]},
        "lang": {"enum": list(spec.LANGS)},
        "answers": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/answer"}},
        "steps": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/step"}},
        "refs": {"type": "array", "items": {"$ref": "#/$defs/ref"}},
        "danger": {"$ref": "#/$defs/danger"},
        "danger-kind": {"enum": list(spec.DANGER_KINDS)},
        "needs": {"oneOf": [need, {"type": "array", "items": need, "minItems": 1,
                                   "uniqueItems": True}]},
        "targets": targets,
        "signatures": {"type": "array", "items": {"$ref": "#/$defs/signature"}},
        "sig-kind": {"enum": list(spec.SIG_KINDS)},
        "number": {"type": ["number", "string"], "pattern": r"^-?\d+(\.\d+)?$"},
        "fraction": {"type": ["number", "string"], "minimum": 0, "maximum": 1,
                     "pattern": r"^(0(\.\d+)?|1(\.0+)?)$"},
        "regex": {"type": "string", "format": "regex", "minLength": 1},
        "routes": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/route"}},
        "nodes": {
            "type": "object", "minProperties": 1,
            "propertyNames": {"pattern": spec.ID_RE.pattern},
            "additionalProperties": {"oneOf": [{"$ref": "#/$defs/question"},
                                               {"$ref": "#/$defs/fix"}]},
        },
    }
    return table[kind]


def _object(keys: tuple[spec.Key, ...], description: str) -> dict[str, Any]:
    return {
        "type": "object",
        "description": description,
        "properties": {k.name: {**_kind(k.kind), "description": k.doc} for k in keys},
        "required": [k.name for k in keys if k.required],
        "additionalProperties": False,
    }


def tree_schema() -> dict[str, Any]:
    root = _object(spec.TREE_KEYS, "A trainmedic decision tree.")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "trainmedic tree",
        **root,
        "$defs": {
            "question": _object(spec.QUESTION_KEYS, "A question node."),
            "fix": _object(spec.FIX_KEYS, "A fix node."),
            "answer": _object(spec.ANSWER_KEYS, "One answer of a question."),
            "step": _object(spec.STEP_KEYS, "One step of a fix."),
            "danger": _object(spec.DANGER_KEYS, "What a disruptive command does, and to whom."),
            "ref": _object(spec.REF_KEYS, "A reference."),
            "signature": _object(spec.SIGNATURE_KEYS, "A log signature: a message in a "
                                 "training log that leads triage to this node."),
            "route": _object(spec.ROUTE_KEYS, "Where a signature's match goes instead, "
                             "and when."),
        },
    }
