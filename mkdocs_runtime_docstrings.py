"""A griffe extension for the API reference: a class whose docstring is completed when its
module runs (a shared ``Args`` text filled into a ``{placeholder}``, or a docstring assigned
after the class statement, as ``cgmpinn_jax.stages`` does for its stage classes) is documented
with that runtime docstring instead of the static one griffe reads from the source.

Only classes of ``cgmpinn_jax`` whose static docstring is missing or holds a ``{name}``
placeholder are looked at; everything else is read from the source as usual.
"""

from __future__ import annotations

import importlib
import inspect
import re

import griffe

_PLACEHOLDER = re.compile(r"\{[A-Za-z_]\w*\}")


class RuntimeDocstrings(griffe.Extension):
    def on_class(self, *, cls: griffe.Class, **kwargs) -> None:
        if not cls.path.startswith("cgmpinn_jax."):
            return
        static = cls.docstring.value if cls.docstring else None
        if static is not None and not _PLACEHOLDER.search(static):
            return
        try:
            obj = getattr(importlib.import_module(cls.module.path), cls.name)
        except (ImportError, AttributeError):
            return
        doc = obj.__dict__.get("__doc__")
        if not doc or doc.startswith(f"{cls.name}("):  # none, or the dataclass's own signature line
            return
        lineno = cls.docstring.lineno if cls.docstring else cls.lineno
        cls.docstring = griffe.Docstring(inspect.cleandoc(doc), lineno=lineno, parent=cls)
