"""Every tree#node triage can point to exists, and signatures agree with the trees' own routing.

The links come from the signatures' own declarations (their node, their routes); nothing here
repeats them.
"""

from __future__ import annotations

import re

import pytest

from trainmedic.trees.forest import load_forest
from trainmedic.trees.siglint import check_signatures
from trainmedic.triage import triage_text
from trainmedic.triage.signatures import compile_forest, lint_hooks


@pytest.fixture(scope="module")
def forest():
    return load_forest()


def test_every_declared_link_resolves(forest):
    assert check_signatures(forest, lint_hooks()) == []
    sigs = forest.signatures()
    assert len(sigs) >= 40
    for sig in sigs:
        assert sig.node in forest.trees[sig.tree].nodes, sig.id
        for route in sig.routes:
            assert forest.resolve(sig.tree, route.goto) is not None, (sig.id, route.goto)


def test_every_signature_recognises_its_own_examples_through_triage(forest):
    """Lint checks the rule; this checks the real scanner (prefilter, needles, overlaps)."""
    for sig in forest.signatures():
        # a warning healthy runs also print leads alone only when the user says the job froze
        # (or, for a performance hint or a transport notice, that it is slow)
        symptom = {"in-trouble": "hang", "slow-or-trouble": "slow",
                   "when-slow": "slow"}.get(sig.hook or "")
        for example in sig.examples:
            findings = triage_text(example, symptom=symptom).findings
            found = {f.signature for f in findings}
            also = {a["signature"] for f in findings for a in f.details.get("also", [])}
            if sig.hook == "overflow-burst":
                continue  # a single overflow line is warm-up noise by design
            if sig.hook == "gpu-process-rows":
                continue  # one process row is one process: the pattern needs the whole table
            assert sig.id in found | also, (sig.id, example)


@pytest.mark.parametrize(("code", "node"), [(79, "fallen-off-bus"), (48, "ecc"), (74, "nvlink"),
                                            (119, "gsp"), (13, "app-fault"), (61, "gpu-reset"),
                                            (999, "xid-other")])
def test_xid_code_picks_the_hardware_node(code: int, node: str) -> None:
    line = f"[Mon Nov 30 03:12:44 2026] NVRM: Xid (PCI:0000:2b:00): {code}, pid=4242, name=python"
    finding = triage_text(line).findings[0]
    assert (finding.tree, finding.node) == ("hardware", node)


# -- signature and tree agree ----------------------------------------------------------------

_QUOTED = re.compile(r"`([^`]{12,})`|'([^']{12,})'")


def _quoted_messages(forest):
    """(question's tree, answer's target, message) for every message an answer quotes, where
    the question sorts errors: the triage tree's `died`, and each tree's first question."""
    questions = [forest.trees["triage"].nodes["died"]]
    questions += [t.nodes[t.start] for t in forest.trees.values() if t.id != "triage"]
    for q in questions:
        tree = _tree_of(forest, q)
        for answer in getattr(q, "answers", []):
            target = forest.resolve(tree, answer.goto)
            for m in _QUOTED.finditer(answer.text):
                yield tree, target, (m.group(1) or m.group(2)).strip()


def _tree_of(forest, node) -> str:
    return next(t.id for t in forest.trees.values() if node in t.nodes.values())


def _below(forest, start, ref) -> bool:
    """`ref` is `start` or reachable from it by answers (the walk can get there)."""
    seen, todo = set(), [start]
    while todo:
        cur = todo.pop()
        if cur == ref:
            return True
        if cur in seen:
            continue
        seen.add(cur)
        node = forest.node(cur)
        for answer in getattr(node, "answers", []):
            nxt = forest.resolve(cur.tree, answer.goto)
            if nxt is not None:
                todo.append(nxt)
    return False


def test_signatures_follow_the_trees_routing_of_the_same_message(forest):
    """Where a question quotes a message and sends it somewhere, triage of that message lands
    at that node or below it. The triage tree (the entry) is followed everywhere ('illegal
    memory access' goes where it sends it); another tree's first question is followed when
    the finding is in that tree (a tree may add a condition the log cannot show, such as
    "and no Xid I can find")."""
    checked = []
    quoted = list(_quoted_messages(forest))
    by_triage = {message for tree, _t, message in quoted if tree == "triage"}
    for tree, target, message in quoted:
        findings = triage_text(message).findings
        if not findings or findings[0].guess or target is None:
            continue
        top = findings[0]
        ref = forest.parse_ref(top.link)
        if tree != "triage" and (ref.tree != tree or message in by_triage):
            continue
        checked.append(message)
        assert _below(forest, target, ref), (message, str(target), top.link)
    assert len(checked) >= 10, checked


def test_illegal_memory_access_goes_where_the_triage_tree_sends_it(forest):
    died = forest.trees["triage"].nodes["died"]
    answer = next(a for a in died.answers if "illegal memory access" in a.text)
    top = triage_text("RuntimeError: CUDA error: an illegal memory access was encountered")
    assert top.findings[0].link == answer.goto


def test_compiled_signatures_match_the_declarations(forest):
    compiled = compile_forest(forest)
    assert {s.id for s in compiled.signatures} == {s.id for s in forest.signatures()}
    assert set(compiled.derived) >= {"loss-nan", "loss-spike", "rank-behind", "rank-mismatch"}
