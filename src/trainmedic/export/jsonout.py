"""A tree as normalised JSON: every default filled in, every link resolved, every source line.

Other tools (a wiki generator, a chat bot) read this instead of re-implementing the YAML rules.
Text with translations becomes `{"en": ..., "zh": ...}`; plain text stays a string.
"""

from __future__ import annotations

from pathlib import Path

from trainmedic.trees import Fix, Forest, Question, Text, Tree, builtin_tree_dir


def text(value: Text | str | None) -> object:
    if value is None:
        return None
    if isinstance(value, Text) and value.translations:
        translations = value.translations
        return {"en": str(value), **{k: translations[k] for k in sorted(translations)}}
    return str(value)


def source_file(file: str) -> str:
    """A path that does not depend on the working directory for built-in trees."""
    path = Path(file).resolve()
    base = builtin_tree_dir().resolve()
    try:
        return str(Path("trees") / path.relative_to(base)).replace("\\", "/")
    except ValueError:
        return file.replace("\\", "/")


def tree_json(forest: Forest, tree: Tree) -> dict:
    questions, fixes = forest.counts(tree.id)
    return {
        "id": tree.id,
        "title": text(tree.title),
        "summary": text(tree.summary),
        "tags": list(tree.tags),
        "start": tree.start,
        "file": source_file(tree.file),
        "line": tree.src.line,
        "counts": {"questions": questions, "fixes": fixes},
        "nodes": [_node(forest, tree, node) for node in tree.nodes.values()],
    }


def _node(forest: Forest, tree: Tree, node: Question | Fix) -> dict:
    if isinstance(node, Question):
        return {
            "id": node.id, "kind": "question", "line": node.src.line,
            "question": text(node.question), "help": text(node.help),
            "source": list(node.source),
            "answers": [
                {
                    "text": text(answer.text), "goto": answer.goto,
                    "target": str(ref) if (ref := forest.resolve(tree.id, answer.goto)) else None,
                    "when": [{"fact": r.fact, "op": r.op, "value": r.value, "line": r.src.line}
                             for r in answer.when],
                    "because": text(answer.because), "line": answer.src.line,
                }
                for answer in node.answers
            ],
        }
    return {
        "id": node.id, "kind": "fix", "line": node.src.line,
        "fix": text(node.fix), "why": text(node.why),
        "steps": [{"do": text(s.do), "code": s.code, "lang": s.lang, "line": s.src.line,
                   "danger": ({"kind": s.danger.kind, "effect": text(s.danger.effect)}
                              if s.danger else None),
                   "needs": list(s.needs)}
                  for s in node.steps],
        "verify": text(node.verify), "myth": text(node.myth),
        "refs": [{"title": text(r.title), "url": r.url, "line": r.src.line} for r in node.refs],
        "source": list(node.source),
    }
