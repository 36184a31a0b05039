"""Mermaid's own parser (under Node + jsdom, no browser) accepts every exported diagram.

Runs only where `node` and `scripts/mermaid/node_modules` exist (`npm install --prefix
scripts/mermaid`); the strict Python grammar check in test_export_markdown.py runs everywhere.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from trainmedic.export.mermaid import tree_diagram

SCRIPT_DIR = Path(__file__).resolve().parents[2] / "scripts" / "mermaid"


def _parse(diagrams: list[str]) -> list[str | None]:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: Mermaid's own parser cannot run here")
    if not (SCRIPT_DIR / "node_modules" / "mermaid").is_dir():
        pytest.skip("Mermaid is not installed: run `npm install --prefix scripts/mermaid`")
    done = subprocess.run([node, str(SCRIPT_DIR / "parse.mjs")], input=json.dumps(diagrams),
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_mermaid_parses_every_exported_diagram(builtin_forest, examples_forest, escaping_forest):
    diagrams = {f"{tree.id}": tree_diagram(forest, tree)
                for forest in (builtin_forest, examples_forest, escaping_forest)
                for tree in forest.trees.values()}
    results = _parse(list(diagrams.values()))
    errors = {name: err for name, err in zip(diagrams, results, strict=True) if err}
    assert errors == {}


def test_the_parser_check_can_fail():
    bad = 'flowchart TD\n    q1["unbalanced] --> q2\n'
    (error,) = _parse([bad])
    assert error and "Parse error" in error
