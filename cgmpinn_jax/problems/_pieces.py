"""The pieces a problem is made of: point helpers, the test grid, the constraint pieces
(:class:`Dirichlet`, :class:`DerivativeMatch`, :class:`Periodic`) and :class:`ProblemDefaults`.
Public through :mod:`cgmpinn_jax.problems` (and :mod:`cgmpinn_jax.problems.base`)."""

from __future__ import annotations

import abc
import dataclasses
from typing import Any, Callable, ClassVar, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..derivatives import partial

ScalarField = Callable[[jax.Array], jax.Array]

__all__ = ["ProblemDefaults", "TestGrid", "Piece", "Dirichlet", "DerivativeMatch", "Periodic", "uniform", "grid",
           "check_points", "ScalarField"]


# --------------------------------------------------------------------------------------
# point helpers


def check_points(points: Any, dim: int, *, name: str = "points", paired: bool = False) -> jax.Array:
    """Return ``points`` as an array, raising a ValueError that names the expected shape."""
    arr = jnp.asarray(points)
    expected = "(n, 2, %d)" % dim if paired else "(n, %d)" % dim
    ok = arr.ndim == (3 if paired else 2) and arr.shape[-1] == dim and (not paired or arr.shape[1] == 2)
    if not ok:
        raise ValueError(f"{name} must have shape {expected}, got {tuple(arr.shape)}")
    return arr


def uniform(key: jax.Array, n: int, lower: tuple[float, ...], upper: tuple[float, ...]) -> jax.Array:
    """``n`` i.i.d. points uniform in the box ``[lower, upper)``, shape ``(n, d)``
    (the reference's ``torch.rand`` scaled to the box)."""
    lo = jnp.asarray(lower)
    hi = jnp.asarray(upper)
    return lo + (hi - lo) * jax.random.uniform(key, (n, len(lower)), dtype=lo.dtype)


class TestGrid(NamedTuple):
    """The evaluation grid: ``points`` (M, d), and the ``shape`` and 1-D ``axes`` of the
    tensor grid they come from (``meshgrid(indexing='ij')`` order, first coordinate slowest)."""

    points: np.ndarray
    shape: tuple[int, ...]
    axes: tuple[np.ndarray, ...]


def grid(lower: tuple[float, ...], upper: tuple[float, ...], sizes: tuple[int, ...]) -> TestGrid:
    """Tensor grid of ``linspace(lower_j, upper_j, sizes_j)`` (endpoints included)."""
    axes = tuple(np.linspace(lo, hi, n) for lo, hi, n in zip(lower, upper, sizes))
    mesh = np.meshgrid(*axes, indexing="ij")
    points = np.stack([m.reshape(-1) for m in mesh], axis=-1)
    return TestGrid(points=points, shape=tuple(sizes), axes=axes)


# --------------------------------------------------------------------------------------
# constraint pieces


class Piece(abc.ABC):
    """One piece of a constraint term: residuals at its points, compared with a target
    derived from the exact solution when the batch is made."""

    paired: ClassVar[bool] = False

    @abc.abstractmethod
    def target(self, problem: Any, points: jax.Array) -> jax.Array:
        """Target values at ``points``, shape ``(n,)``."""

    @abc.abstractmethod
    def value(self, u: ScalarField, points: jax.Array) -> jax.Array:
        """The network's quantity at ``points``, shape ``(n,)``."""

    def residual(self, u: ScalarField, points: jax.Array, target: jax.Array) -> jax.Array:
        return self.value(u, points) - target


@dataclasses.dataclass(frozen=True)
class Dirichlet(Piece):
    """``u(z) - u*(z)``."""

    def target(self, problem, points):
        return jax.vmap(problem.exact)(points)

    def value(self, u, points):
        return jax.vmap(u)(points)


@dataclasses.dataclass(frozen=True)
class DerivativeMatch(Piece):
    """``du/dz_axis(z) - du*/dz_axis(z)``: match the derivative along one coordinate.

    ``axis`` indexes the problem's ``coords``: with ``coords = ("x", "t")``,
    ``DerivativeMatch(1)`` matches ``u_t`` (the damped wave's initial velocity) and
    ``DerivativeMatch(0)`` matches ``u_x`` (a Neumann condition). Points ``(n, d)``."""

    axis: int

    def target(self, problem, points):
        return jax.vmap(partial(problem.exact, self.axis))(points)

    def value(self, u, points):
        return jax.vmap(partial(u, self.axis))(points)


@dataclasses.dataclass(frozen=True)
class Periodic(Piece):
    """``D u(z_left) - D u(z_right)`` for paired points ``(n, 2, d)``, with ``D`` the
    identity (``axes=()``) or a partial derivative (``axes=(0,)`` for u_x; the axes index
    the problem's ``coords``). Target 0. Build the pairs with
    ``jnp.stack([left, right], axis=1)``, e.g. from :func:`~cgmpinn_jax.problems.edge_pair`."""

    axes: tuple[int, ...] = ()
    paired: ClassVar[bool] = True

    def target(self, problem, points):
        return jnp.zeros(points.shape[0], dtype=points.dtype)

    def value(self, u, points):
        g = jax.vmap(partial(u, *self.axes))
        return g(points[:, 0]) - g(points[:, 1])


# --------------------------------------------------------------------------------------
# the problem


@dataclasses.dataclass(frozen=True)
class ProblemDefaults:
    """Per-benchmark settings of the reference code (docs/reference-code.md §8.7)."""

    width: int = 50
    depth: int = 4
    adam_steps: int = 5000
    lbfgs_steps: int = 10000
    k_upd: int = 200
    lbfgs_only_lr: float = 1.0  # the L-BFGS-only variant's initial step (optimizer table)
    # Method-specific settings (CGMPINN's Fisher-KPP input map, init and k_upd; the
    # ablation's ReLoBRaLo stages) belong to the method: cgmpinn_jax.methods.MethodSettings.
