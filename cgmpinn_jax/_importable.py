"""The import path of a function or class, when it can be imported back by it (saved runs name
user factories, lifts and distances this way)."""

from __future__ import annotations

import inspect
import sys
from typing import Any

__all__ = ["importable_path"]


def importable_path(fn: Any) -> str | None:
    """``"package.module:name"`` when ``fn`` can be imported back by that path (a module-level
    function or class of an importable module, found there by that name), else ``None`` (a
    lambda, a closure, a function of ``__main__``, of a notebook or of code run with ``exec``
    outside any imported module)."""
    mod, qual = getattr(fn, "__module__", None), getattr(fn, "__qualname__", None)
    if not mod or not qual or mod == "__main__" or "<" in qual or not (inspect.isfunction(fn) or inspect.isclass(fn)):
        return None
    obj = sys.modules.get(mod)  # the module it was defined in, imported (not merely named)
    for part in qual.split("."):
        obj = getattr(obj, part, None)
    return f"{mod}:{qual}" if obj is fn else None
