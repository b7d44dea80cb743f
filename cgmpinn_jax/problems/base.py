"""The Problem interface: a PDE, its exact solution, its constraint terms and its points.

A benchmark states its exact solution ``u*(z)`` and its differential operator ``N[u](z)``
once. Everything else follows by automatic differentiation:

* the source term ``f(z) = N[u*](z)`` (zero for homogeneous PDEs),
* the PDE residual of a network ``r(z) = N[u](z) - f(z)``,
* the targets of the constraint pieces (Dirichlet values, initial velocities, ...).

Constraint terms are named (``"ic"``, ``"bc"``) and each is a tuple of *pieces*; the
reference code sums the per-piece mean squared errors into one term (REFERENCE §1.3), and
lbPINN averages the concatenated residuals instead (§4.2), so a batch keeps the pieces
separate and the method decides how to aggregate them.

A batch (:class:`Batch`) is a plain pytree::

    {"pde": (points (N, d), source (N,)),
     "ic":  ((points, target), ...),      # one (points, target) pair per piece
     "bc":  ((points, target), ...)}

Example (a user's own PDE; see the README's "Your own PDE")::

    @dataclasses.dataclass(frozen=True)
    class Poisson(Problem):
        name = "my_poisson"
        coords = ("x",)
        lower = (0.0,)
        upper = (1.0,)
        terms = ("bc",)

        def exact(self, z):
            return jnp.sin(jnp.pi * z[0])

        def operator(self, u, z):
            return partial(u, 0, 0)(z)

        def pieces(self):
            return {"bc": (Dirichlet(),)}

        def sample_points(self, key):
            return {"pde": uniform(key, 100, self.lower, self.upper),
                    "bc": (jnp.array([[0.0], [1.0]]),)}

        def test_points(self):
            return grid(self.lower, self.upper, (200,))
"""

from __future__ import annotations

import abc
import dataclasses
from typing import Any, Callable, ClassVar, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..derivatives import partial

ScalarField = Callable[[jax.Array], jax.Array]
Batch = dict[str, Any]

__all__ = [
    "Problem",
    "ProblemDefaults",
    "TestGrid",
    "Piece",
    "Dirichlet",
    "DerivativeMatch",
    "Periodic",
    "uniform",
    "grid",
    "check_points",
]


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
    def target(self, problem: "Problem", points: jax.Array) -> jax.Array:
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
    """``du/dz_axis(z) - du*/dz_axis(z)`` (e.g. the wave's initial velocity, axis = t)."""

    axis: int

    def target(self, problem, points):
        return jax.vmap(partial(problem.exact, self.axis))(points)

    def value(self, u, points):
        return jax.vmap(partial(u, self.axis))(points)


@dataclasses.dataclass(frozen=True)
class Periodic(Piece):
    """``D u(z_left) - D u(z_right)`` for paired points ``(n, 2, d)``, with ``D`` the
    identity (``axes=()``) or a partial derivative (``axes=(0,)`` for u_x). Target 0."""

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
    """Per-benchmark settings of the reference code (REFERENCE §2.7)."""

    width: int = 50
    depth: int = 4
    adam_steps: int = 5000
    lbfgs_steps: int = 10000
    k_upd: int = 200
    # CGMPINN-only settings (the baselines use raw inputs and the default init):
    cgm_input_map: tuple[tuple[float, ...], tuple[float, ...]] | None = None  # (scale, shift)
    cgm_init: str = "torch"
    cgm_k_upd: int | None = None
    cgm_refit_before_lbfgs_step: bool = False
    lbfgs_only_lr: float = 1.0
    ablation_k_upd: int = 200
    ablation_relobralo: str = "both"  # "both", "adam" or "none" (REFERENCE §5.3)


