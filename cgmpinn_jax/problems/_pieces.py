"""The pieces a problem is made of: point helpers, the test grid, the constraint pieces
(`Dirichlet`, `DerivativeMatch`, `Periodic`, `Condition`), the
`Fields` view of a system's network and `ProblemDefaults`.
Public through `cgmpinn_jax.problems` (and `cgmpinn_jax.problems.base`)."""

from __future__ import annotations

import abc
import dataclasses
from typing import Any, Callable, ClassVar, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..derivatives import partial

ScalarField = Callable[[jax.Array], jax.Array]

__all__ = ["ProblemDefaults", "TestGrid", "Piece", "Dirichlet", "DerivativeMatch", "Periodic", "Condition", "Fields",
           "exact_field", "uniform", "grid", "check_points", "ScalarField"]


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


class Fields:
    """A system's network as its operator and pieces see it: ``u["v"]`` (or ``u.v``) is the
    scalar field ``v`` (a function of one point, for `partial`),
    and ``u(z)`` all fields at once, shape ``(F,)``.

    Examples:
        >>> import jax.numpy as jnp
        >>> u = Fields(lambda z: jnp.stack([z[0], 2 * z[0]]), ("u", "v"))
        >>> float(u["v"](jnp.array([1.5]))), float(u.u(jnp.array([1.5])))
        (3.0, 1.5)
    """

    __slots__ = ("_fn", "names")

    def __init__(self, fn: Callable[[jax.Array], jax.Array], names: tuple[str, ...]):
        self._fn, self.names = fn, tuple(names)

    def __call__(self, z: jax.Array) -> jax.Array:
        return self._fn(z)

    def index(self, name: str) -> int:
        if name not in self.names:
            raise ValueError(f"unknown field {name!r}; the fields are {self.names!r}")
        return self.names.index(name)

    def __getitem__(self, name: str) -> ScalarField:
        i, fn = self.index(name), self._fn
        return lambda z: fn(z)[i]

    def __getattr__(self, name: str) -> ScalarField:
        if name.startswith("_") or name not in self.names:
            raise AttributeError(name)
        return self[name]


def _values_of(g: Any, points: jax.Array) -> jax.Array:
    """``g`` at every point: a function of one point (vmapped) or a number (broadcast)."""
    if callable(g):
        return jnp.asarray(jax.vmap(g)(points), points.dtype)
    return jnp.full(points.shape[:1], g, points.dtype)


def exact_field(problem: Any, field: str | None) -> ScalarField:
    """The exact solution's scalar field ``field`` (the whole exact solution for a scalar
    problem); a ValueError when the problem states no exact solution."""
    if not getattr(problem, "has_exact", True):
        raise ValueError(f"{type(problem).__name__} states no exact(z), so a piece without a target g cannot derive "
                         f"one: give the piece its target, e.g. Dirichlet(g=0.0) or Dirichlet(g=lambda z: ...)")
    fields = tuple(getattr(problem, "fields", ("u",)))
    if len(fields) == 1:
        return problem.exact
    return Fields(problem.exact, fields)[field]


class Piece(abc.ABC):
    """One piece of a constraint term: residuals at its points, compared with a target that
    is either given (``g``: a function of one point or a number) or derived from the exact
    solution when the batch is made.

    On a system (a problem with several ``fields``) a piece names the field it constrains
    (``field="u"``), or, for `Condition`, combines the fields itself."""

    paired: ClassVar[bool] = False

    @abc.abstractmethod
    def target(self, problem: Any, points: jax.Array) -> jax.Array:
        """Target values at ``points``, shape ``(n,)``."""

    @abc.abstractmethod
    def value(self, u: ScalarField, points: jax.Array) -> jax.Array:
        """The network's quantity at ``points``, shape ``(n,)``."""

    def residual(self, u: ScalarField, points: jax.Array, target: jax.Array) -> jax.Array:
        return self.value(u, points) - target

    def scalar(self, u: Any) -> ScalarField:
        """The scalar field this piece reads: ``u`` itself, or the field ``self.field`` of a system."""
        field = getattr(self, "field", None)
        if isinstance(u, Fields):
            if field is None:
                raise ValueError(f"{self!r} constrains a system with fields {u.names!r}: name one, e.g. field={u.names[0]!r}")
            return u[field]
        return u


@dataclasses.dataclass(frozen=True)
class Dirichlet(Piece):
    """``u(z) - g(z)``; without ``g``, ``g = u*`` (the exact solution).

    Args:
        g: the target: a function of one point (a scalar) or a number; None derives it from
            ``exact``.
        field: the field constrained, on a system (``fields`` with more than one name).
    """

    g: Any = dataclasses.field(default=None, kw_only=True)
    field: str | None = dataclasses.field(default=None, kw_only=True)

    def target(self, problem, points):
        if self.g is not None:
            return _values_of(self.g, points)
        return jax.vmap(exact_field(problem, self.field))(points)

    def value(self, u, points):
        return jax.vmap(self.scalar(u))(points)


@dataclasses.dataclass(frozen=True)
class DerivativeMatch(Piece):
    """``du/dz_axis(z) - g(z)``; without ``g``, ``g = du*/dz_axis``: match the derivative along one coordinate.

    ``axis`` indexes the problem's ``coords``: with ``coords = ("x", "t")``,
    ``DerivativeMatch(1)`` matches ``u_t`` (the damped wave's initial velocity) and
    ``DerivativeMatch(0)`` matches ``u_x`` (a Neumann condition on an axis-aligned edge).
    Points ``(n, d)``. ``g`` and ``field`` as for `Dirichlet`."""

    axis: int
    g: Any = dataclasses.field(default=None, kw_only=True)
    field: str | None = dataclasses.field(default=None, kw_only=True)

    def target(self, problem, points):
        if self.g is not None:
            return _values_of(self.g, points)
        return jax.vmap(partial(exact_field(problem, self.field), self.axis))(points)

    def value(self, u, points):
        return jax.vmap(partial(self.scalar(u), self.axis))(points)


@dataclasses.dataclass(frozen=True)
class Periodic(Piece):
    """``D u(z_left) - D u(z_right)`` for paired points ``(n, 2, d)``, with ``D`` the
    identity (``axes=()``) or a partial derivative (``axes=(0,)`` for u_x; the axes index
    the problem's ``coords``). Target 0. Build the pairs with
    ``jnp.stack([left, right], axis=1)``, e.g. from `edge_pair`."""

    axes: tuple[int, ...] = ()
    field: str | None = dataclasses.field(default=None, kw_only=True)
    paired: ClassVar[bool] = True

    def target(self, problem, points):
        return jnp.zeros(points.shape[0], dtype=points.dtype)

    def value(self, u, points):
        g = jax.vmap(partial(self.scalar(u), *self.axes))
        return g(points[:, 0]) - g(points[:, 1])


@dataclasses.dataclass(frozen=True)
class Condition(Piece):
    """A general condition ``fn(u, z) = g(z)``: ``fn`` reads the network as the operator does
    (a scalar field, or the `Fields` of a system) at one point and returns a scalar,
    e.g. ``Condition(lambda u, z: u["p"](z))`` pins the pressure where its points lie, and
    ``Condition(lambda u, z: u["u"](z) + u["v"](z), g=1.0)`` constrains a combination.

    Args:
        fn: ``(u, z) -> scalar``.
        g: the target (a function of one point or a number; default 0).
    """

    fn: Callable
    g: Any = dataclasses.field(default=0.0, kw_only=True)

    def target(self, problem, points):
        return _values_of(self.g, points)

    def value(self, u, points):
        return jax.vmap(lambda z: self.fn(u, z))(points)


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
