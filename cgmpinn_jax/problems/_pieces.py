"""The pieces a problem is made of: point helpers, the test grid, the constraint pieces
(`Dirichlet`, `DerivativeMatch`, `Periodic`, `Condition`), the
`Fields` view of a system's network and `ProblemDefaults`.
Public through `cgmpinn_jax.problems` (and `cgmpinn_jax.problems.base`)."""

from __future__ import annotations

import abc
import dataclasses
from typing import Any, Callable, ClassVar, NamedTuple, cast

import jax
import jax.numpy as jnp
import numpy as np

from ..derivatives import partial

ScalarField = Callable[[jax.Array], jax.Array]

__all__ = [
    "ProblemDefaults",
    "TestGrid",
    "Piece",
    "Dirichlet",
    "DerivativeMatch",
    "Periodic",
    "Condition",
    "Fields",
    "exact_field",
    "uniform",
    "grid",
    "check_points",
    "ScalarField",
]


# --------------------------------------------------------------------------------------
# point helpers


def check_points(points: Any, dim: int, *, name: str = "points", paired: bool = False) -> jax.Array:
    """``points`` as a JAX array, checked to have the shape of a point array.

    Args:
        points: an array-like of points: ``(n, dim)``, or ``(n, 2, dim)`` pairs when ``paired``.
        dim: the number of coordinates ``d``.
        name: what the points are, for the error message.
        paired: whether the points are pairs (a
            [`Periodic`][cgmpinn_jax.problems.Periodic] piece's).

    Returns:
        ``points`` as a ``jax.Array``, unchanged.

    Raises:
        ValueError: naming ``name``, the expected shape and the shape found.

    Examples:
        >>> from cgmpinn_jax.problems import check_points
        >>> check_points([[0.0, 1.0], [0.5, 0.5]], 2).shape
        (2, 2)
        >>> check_points([0.0, 1.0], 2, name="bc points")
        Traceback (most recent call last):
        ...
        ValueError: bc points must have shape (n, 2), got (2,)
    """
    arr = jnp.asarray(points)
    expected = "(n, 2, %d)" % dim if paired else "(n, %d)" % dim
    ok = (
        arr.ndim == (3 if paired else 2)
        and arr.shape[-1] == dim
        and (not paired or arr.shape[1] == 2)
    )
    if not ok:
        raise ValueError(f"{name} must have shape {expected}, got {tuple(arr.shape)}")
    return arr


def uniform(
    key: jax.Array, n: int, lower: tuple[float, ...], upper: tuple[float, ...]
) -> jax.Array:
    """``n`` i.i.d. points uniform in the box ``[lower, upper)``: collocation points.

    The reference code's ``torch.rand`` scaled to the box: ``lower + (upper - lower) * U``
    with ``U`` uniform in ``[0, 1)^d``.

    Args:
        key: a `jax.random.key` (or ``PRNGKey``).
        n: the number of points, a Python int.
        lower: the box's lower corner, ``d`` floats.
        upper: the box's upper corner, ``d`` floats.

    Returns:
        An array of shape ``(n, d)`` in jnp's default float dtype (float32, or float64 under
            ``jax_enable_x64``).

    Examples:
        >>> import jax
        >>> x = uniform(jax.random.key(0), 100, (0.0, -1.0), (1.0, 1.0))
        >>> x.shape, bool((x[:, 0] >= 0).all() and (x[:, 1] < 1).all())
        ((100, 2), True)
    """
    lo = jnp.asarray(lower)
    hi = jnp.asarray(upper)
    return lo + (hi - lo) * jax.random.uniform(key, (n, len(lower)), dtype=lo.dtype)


class TestGrid(NamedTuple):
    """The evaluation grid of a problem's metrics (what
    [`Problem.test_grid`][cgmpinn_jax.Problem.test_grid] returns), usually a tensor grid from
    [`grid`][cgmpinn_jax.problems.grid].

    Attributes:
        points: ``(M, d)`` numpy array of points, in ``meshgrid(indexing='ij')`` order (first
            coordinate slowest) for a tensor grid.
        shape: the grid's shape, e.g. ``(100, 100)`` (``M`` is its product); ``(M,)`` for
            scattered points.
        axes: the 1-D coordinate arrays of a tensor grid, one per coordinate; ``()`` for
            scattered points.
    """

    points: np.ndarray
    shape: tuple[int, ...]
    axes: tuple[np.ndarray, ...]


