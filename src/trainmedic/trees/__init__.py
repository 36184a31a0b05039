"""The tree format: YAML files -> model dataclasses -> a forest that lint proves sound.

Names load on first use: the model (`trainmedic.trees.model`) and the tree-file discovery
(`trainmedic.trees.paths`) are cheap, the loader imports YAML; a walk resumed or a home screen
painted from cached cards must not pay for the loader.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainmedic.lazy import lazy_attributes

_WHERE = {
    "Forest": "forest", "Ref": "forest", "load_forest": "forest",
    "load_forest_or_fail": "forest", "load_forest_skipping": "forest",
    "builtin_tree_dir": "paths",
    "Answer": "model", "Fix": "model", "Node": "model", "Question": "model",
    "Reference": "model", "Rule": "model", "Step": "model", "Text": "model", "Tree": "model",
}

__all__ = [
    "Answer", "Fix", "Forest", "Node", "Question", "Ref", "Reference", "Rule", "Step", "Text",
    "Tree", "builtin_tree_dir", "load_forest", "load_forest_or_fail", "load_forest_skipping",
]

if TYPE_CHECKING:
    from trainmedic.trees.forest import (
        Forest,
        Ref,
        load_forest,
        load_forest_or_fail,
        load_forest_skipping,
    )
    from trainmedic.trees.model import (
        Answer,
        Fix,
        Node,
        Question,
        Reference,
        Rule,
        Step,
        Text,
        Tree,
    )
    from trainmedic.trees.paths import builtin_tree_dir

__getattr__ = lazy_attributes(__name__, _WHERE)
