"""Package attributes that import their module on first use.

`trainmedic.trees`, `trainmedic.memory` and `trainmedic.cluster` export a few names each, but a
caller that needs one of them (the home screen reading a saved walk, which needs the tree model
but not the YAML loader, say) must not pay for the rest.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any


def lazy_attributes(package: str, where: dict[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` that imports `package.<where[name]>` and caches the name."""

    def __getattr__(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{where[name]}"), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