def grid(lower: tuple[float, ...], upper: tuple[float, ...], sizes: tuple[int, ...]) -> TestGrid:
    """A tensor grid of the box ``[lower, upper]``: test (evaluation) points.

    Axis ``j`` is ``np.linspace(lower_j, upper_j, sizes_j)`` (endpoints included); the points
    are all combinations, in ``np.meshgrid(..., indexing="ij")`` order (first coordinate
    slowest), so a field on them reshapes to ``sizes``.

    Args:
        lower: the box's lower corner, ``d`` floats.
        upper: the box's upper corner, ``d`` floats.
        sizes: points per axis, ``d`` ints ``>= 1``.

    Returns:
        A [`TestGrid`][cgmpinn_jax.problems.TestGrid]: ``points`` (float64 numpy array of
            shape ``(prod(sizes), d)``), ``shape`` (``sizes`` as a tuple) and ``axes`` (the ``d``
            1-D coordinate arrays).

    Examples:
        >>> g = grid((0.0, 0.0), (1.0, 2.0), (2, 3))
        >>> g.points.shape, g.shape, g.points[:3].tolist()
        ((6, 2), (2, 3), [[0.0, 0.0], [0.0, 1.0], [0.0, 2.0]])
    """
    axes = tuple(np.linspace(lo, hi, n) for lo, hi, n in zip(lower, upper, sizes))
    mesh = np.meshgrid(*axes, indexing="ij")
    points = np.stack([m.reshape(-1) for m in mesh], axis=-1)
    return TestGrid(points=points, shape=tuple(sizes), axes=axes)


# --------------------------------------------------------------------------------------
# constraint pieces


