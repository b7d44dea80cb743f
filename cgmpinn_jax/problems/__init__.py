"""The Problem interface, its checks and point helpers, the six benchmark problems of the paper
(``paper/``), PINNacle's problems (``pinnacle/``), the worked examples and a registry by name;
for problems as the field poses them, the reference data readers (``reference/``), the pieces
of systems and curved boundaries, and the geometries of `cgmpinn_jax.geometry` (primitives and
set operations), re-exported here.

A problem is named by a registry name (``"heat"``, one of
[`PROBLEMS`][cgmpinn_jax.PROBLEMS]; a worked example of
[`WORKED`][cgmpinn_jax.problems.WORKED]; one of PINNacle's problems in
[`PINNACLE`][cgmpinn_jax.problems.PINNACLE], ``"wave1d_c"``), or by the import path of a
user's [`Problem`][cgmpinn_jax.Problem] subclass, ``"package.module:ClassName"``; both work
with [`get_problem`][cgmpinn_jax.get_problem], [`train`][cgmpinn_jax.train] and the
``cgmpinn-jax run`` command.
"""

from __future__ import annotations

import importlib
import sys

from ..geometry import Ball, Box, Difference, Disk, Geometry, Intersection, Polygon, Union
from ._normal_pieces import Neumann, Robin
from .base import (
    Condition,
    DerivativeMatch,
    Dirichlet,
    Fields,
    Periodic,
    Piece,
    Problem,
    ProblemDefaults,
    TestGrid,
    Truth,
    check_points,
    grid,
    uniform,
)
from .hard import ConstrainedNetwork, HardConstrained
from .reference import Reference, load_reference, pinnacle_reference, read_comsol, read_table
from .validate import validate_problem
from .points import box_edges, edge_pair, initial_line
from .paper import AdvectionDiffusion, DampedWave, FisherKPP, Heat, Poisson1D, Poisson2D
from .worked import WORKED, BurgersFromData, LidDrivenCavity, SquareWithHoles
from .pinnacle import (
    PINNACLE,
    Burgers1DC,
    Heat2DMultiscale,
    HeatND,
    NS2DC,
    Poisson2DC,
    PoissonND,
    Wave1DC,
)

PROBLEMS: dict[str, type[Problem]] = {
    cls.name: cls for cls in (Poisson1D, Poisson2D, Heat, DampedWave, AdvectionDiffusion, FisherKPP)
}
"""The paper's six benchmark problems by registry name: ``poisson1d``, ``poisson2d``, ``heat``,
``damped_wave``, ``advection_diffusion`` and ``fisher_kpp`` (a dict ``{name: Problem subclass}``).
[`get_problem`][cgmpinn_jax.get_problem] also finds the worked examples
([`WORKED`][cgmpinn_jax.problems.WORKED]) and PINNacle's problems
([`PINNACLE`][cgmpinn_jax.problems.PINNACLE])."""


def class_path(cls: type) -> str:
    """The import path of a class, as
    [`import_problem_class`][cgmpinn_jax.problems.import_problem_class] reads it (and a saved
    run records a user's problem by).

    Args:
        cls: a class defined at module level.

    Returns:
        ``"package.module:QualName"``.

    Examples:
        >>> from cgmpinn_jax.problems import Heat, class_path
        >>> class_path(Heat)
        'cgmpinn_jax.problems.paper.heat:Heat'
    """
    return f"{cls.__module__}:{cls.__qualname__}"


def import_problem_class(path: str) -> type[Problem]:
    """The [`Problem`][cgmpinn_jax.Problem] subclass at an import path (the inverse of
    [`class_path`][cgmpinn_jax.problems.class_path]); the module is imported if it is not yet.

    Args:
        path: ``"package.module:ClassName"`` (``ClassName`` may be dotted, for a nested class;
            not a class defined inside a function).

    Returns:
        The class (not an instance).

    Raises:
        ValueError: naming the path, when the module cannot be imported, has no such
            attribute, or the attribute is not a Problem subclass.

    Examples:
        >>> from cgmpinn_jax.problems import import_problem_class
        >>> import_problem_class("cgmpinn_jax.problems.paper.heat:Heat").name
        'heat'
    """
    module_name, sep, qualname = path.partition(":")
    if not sep or not module_name or not qualname:
        raise ValueError(
            f"problem class path must look like 'package.module:ClassName', got {path!r}"
        )
    if "<locals>" in qualname:
        raise ValueError(
            f"problem class {path!r} was defined inside a function and cannot be imported; "
            "define it at module level"
        )
    try:
        module = sys.modules.get(module_name) or importlib.import_module(module_name)
    except Exception as e:  # noqa: BLE001 - re-raised with the path named
        raise ValueError(
            f"cannot import the module {module_name!r} of problem class {path!r}: "
            f"{type(e).__name__}: {e}"
        ) from e
    obj = module
    for part in qualname.split("."):
        if not hasattr(obj, part):
            raise ValueError(f"module {module_name!r} has no {qualname!r} (problem class {path!r})")
        obj = getattr(obj, part)
    if not (isinstance(obj, type) and issubclass(obj, Problem)):
        raise ValueError(f"{path!r} is not a Problem subclass (got {obj!r})")
    return obj


def get_problem(name: str | Problem | type[Problem], **params) -> Problem:
    """A problem instance, by name or class, with optional parameter overrides.

    Args:
        name: a registry name: one of the paper's benchmarks [`PROBLEMS`][cgmpinn_jax.PROBLEMS]
            (``"heat"``), of the worked examples [`WORKED`][cgmpinn_jax.problems.WORKED] or of
            PINNacle's problems [`PINNACLE`][cgmpinn_jax.problems.PINNACLE] (``"wave1d_c"``); an
            import path ``"package.module:ClassName"`` of a user's subclass (the module must be
            importable); a [`Problem`][cgmpinn_jax.Problem] subclass; or a Problem instance,
            returned as is.
        **params: the problem's parameters to override (its dataclass fields, e.g.
            ``n_pde=500``); not allowed with an instance (use ``dataclasses.replace``).

    Returns:
        The problem instance.

    Raises:
        ValueError: for an unknown name, listing the valid ones; for parameters the class does
            not have; for parameters given with an instance.

    Examples:
        >>> from cgmpinn_jax import get_problem
        >>> heat = get_problem("heat", n_pde=500)
        >>> heat.name, heat.n_pde, heat.coords
        ('heat', 500, ('x', 't'))
        >>> get_problem("cgmpinn_jax.problems.pinnacle:Wave1DC").name
        'wave1d_c'
    """
    if isinstance(name, Problem):
        if params:
            raise ValueError(
                f"get_problem: parameters {sorted(params)} given with a Problem instance; "
                "use dataclasses.replace(problem, ...) instead"
            )
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
            f"{', '.join(WORKED)}, PINNacle's problems {', '.join(PINNACLE)}, or "
            "'package.module:ClassName' of your own Problem subclass (or pass an instance)"
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
    "HardConstrained",
    "ConstrainedNetwork",
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
