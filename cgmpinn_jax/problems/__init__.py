"""The six benchmark problems of the paper and a registry by name."""

from __future__ import annotations

from .advection_diffusion import AdvectionDiffusion
from .base import (
    DerivativeMatch,
    Dirichlet,
    Periodic,
    Piece,
    Problem,
    ProblemDefaults,
    TestGrid,
    check_points,
    grid,
    uniform,
)
from .damped_wave import DampedWave
from .fisher_kpp import FisherKPP
from .heat import Heat
from .poisson1d import Poisson1D
from .poisson2d import Poisson2D

PROBLEMS: dict[str, type[Problem]] = {
    cls.name: cls for cls in (Poisson1D, Poisson2D, Heat, DampedWave, AdvectionDiffusion, FisherKPP)
}


def get_problem(name: str | Problem, **params) -> Problem:
    """The benchmark called ``name`` (one of :data:`PROBLEMS`), with optional parameter
    overrides (e.g. ``get_problem("heat", n_pde=500)``). A Problem instance is returned as is."""
    if isinstance(name, Problem):
        return name
    try:
        cls = PROBLEMS[name]
    except KeyError:
        raise ValueError(f"unknown problem {name!r}; valid names: {', '.join(PROBLEMS)}") from None
    return cls(**params)


__all__ = [
    "PROBLEMS",
    "get_problem",
    "Problem",
    "ProblemDefaults",
    "TestGrid",
    "Piece",
    "Dirichlet",
    "DerivativeMatch",
    "Periodic",
    "check_points",
    "grid",
    "uniform",
    "Poisson1D",
    "Poisson2D",
    "Heat",
    "DampedWave",
    "AdvectionDiffusion",
    "FisherKPP",
]
