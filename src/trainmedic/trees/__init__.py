"""The tree format: YAML files -> model dataclasses -> a forest that lint proves sound."""

from trainmedic.trees.forest import Forest, Ref, builtin_tree_dir, load_forest, load_forest_or_fail
from trainmedic.trees.model import Answer, Fix, Node, Question, Reference, Rule, Step, Text, Tree

__all__ = [
    "Answer", "Fix", "Forest", "Node", "Question", "Ref", "Reference", "Rule", "Step", "Text",
    "Tree", "builtin_tree_dir", "load_forest", "load_forest_or_fail",
]
