"""The import path of a function or class, when it can be imported back by it (saved runs name
user factories, lifts and distances this way)."""

from __future__ import annotations

import importlib
import inspect
import sys
from typing import Any

__all__ = ["importable_path", "import_path"]


def importable_path(fn: Any) -> str | None:
    """``"package.module:name"`` when ``fn`` can be imported back by that path (a module-level
    function or class of an importable module, found there by that name), else ``None`` (a
    lambda, a closure, a function of ``__main__``, of a notebook or of code run with ``exec``
    outside any imported module)."""
    mod, qual = getattr(fn, "__module__", None), getattr(fn, "__qualname__", None)
    if (
        not mod
        or not qual
        or mod == "__main__"
        or "<" in qual
        or not (inspect.isfunction(fn) or inspect.isclass(fn))
    ):
        return None
    obj = sys.modules.get(mod)  # the module it was defined in, imported (not merely named)
    for part in qual.split("."):
        obj = getattr(obj, part, None)
    return f"{mod}:{qual}" if obj is fn else None


def import_path(path: str, label: str) -> Any:
    """The callable ``path`` names, ``"package.module:name"`` (``name`` may be a dotted attribute
    path inside the module).

    Args:
        path: the import path, as ``importable_path`` writes it.
        label: how an error names the thing, e.g. ``"network"``.

    Raises:
        ValueError: a path without ``:``, a module that does not import, or a missing or
            non-callable attribute (the message says which).
    """
    mod, sep, attr = str(path).partition(":")
    if not sep or not mod or not attr:
        raise ValueError(f"{label} {path!r}: not an import path 'package.module:name'")
    try:
        obj: Any = importlib.import_module(mod)
    except ImportError as e:
        raise ValueError(
            f"{label} {path!r}: its module {mod!r} does not import ({e}); is it on the path?"
        ) from e
    for part in attr.split("."):
        obj = getattr(obj, part, None)
    if not callable(obj):
        raise ValueError(
            f"{label} {path!r}: {mod!r} has no callable {attr!r} (changed or removed?)"
        )
    return obj