class Fields:
    """A system's network as its operator and pieces see it (a problem with several ``fields``).

    ``u["v"]`` (or ``u.v``) is the scalar field ``v``, a function of one point that
    [`partial`][cgmpinn_jax.derivatives.partial] differentiates, and ``u(z)`` all fields at once,
    shape ``(F,)``. The library builds it ([`Problem.as_fields`][cgmpinn_jax.Problem.as_fields]);
    a user reads it in ``operator`` and in [`Condition`][cgmpinn_jax.problems.Condition].

    Args:
        fn: the network, a function of one point ``(d,)`` returning all fields, shape ``(F,)``.
        names: the field names, ``F`` strings, in the order of ``fn``'s outputs.

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
        """The position of the field ``name`` in ``names`` (a ValueError for an unknown name).

        Args:
            name: a field name.
        """
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
        raise ValueError(
            f"{type(problem).__name__} states no exact(z), so a piece without a target g cannot "
            f"derive one: give the piece its target, e.g. Dirichlet(g=0.0) or "
            f"Dirichlet(g=lambda z: ...)"
        )
    fields = tuple(getattr(problem, "fields", ("u",)))
    if len(fields) == 1:
        return problem.exact
    return Fields(problem.exact, fields)[cast(str, field)]  # a system's piece names its field


class Piece(abc.ABC):
    """One piece of a constraint term: a quantity of the network at the piece's points, compared
    with a target.

    The target is either given (``g``: a function of one point or a number) or derived from the
    exact solution when the batch is made. The loss of the piece is the mean of
    ``(value - target)^2`` over its points; a term's loss sums its pieces'.

    On a system (a problem with several ``fields``) a piece names the field it constrains
    (``field="u"``), or, for [`Condition`][cgmpinn_jax.problems.Condition], combines the fields
    itself. The pieces: [`Dirichlet`][cgmpinn_jax.problems.Dirichlet],
    [`DerivativeMatch`][cgmpinn_jax.problems.DerivativeMatch],
    [`Periodic`][cgmpinn_jax.problems.Periodic], [`Neumann`][cgmpinn_jax.problems.Neumann],
    [`Robin`][cgmpinn_jax.problems.Robin] and [`Condition`][cgmpinn_jax.problems.Condition]; a new
    kind of piece subclasses this and defines ``target`` and ``value``.

    Attributes:
        paired (bool): whether the piece's points are pairs ``(n, 2, d)`` (a class attribute;
            True for [`Periodic`][cgmpinn_jax.problems.Periodic]).
    """

    paired: ClassVar[bool] = False

    @abc.abstractmethod
    def target(self, problem: Any, points: jax.Array) -> jax.Array:
        """The target values at ``points``.

        Args:
            problem: the [`Problem`][cgmpinn_jax.Problem] (its exact solution gives a target
                that is not stated).
            points: ``(n, d)`` array of points (``(n, 2, d)`` for a paired piece).

        Returns:
            ``(n,)`` array.
        """

    @abc.abstractmethod
    def value(self, u: ScalarField, points: jax.Array) -> jax.Array:
        """The network's quantity at ``points``.

        Args:
            u: the field, a function of one point, or the [`Fields`][cgmpinn_jax.problems.Fields]
                view of a system.
            points: ``(n, d)`` array of points (``(n, 2, d)`` for a paired piece).

        Returns:
            ``(n,)`` array.
        """

    def residual(self, u: ScalarField, points: jax.Array, target: jax.Array) -> jax.Array:
        """``value(u, points) - target``: the piece's residual vector.

        Args:
            u: the field, a function of one point, or the [`Fields`][cgmpinn_jax.problems.Fields]
                view of a system.
            points: ``(n, d)`` array of points (``(n, 2, d)`` for a paired piece).
            target: ``(n,)`` array, from [`target`][cgmpinn_jax.problems.Piece.target].

        Returns:
            ``(n,)`` array.
        """
        return self.value(u, points) - target

    def scalar(self, u: Any) -> ScalarField:
        """The scalar field this piece reads.

        Args:
            u: the field, or the [`Fields`][cgmpinn_jax.problems.Fields] view of a system.

        Returns:
            ``u`` itself, or the field ``self.field`` of a system (a ValueError when the piece
            names no field).
        """
        field = getattr(self, "field", None)
        if isinstance(u, Fields):
            if field is None:
                raise ValueError(
                    f"{self!r} constrains a system with fields {u.names!r}: name one, "
                    f"e.g. field={u.names[0]!r}"
                )
            return u[field]
        return u


@dataclasses.dataclass(frozen=True)
class Dirichlet(Piece):
    """Enforces ``u(z) = g(z)`` at the piece's points ``(n, d)``: the residual is ``u(z) - g(z)``.

    Without ``g``, ``g = u*``, the problem's exact solution.

    Args:
        g: the target: a function of one point ``(d,)`` returning a scalar, or a number; None
            (default) derives it from the problem's ``exact``.
        field: the field constrained, on a system (``fields`` with more than one name).

    Examples:
        >>> import jax.numpy as jnp
        >>> from cgmpinn_jax.problems import Dirichlet
        >>> piece = Dirichlet(g=1.0)
        >>> points = jnp.array([[0.0, 0.5], [1.0, 0.5]])
        >>> u = lambda z: z[0] ** 2 + z[1]
        >>> piece.residual(u, points, piece.target(None, points)).tolist()
        [-0.5, 0.5]
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
    """Enforces ``du/dz_axis (z) = g(z)`` at the piece's points ``(n, d)``: matches the derivative
    along one coordinate.

    With ``coords = ("x", "t")``, ``DerivativeMatch(1)`` matches ``u_t`` (the damped wave's initial
    velocity) and ``DerivativeMatch(0)`` matches ``u_x`` (a Neumann condition on an axis-aligned
    edge; on a curved boundary use [`Neumann`][cgmpinn_jax.problems.Neumann]).

    Args:
        axis: the coordinate differentiated, an index into the problem's ``coords``.
        g: the target: a function of one point ``(d,)`` returning a scalar, or a number; None
            (default) derives ``du*/dz_axis`` from the problem's ``exact``.
        field: the field constrained, on a system.

    Examples:
        >>> import jax.numpy as jnp
        >>> from cgmpinn_jax.problems import DerivativeMatch
        >>> u = lambda z: z[0] ** 2 + z[1]
        >>> DerivativeMatch(0).value(u, jnp.array([[0.0, 0.5], [1.0, 0.5]])).tolist()  # u_x = 2x
        [0.0, 2.0]
    """

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
    """Enforces ``D u(z_left) = D u(z_right)`` at paired points: a periodic boundary condition.

    ``D`` is the identity (``axes=()``) or a partial derivative (``axes=(0,)`` for ``u_x``). The
    residual is ``D u(z_left) - D u(z_right)`` (target 0). The piece's points are pairs, shape
    ``(n, 2, d)``: build them with ``jnp.stack([left, right], axis=1)``, e.g. from
    [`edge_pair`][cgmpinn_jax.problems.edge_pair].

    Args:
        axes: the coordinates differentiated, indices into the problem's ``coords`` (one per
            derivative order); ``()`` (default) compares the values.
        field: the field constrained, on a system.

    Examples:
        >>> import jax.numpy as jnp
        >>> from cgmpinn_jax.problems import Periodic
        >>> pairs = jnp.array([[[-1.0, 0.5], [1.0, 0.5]]])  # (1, 2, 2): x = -1 paired with x = 1
        >>> u = lambda z: z[0] ** 2 + z[1]
        >>> Periodic().value(u, pairs).tolist(), Periodic((0,)).value(u, pairs).tolist()
        ([0.0], [-4.0])
    """

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
    """Enforces a general condition ``fn(u, z) = g(z)`` at the piece's points ``(n, d)``.

    ``fn`` reads the network as the operator does (a scalar field, or the
    [`Fields`][cgmpinn_jax.problems.Fields] of a system) at one point and returns a scalar:
    ``Condition(lambda u, z: u["p"](z))`` pins the pressure where its points lie, and
    ``Condition(lambda u, z: u["u"](z) + u["v"](z), g=1.0)`` constrains a combination.

    Args:
        fn: ``(u, z) -> scalar``, with ``z`` one point ``(d,)``.
        g: the target: a function of one point or a number (default 0).

    Examples:
        >>> import jax.numpy as jnp
        >>> from cgmpinn_jax.problems import Condition
        >>> piece = Condition(lambda u, z: u(z) + z[0], g=2.0)
        >>> points = jnp.array([[0.0], [1.0]])
        >>> piece.residual(lambda z: 3.0 * z[0], points, piece.target(None, points)).tolist()
        [-2.0, 2.0]
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
    """A problem's default network size and training budgets (the reference code's
    per-benchmark settings, docs/reference-code.md §8.7).

    A [`TrainConfig`][cgmpinn_jax.TrainConfig] field left at ``None`` falls back to these (set
    them on a problem class as ``defaults = ProblemDefaults(width=80)``). Method-specific settings
    (CGMPINN's input map and init on Fisher-KPP, the ablation's ReLoBRaLo stages) belong to the
    method: [`MethodSettings`][cgmpinn_jax.methods.MethodSettings].

    Attributes:
        width: hidden width of the network (``TrainConfig.width``).
        depth: number of hidden layers (``TrainConfig.depth``).
        adam_steps: the Adam stage's budget, in steps (an [`Adam`][cgmpinn_jax.stages.Adam]
            stage's ``steps`` left at ``None``).
        second_steps: the budget of every stage after Adam, in iterations (such a stage's
            ``steps`` left at ``None``).
        k_upd: steps between the curriculum weights' refreshes (``TrainConfig.cgm.k_upd``), unless
            the method sets its own.
    """

    width: int = 50
    depth: int = 4
    adam_steps: int = 5000
    second_steps: int = 10000
    k_upd: int = 200
    # Method-specific settings (CGMPINN's Fisher-KPP input map, init and k_upd; the
    # ablation's ReLoBRaLo stages) belong to the method: cgmpinn_jax.methods.MethodSettings.
