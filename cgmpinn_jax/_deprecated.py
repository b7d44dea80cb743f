"""Old module paths of the flat layout (``cgmpinn_jax.driver``, ``cgmpinn_jax.nets``, ...),
kept working with a ``DeprecationWarning``.

The modules moved into subpackages (``training/``, ``solvers/``, ``nn/``, ``gmm/``,
``weighting/``, ``inverse/``); ``import cgmpinn_jax.driver`` and ``cgmpinn_jax.driver`` now
give the module at its new place (the very same module object, so private names and
monkeypatching keep working) and warn once per import site. The finder below answers only
for these names under ``cgmpinn_jax``; it changes nothing else in the import system.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings

__all__ = ["MOVED", "moved_module", "install"]

#: old module name (under ``cgmpinn_jax``) -> its new place
MOVED = {
    "nets": "nn._nets", "taylor": "nn._taylor",
    "gmm_types": "gmm._types", "gmm_checks": "gmm._checks", "gmm_density": "gmm._density", "gmm_data": "gmm._data",
    "gmm_init": "gmm._init", "gmm_stream": "gmm._stream", "gmm_em": "gmm._em", "gmm_bic": "gmm._bic",
    "weighting_formulas": "weighting._formulas", "weighting_transforms": "weighting._transforms",
    "balancing": "weighting._balancing",
    "second_stage": "solvers._second_stage", "gauss_newton": "solvers._gauss_newton", "ssbfgs": "solvers._ssbfgs",
    "linesearch": "solvers._linesearch", "qn_update": "solvers._qn_update",
    "schedule": "training._schedule", "objective": "training._objective", "engine": "training._engine",
    "driver": "training._driver", "records": "training._records", "precision": "training._precision",
    "checkpoint": "training._checkpoint", "resuming": "training._resuming", "disk_cache": "training._disk_cache",
    "observations": "inverse._observations",
}


def moved_module(old: str):
    """The module that ``cgmpinn_jax.<old>`` now is, with a DeprecationWarning."""
    new = "cgmpinn_jax." + MOVED[old]
    warnings.warn(f"cgmpinn_jax.{old} moved to {new}; import it from there (or use the public names of "
                  f"cgmpinn_jax and its subpackages)", DeprecationWarning, stacklevel=3)
    return importlib.import_module(new)


class _Alias(importlib.abc.Loader):
    def __init__(self, old: str):
        self.old = old

    def create_module(self, spec):
        module = moved_module(self.old)
        self._spec = module.__spec__  # importlib overwrites it with the alias's spec; put it back below
        return module

    def exec_module(self, module):  # already executed at its new place
        module.__spec__ = self._spec
        sys.modules["cgmpinn_jax." + self.old] = module


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        head, _, old = fullname.partition(".")
        if head != "cgmpinn_jax" or old not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Alias(old))


def install() -> None:
    """Answer ``import cgmpinn_jax.<old>`` (idempotent)."""
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.append(_Finder())
