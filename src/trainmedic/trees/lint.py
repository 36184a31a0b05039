"""Prove a forest sound: references, reachability, cycles, dead ends, concrete fixes, probe facts.

The forest becomes one networkx DiGraph over `tree#node` names, cross-tree links included, so
every structural check is one graph query and stays linear in the size of the forest.
"""

from __future__ import annotations

from collections.abc import Iterable

from trainmedic.trees.danger import check_danger
from trainmedic.trees.forest import Forest, Ref
from trainmedic.trees.model import Question, Rule
from trainmedic.trees.problems import Problem
from trainmedic.trees.siglint import Hooks, check_signatures

_NUMERIC = {"int", "float"}


def check_references(forest: Forest) -> list[Problem]:
    """Cheap checks that need no graph: start nodes and every `goto` resolve."""
    problems = []
    for tree in forest.trees.values():
        if tree.start and tree.start not in tree.nodes:
            message = f"start node '{tree.start}' does not exist in tree '{tree.id}'"
            problems.append(Problem(tree.file, tree.start_src.line, "error", message))
        for node in tree.questions():
            for answer in node.answers:
                target_tree = answer.goto.split("#", 1)[0]
                if target_tree in forest.unloaded and target_tree not in forest.trees:
                    continue  # that file's own error is reported; this would only repeat it
                if forest.resolve(tree.id, answer.goto) is None:
                    problems.append(Problem(tree.file, answer.src.line, "error",
                                            _unresolved(forest, tree.id, answer.goto)))
    return problems


def _unresolved(forest: Forest, tree_id: str, goto: str) -> str:
    if "#" in goto:
        other, node = goto.split("#", 1)
        if other not in forest.trees:
            return f"link '{goto}' names tree '{other}', which does not exist"
        return f"link '{goto}': tree '{other}' has no node '{node}'"
    return f"'goto: {goto}' is neither a node of tree '{tree_id}' nor a tree id"


def build_graph(forest: Forest):  # -> networkx.DiGraph
    import networkx as nx

    graph = nx.DiGraph()
    for ref, node in forest.iter_nodes():
        graph.add_node(str(ref), kind=node.kind, tree=ref.tree)
    for ref, node in forest.iter_nodes():
        if isinstance(node, Question):
            for answer in node.answers:
                target = forest.resolve(ref.tree, answer.goto)
                if target is not None:
                    graph.add_edge(str(ref), str(target), line=answer.src.line)
    return graph


def check_graph(forest: Forest, graph) -> list[Problem]:
    import networkx as nx

    problems: list[Problem] = []
    # Cycles: any strongly connected component larger than one node, or a self-loop.
    for component in nx.strongly_connected_components(graph):
        if len(component) == 1:
            (only,) = component
            if not graph.has_edge(only, only):
                continue
        cycle = nx.find_cycle(graph.subgraph(component), source=min(component))
        first, second = cycle[0][0], cycle[0][1]
        tree_id, node_id = first.split("#", 1)
        path = " -> ".join([u for u, _v in cycle] + [cycle[-1][1]])
        problems.append(Problem(forest.trees[tree_id].file, graph.edges[first, second]["line"],
                                "error", f"cycle: {path}"))
    # Reachability: from the tree's own start, or from a link in another tree.
    entries = [str(Ref(t.id, t.start)) for t in forest.trees.values() if t.start in t.nodes]
    linked = {v for u, v in graph.edges if u.split("#", 1)[0] != v.split("#", 1)[0]}
    reachable: set[str] = set()
    for entry in [*entries, *sorted(linked)]:
        if entry not in reachable:
            reachable |= nx.descendants(graph, entry) | {entry}
    for ref, node in forest.iter_nodes():
        tree = forest.trees[ref.tree]
        if str(ref) not in reachable and tree.start in tree.nodes:
            problems.append(Problem(tree.file, node.src.line, "error",
                                    f"node '{ref.node}' is unreachable from start '{tree.start}'"))
    # Dead ends: every path must end at a fix.
    for name in graph.nodes:
        if graph.out_degree(name) == 0 and graph.nodes[name]["kind"] != "fix":
            tree_id, node_id = name.split("#", 1)
            node = forest.trees[tree_id].nodes[node_id]
            if isinstance(node, Question) and not node.answers:
                continue  # the loader already said the answers are missing or malformed
            message = f"question '{node_id}' leads nowhere; every path must end at a fix"
            problems.append(Problem(forest.trees[tree_id].file, node.src.line, "error", message))
    return problems


def check_fixes(forest: Forest) -> list[Problem]:
    problems = []
    for tree in forest.trees.values():
        for fix in tree.fixes():
            if fix.steps and not any(step.code for step in fix.steps):
                problems.append(Problem(tree.file, fix.src.line, "error",
                                        f"fix '{fix.id}' has no concrete step: give at least one "
                                        "step a 'code' (command, flag, variable or code)"))
    return problems


def check_rules(forest: Forest, declared: dict[str, dict[str, str]]) -> list[Problem]:
    problems = []
    for tree in forest.trees.values():
        for question in tree.questions():
            for answer in question.answers:
                for rule in answer.when:
                    message = _rule_problem(rule, declared)
                    if message:
                        problems.append(Problem(tree.file, rule.src.line, "error", message))
    return problems


def _rule_problem(rule: Rule, declared: dict[str, dict[str, str]]) -> str | None:
    facts = declared.get(rule.probe)
    if facts is None:
        known = ", ".join(sorted(declared)) or "none are registered"
        return f"rule '{rule}': no probe named '{rule.probe}' ({known})"
    kind = facts.get(rule.fact_name)
    if kind is None:
        return (f"rule '{rule}': probe '{rule.probe}' has no fact '{rule.fact_name}' "
                f"(facts: {', '.join(sorted(facts))})")
    value = rule.value
    if rule.op in ("<", "<=", ">", ">=") and kind not in _NUMERIC:
        return f"rule '{rule}': '{rule.op}' needs a number, but fact is {kind}"
    if kind in _NUMERIC and rule.op != "contains" and (
        isinstance(value, bool) or not isinstance(value, int | float)
    ):
        return f"rule '{rule}': fact is {kind}, compared with {value!r}"
    if kind == "bool" and not isinstance(value, bool):
        return f"rule '{rule}': fact is bool, compare it with true or false"
    if rule.op == "contains" and kind not in ("list", "str"):
        return f"rule '{rule}': 'contains' needs a list or text fact, but fact is {kind}"
    return None


def lint_forest(forest: Forest, declared: dict[str, dict[str, str]], *,
                apis: bool = True, hooks: Hooks | None = None) -> list[Problem]:
    """Every problem in the forest, loader problems included, sorted by file and line.

    `declared` is every probe's facts with their types (`probes.registry.declared_facts()`):
    passed in, so the model never reaches up into the probes. `apis`: also check flags and
    environment variables against the shipped API lists. `hooks`: the triage program's hooks
    and analyses, to check the signatures that name them (passed in like `declared`).
    """
    from trainmedic.trees.forest import gc_paused

    problems = list(forest.problems)
    problems += check_references(forest)
    with gc_paused():
        graph = build_graph(forest)
    problems += check_graph(forest, graph)
    problems += check_fixes(forest)
    problems += check_rules(forest, declared)
    problems += check_danger(forest)
    problems += check_signatures(forest, hooks)
    if apis:
        from trainmedic.trees.apicheck import check_apis

        problems += check_apis(forest)
    return sorted(set(problems))


def only_files(problems: Iterable[Problem], files: set[str]) -> list[Problem]:
    """The problems reported in `files` (as the loader shows paths)."""
    return [p for p in problems if p.file in files]