@dataclasses.dataclass(frozen=True)
class Problem(abc.ABC):
    """A PDE benchmark. Subclasses are frozen dataclasses (hashable, so they can be closed
    over by jitted functions) that define the class attributes and abstract methods below."""

    name: ClassVar[str]
    coords: ClassVar[tuple[str, ...]]
    lower: ClassVar[tuple[float, ...]]
    upper: ClassVar[tuple[float, ...]]
    terms: ClassVar[tuple[str, ...]]  # constraint terms, in ReLoBRaLo order after "pde"
    homogeneous: ClassVar[bool] = False  # True: no source term (f = 0)
    defaults: ClassVar[ProblemDefaults] = ProblemDefaults()

    # ---- to implement ------------------------------------------------------------
    @abc.abstractmethod
    def exact(self, z: jax.Array) -> jax.Array:
        """The exact solution at one point ``z`` of shape ``(d,)``."""

    @abc.abstractmethod
    def operator(self, u: ScalarField, z: jax.Array) -> jax.Array:
        """The differential operator N[u] at one point (the PDE is N[u] = f)."""

    @abc.abstractmethod
    def pieces(self) -> dict[str, tuple[Piece, ...]]:
        """Constraint pieces of each term in :attr:`terms`."""

    @abc.abstractmethod
    def sample_points(self, key: jax.Array) -> dict[str, Any]:
        """``{"pde": (N, d), term: (points per piece, ...)}`` drawn with ``key``."""

    @abc.abstractmethod
    def test_points(self) -> TestGrid:
        """The evaluation grid."""

    # ---- derived -----------------------------------------------------------------
    @property
    def dim(self) -> int:
        return len(self.coords)

    @property
    def loss_terms(self) -> tuple[str, ...]:
        """All loss terms in ReLoBRaLo order: ``("pde", *terms)``."""
        return ("pde",) + tuple(self.terms)

    def source(self, z: jax.Array) -> jax.Array:
        """f(z) = N[u*](z) by automatic differentiation (0 for homogeneous PDEs)."""
        if self.homogeneous:
            return jnp.zeros((), dtype=z.dtype)
        return self.operator(self.exact, z)

    def residual(self, u: ScalarField, z: jax.Array) -> jax.Array:
        """PDE residual r(z) = N[u](z) - f(z) at one point."""
        return self.operator(u, z) - self.source(z)

    def pde_residuals(self, u: ScalarField, points: jax.Array, source: jax.Array | None = None) -> jax.Array:
        """Residuals at ``points`` (N, d) -> (N,). With ``source`` given (the batch's
        precomputed f) the source is not re-derived."""
        points = check_points(points, self.dim, name="pde points")
        if source is None:
            return jax.vmap(lambda z: self.residual(u, z))(points)
        return jax.vmap(lambda z: self.operator(u, z))(points) - source

    def sample(self, key: jax.Array) -> Batch:
        """Draw the training points with ``key`` and attach sources and targets."""
        pts = self.sample_points(key)
        pieces = self.pieces()
        pde = check_points(pts["pde"], self.dim, name="pde points")
        batch: Batch = {"pde": (pde, jax.vmap(self.source)(pde))}
        for term in self.terms:
            group = []
            for i, (piece, p) in enumerate(zip(pieces[term], pts[term], strict=True)):
                p = check_points(p, self.dim, name=f"{term} piece {i} points", paired=piece.paired)
                group.append((p, piece.target(self, p)))
            batch[term] = tuple(group)
        return batch

    def constraint_residuals(self, u: ScalarField, batch: Batch) -> dict[str, tuple[jax.Array, ...]]:
        """Residual vectors of every piece of every constraint term."""
        pieces = self.pieces()
        return {
            term: tuple(piece.residual(u, p, t) for piece, (p, t) in zip(pieces[term], batch[term]))
            for term in self.terms
        }

    def test_grid(self) -> TestGrid:
        return self.test_points()

    def exact_on(self, points: Any) -> jax.Array:
        """u* at a batch of points (M, d) -> (M,)."""
        return jax.vmap(self.exact)(check_points(points, self.dim))
