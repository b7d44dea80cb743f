"""The Problem interface, point helpers, the six benchmark problems of the paper and a
registry by name; for problems as the field poses them, geometry (primitives and set
operations), reference data readers, and the pieces of systems and curved boundaries.

A problem is named by a registry name (``"heat"``, one of `PROBLEMS`; a worked example of
`WORKED`; one of PINNacle's problems in `PINNACLE`, ``"wave1d_c"``), or by the
import path of a user's [`Problem`][cgmpinn_jax.Problem] subclass, ``"package.module:ClassName"``; both
work with [`get_problem`][cgmpinn_jax.get_problem], [`train`][cgmpinn_jax.train] and the ``cgmpinn-jax run``
command.
"""

from __future__ import annotations

import importlib
import sys

from .advection_diffusion import AdvectionDiffusion
from ._normal_pieces import Neumann, Robin
from .base import (Condition, DerivativeMatch, Dirichlet, Fields, Periodic, Piece, Problem, ProblemDefaults, TestGrid,
                   Truth, check_points, grid, uniform)
from .geometry import Ball, Box, Difference, Disk, Geometry, Intersection, Polygon, Union
from .reference import Reference, load_reference, pinnacle_reference, read_comsol, read_table
from .validate import validate_problem
from .damped_wave import DampedWave
from .fisher_kpp import FisherKPP
from .heat import Heat
from .points import box_edges, edge_pair, initial_line
from .poisson1d import Poisson1D
from .poisson2d import Poisson2D
from .worked import WORKED, BurgersFromData, LidDrivenCavity, SquareWithHoles
from .pinnacle import PINNACLE, Burgers1DC, Heat2DMultiscale, HeatND, NS2DC, Poisson2DC, PoissonND, Wave1DC

PROBLEMS: dict[str, type[Problem]] = {
    cls.name: cls for cls in (Poisson1D, Poisson2D, Heat, DampedWave, AdvectionDiffusion, FisherKPP)
}


def class_path(cls: type) -> str:
    """``"package.module:QualName"`` of a class, as `import_problem_class` reads it."""
    return f"{cls.__module__}:{cls.__qualname__}"


def import_problem_class(path: str) -> type[Problem]:
    """The [`Problem`][cgmpinn_jax.Problem] subclass at ``"package.module:ClassName"``.

    Raises:
        ValueError: naming the path, when the module cannot be imported, has no such
            attribute, or the attribute is not a Problem subclass.
    """
    module_name, sep, qualname = path.partition(":")
    if not sep or not module_name or not qualname:
        raise ValueError(f"problem class path must look like 'package.module:ClassName', got {path!r}")
    if "<locals>" in qualname:
        raise ValueError(f"problem class {path!r} was defined inside a function and cannot be imported; "
                         "define it at module level")
    try:
        module = sys.modules.get(module_name) or importlib.import_module(module_name)
    except Exception as e:  # noqa: BLE001 - re-raised with the path named
        raise ValueError(f"cannot import the module {module_name!r} of problem class {path!r}: "
                         f"{type(e).__name__}: {e}") from e
    obj = module
    for part in qualname.split("."):
        if not hasattr(obj, part):
            raise ValueError(f"module {module_name!r} has no {qualname!r} (problem class {path!r})")
        obj = getattr(obj, part)
    if not (isinstance(obj, type) and issubclass(obj, Problem)):
        raise ValueError(f"{path!r} is not a Problem subclass (got {obj!r})")
    return obj


def get_problem(name: str | Problem | type[Problem], **params) -> Problem:
    """A problem instance, with optional parameter overrides (``get_problem("heat", n_pde=500)``).

    ``name`` is one of `PROBLEMS`, of the worked examples `WORKED` or of PINNacle's problems `PINNACLE`
    (``"wave1d_c"``, ...), an import path ``"package.module:ClassName"`` of
    a user's subclass (the module must be importable), or a [`Problem`][cgmpinn_jax.Problem] subclass;
    each is instantiated with ``params``. A Problem instance is returned as is.
    """
    if isinstance(name, Problem):
        if params:
            raise ValueError(f"get_problem: parameters {sorted(params)} given with a Problem instance; "
                             "use dataclasses.replace(problem, ...) instead")
        return name
    if isinstance(name, type) and issubclass(name, Problem):
        cls = name
    elif isinstance(name, str) and ":" in name:
        cls = import_problem_class(name)
    elif isinstance(name, str) and name in PROBLEMS:
        cls = PROBLEMS[name]
    elif isinstance(name, str) and name in WORKED:
        cls = WORKED[name]
    elif isinstance(name, str) and name in PINNACLE:
        cls = PINNACLE[name]
    else:
        raise ValueError(
            f"unknown problem {name!r}; valid names: {', '.join(PROBLEMS)}, the worked examples "
            f"{', '.join(WORKED)}, PINNacle's problems {', '.join(PINNACLE)}, or 'package.module:ClassName' "
            "of your own Problem subclass (or pass an instance)"
        )
    try:
        return cls(**params)
    except TypeError as e:
        raise ValueError(f"cannot build {cls.__name__}(**{params!r}): {e}") from e


__all__ = [
    "PROBLEMS",
    "WORKED",
    "PINNACLE",
    "BurgersFromData",
    "LidDrivenCavity",
    "SquareWithHoles",
    "Burgers1DC",
    "Poisson2DC",
    "NS2DC",
    "Wave1DC",
    "Heat2DMultiscale",
    "PoissonND",
    "HeatND",
    "get_problem",
    "class_path",
    "import_problem_class",
    "validate_problem",
    "Problem",
    "ProblemDefaults",
    "TestGrid",
    "Piece",
    "Dirichlet",
    "DerivativeMatch",
    "Periodic",
    "Condition",
    "Neumann",
    "Robin",
    "Fields",
    "Truth",
    "Geometry",
    "Box",
    "Ball",
    "Disk",
    "Polygon",
    "Union",
    "Difference",
    "Intersection",
    "Reference",
    "load_reference",
    "read_comsol",
    "read_table",
    "pinnacle_reference",
    "check_points",
    "grid",
    "uniform",
    "box_edges",
    "edge_pair",
    "initial_line",
    "Poisson1D",
    "Poisson2D",
    "Heat",
    "DampedWave",
    "AdvectionDiffusion",
    "FisherKPP",
]
