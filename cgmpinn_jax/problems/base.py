"""The Problem interface: a PDE, its exact solution or its data, its constraint terms and its points.

A benchmark states its exact solution ``u*(z)`` and its differential operator ``N[u](z)``
once. Everything else follows by automatic differentiation:

* the source term ``f(z) = N[u*](z)`` (zero for homogeneous PDEs),
* the PDE residual of a network ``r(z) = N[u](z) - f(z)``,
* the targets of the constraint pieces (Dirichlet values, initial velocities, ...).

A problem as the field poses it states what it knows instead (docs/problems-from-data.md):
its ``source(z)`` and each piece's target ``g`` directly, a
[`Problem.reference`][cgmpinn_jax.Problem.reference] solution
as data (errors are measured against it, and the run says so), several named ``fields``
(a system: the operator sees `Fields` and returns one value per name in
``equations``), and a ``geometry`` built from primitives by set operations
(`cgmpinn_jax.problems.geometry`) with `Neumann` and
`Robin` pieces on its curved boundaries.

Constraint terms are named (``"ic"``, ``"bc"``) and each is a tuple of *pieces*; the
reference code sums the per-piece mean squared errors into one term (docs/reference-code.md §3),
and lbPINN averages the concatenated residuals instead (§10.2), so a batch keeps the
pieces separate and the method decides how to aggregate them.

A batch (`Batch`) is a plain pytree:

```python
{"pde": (points (N, d), source (N,)),
 "ic":  ((points, target), ...),      # one (points, target) pair per piece
 "bc":  ((points, target), ...)}
```

Examples: A user's own PDE (see the README's "Your own PDE")
    ```python
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

        def test_grid(self):
            return grid(self.lower, self.upper, (200,))
    ```

`validate_problem` checks a problem's declarations against each other once, before
anything is compiled; [`train`][cgmpinn_jax.train] and [`sweep`][cgmpinn_jax.sweep] call it.
"""

from __future__ import annotations

import abc
import dataclasses
from typing import Any, ClassVar

import jax
import jax.numpy as jnp

from ..nn import _taylor, _taylor_systems
from ._checks import _check_pieces, _check_sampled  # the same checks as validate_problem
from ._pieces import (Condition, DerivativeMatch, Dirichlet, Fields, Periodic, Piece, ProblemDefaults, ScalarField,
                      TestGrid, check_points, grid, uniform)
from ._truth import Truth, reference_of, truth_of

Batch = dict[str, Any]

__all__ = ["Problem", "ProblemDefaults", "TestGrid", "Piece", "Dirichlet", "DerivativeMatch", "Periodic", "Condition",
           "Fields", "Truth", "uniform", "grid", "check_points"]


@dataclasses.dataclass(frozen=True)
class Problem(abc.ABC):
    """A PDE ``N[u](z) = f(z)`` on a box, with its constraint terms and its points.

    Define a subclass, decorated ``@dataclasses.dataclass(frozen=True)`` (so instances are
    hashable and can be closed over by jitted functions). Its dataclass *fields* are the
    problem's parameters (coefficients, point counts: ``nu: float = 0.05``,
    ``n_pde: int = 2000``); they must be hashable (floats, ints, strings, tuples) and are
    saved with a trained model so [`load_model`][cgmpinn_jax.load_model] can rebuild the problem.

    Class attributes to set (plain assignments, no annotation):

    * ``name`` (str): a short label for logs and saved runs, e.g. ``"burgers"``.
    * ``coords`` (tuple of str): the coordinate names, e.g. ``("x", "t")``. Their order is
      the column order of every point array and what an ``axis`` index means
      (``partial(u, 1)`` is ``u_t`` here); ``d = len(coords)``.
    * ``lower``, ``upper`` (tuples of ``d`` floats): the box ``[lower, upper]``, with
      ``lower[j] < upper[j]``. Write ``(0.0,)`` in 1D: ``(0.0)`` is not a tuple.
    * ``terms`` (tuple of str): the names of the constraint terms besides the PDE, e.g.
      ``("ic", "bc")`` or ``()``. One loss term each, balanced by ReLoBRaLo in the order
      ``("pde", *terms)``; ``"pde"`` itself is reserved.
    * ``homogeneous`` (bool, default False): True when ``f = 0``; the source is then not
      derived from ``exact``.
    * ``defaults`` (`ProblemDefaults`, optional): the budgets and sizes a
      [`TrainConfig`][cgmpinn_jax.TrainConfig] left at ``None`` falls back to.
    * ``fields`` (tuple of str, default ``("u",)``) and ``equations`` (default ``("pde",)``):
      a system names several; the network then has one output per field, the operator
      receives the `Fields` view and returns one value per equation, and each piece names
      the field it constrains (docs/problems-from-data.md).
    * ``geometry`` (optional): a domain from `cgmpinn_jax.problems.geometry`; ``lower`` and
      ``upper`` then default to its bounding box.

    Methods to define (``z`` is ONE point, shape ``(d,)``; use ``jax.numpy``, the methods are
    traced by JAX):

    * ``exact(self, z) -> scalar`` (optional): the exact solution ``u*(z)``, shape ``()``
      (``(F,)`` on a system). The source ``f = N[u*]`` and every constraint target without a
      given ``g`` are derived from it. Without it, define ``source(self, z)`` (or set
      ``homogeneous = True``), give the pieces their targets (``Dirichlet(g=...)``), and
      optionally ``reference(self)`` (reference data the errors are measured against).
    * ``operator(self, u, z) -> scalar``: ``N[u](z)`` for any scalar field ``u`` (a function
      of one point); take derivatives with `partial`,
      e.g. ``partial(u, 1)(z) - partial(u, 0, 0)(z)`` for ``u_t - u_xx``.
    * ``pieces(self) -> {term: (Piece, ...)}``: for every name in ``terms``, a tuple of
      pieces: `Dirichlet` (``u = u*``), `DerivativeMatch` (``u_axis = u*_axis``)
      or `Periodic` (``u`` at paired points agrees).
    * ``sample_points(self, key) -> dict``: the training points drawn with the PRNG ``key``:
      ``{"pde": (N, d) array, term: (array per piece, ...) for each term}``. Use
      ``jax.random`` (not numpy) so that sweeps can vmap it; helpers: `uniform`,
      `box_edges`, `edge_pair`,
      `initial_line`.
    * ``test_grid(self) -> TestGrid``: the evaluation grid of the metrics, usually
      ``grid(self.lower, self.upper, sizes)``. (``test_points``, its former name, is still
      accepted in a subclass.)

    Pairing and summing rules:

    * ``pieces()[term][i]`` pairs with ``sample_points(key)[term][i]``: same number of
      entries, in the same order (two edges = two pieces = two point arrays). Points are
      ``(n, d)``, or ``(n, 2, d)`` pairs for `Periodic`.
    * A term's loss is the **sum** of its pieces' mean squared errors (the reference code's
      rule; lbPINN takes the mean over the concatenated residuals instead), so splitting a
      boundary into two pieces weights each side as much as one whole-boundary piece.
    * The PDE term's loss is the (curriculum-weighted) mean of ``N[u] - f`` squared over the
      ``"pde"`` points.

    `validate_problem` checks all of this once, before any compilation, and names
    the class, the method and what was expected when something disagrees.

    Example: see the module docstring, ``cgmpinn_jax/examples.py`` and the README's
    "Your own PDE".
    """

    name: ClassVar[str]
    coords: ClassVar[tuple[str, ...]]
    terms: ClassVar[tuple[str, ...]]  # constraint terms, in ReLoBRaLo order after "pde"
    homogeneous: ClassVar[bool] = False  # True: no source term (f = 0)
    defaults: ClassVar[ProblemDefaults] = ProblemDefaults()
    fields: ClassVar[tuple[str, ...]] = ("u",)  # the network's outputs (a system: several)
    equations: ClassVar[tuple[str, ...]] = ("pde",)  # the operator's residual equations
    geometry: ClassVar[Any] = None  # a cgmpinn_jax.problems.geometry.Geometry, or None for the box

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # ``test_points`` was the method's former name: a subclass defining only it still works.
        if "test_points" in cls.__dict__ and "test_grid" not in cls.__dict__:
            cls.test_grid = cls.__dict__["test_points"]

    # ---- the box: stated, or the geometry's bounding box ---------------------------------
    @property
    def lower(self) -> tuple[float, ...]:
        """The box's lower corner (a class attribute, or the geometry's bounding box)."""
        if self.geometry is None:
            raise AttributeError("lower")
        return tuple(float(v) for v in self.geometry.lower)

    @property
    def upper(self) -> tuple[float, ...]:
        """The box's upper corner (a class attribute, or the geometry's bounding box)."""
        if self.geometry is None:
            raise AttributeError("upper")
        return tuple(float(v) for v in self.geometry.upper)

    # ---- to implement ------------------------------------------------------------
    def exact(self, z: jax.Array) -> jax.Array:
        """The exact solution at one point ``z`` of shape ``(d,)``: a scalar (shape ``()``),
        or ``(F,)`` on a system. Optional: a problem without one gives its [`source`][cgmpinn_jax.Problem.source] and
        its pieces' targets ``g`` directly, and may carry a [`reference`][cgmpinn_jax.Problem.reference]."""
        raise NotImplementedError(f"{type(self).__name__} states no exact solution")

    @abc.abstractmethod
    def operator(self, u: ScalarField, z: jax.Array) -> jax.Array:
        """The differential operator N[u] at one point ``z`` (d,) (the PDE is N[u] = f): a
        scalar, or one value per name in `equations` (a tuple or an ``(E,)`` array).
        ``u`` is a scalar field of one point (the network, or ``exact``); on a system, the
        `Fields` view (``u["v"]`` is the field v)."""

    @abc.abstractmethod
    def pieces(self) -> dict[str, tuple[Piece, ...]]:
        """``{term: (piece, ...)}`` for every term in `terms`; piece ``i`` pairs with
        point array ``i`` of [`sample_points`][cgmpinn_jax.Problem.sample_points], and a term's
        loss sums its pieces' MSEs."""

    @abc.abstractmethod
    def sample_points(self, key: jax.Array) -> dict[str, Any]:
        """``{"pde": (N, d), term: (points per piece, ...)}`` drawn with ``key``; points are
        ``(n, d)``, or ``(n, 2, d)`` for a `Periodic` piece."""

    def test_grid(self) -> TestGrid:
        """The evaluation grid of the metrics (a `TestGrid`, e.g. from `grid`).
        Default: the reference's own points ([`reference`][cgmpinn_jax.Problem.reference]); a problem with an exact
        solution and no reference defines it."""
        ref = self.reference_data()
        if ref is None:
            raise NotImplementedError(f"{type(self).__name__} must define test_grid() (it has no reference data "
                                      "whose points could serve)")
        return TestGrid(points=ref.points, shape=(ref.points.shape[0],), axes=())

    def test_points(self) -> TestGrid:
        """Alias of [`test_grid`][cgmpinn_jax.Problem.test_grid] (its former name)."""
        return self.test_grid()

    def reference(self) -> Any:
        """A reference solution as data (a `Reference`:
        points, values, field names), or None. Errors are measured against [`exact`][cgmpinn_jax.Problem.exact] when
        the problem states it, else against this; a problem with neither has no error metrics."""
        return None

    # ---- derived -----------------------------------------------------------------
    @property
    def dim(self) -> int:
        return len(self.coords)

    @property
    def loss_terms(self) -> tuple[str, ...]:
        """All loss terms in ReLoBRaLo order: ``("pde", *terms)``."""
        return ("pde",) + tuple(self.terms)

    @property
    def has_exact(self) -> bool:
        """Whether the problem states an exact solution (overrides [`exact`][cgmpinn_jax.Problem.exact])."""
        return type(self).exact is not Problem.exact

    @property
    def is_system(self) -> bool:
        """Several fields or several residual equations."""
        return len(self.fields) > 1 or len(self.equations) > 1

    def reference_data(self) -> Any:
        """[`reference`][cgmpinn_jax.Problem.reference], read once per problem (cached)."""
        return reference_of(self)

    def truth(self, dtype=None) -> Truth | None:
        """What errors are measured against (`Truth`: points, values, which), or None."""
        return truth_of(self, dtype)

    def as_fields(self, u: Any) -> Any:
        """``u`` as the operator and pieces see it: itself, or the `Fields` of a system."""
        return u if len(self.fields) == 1 else Fields(u, self.fields)

    def _equations(self, out: Any) -> jax.Array:
        return out if len(self.equations) == 1 else jnp.stack(out)

    def source(self, z: jax.Array) -> jax.Array:
        """``f(z) = N[u*](z)`` by automatic differentiation (0 for homogeneous PDEs); a problem
        without an exact solution overrides this (or sets ``homogeneous = True``)."""
        if self.homogeneous:
            return jnp.zeros(() if len(self.equations) == 1 else (len(self.equations),), dtype=z.dtype)
        if not self.has_exact:
            raise ValueError(f"{type(self).__name__}.source(z): the problem states no exact(z) to derive f = N[u*] "
                             "from; define source(z), or set homogeneous = True when f = 0")
        return self._equations(self.operator(self.as_fields(self.exact), z))

    def residual(self, u: ScalarField, z: jax.Array) -> jax.Array:
        """PDE residual ``r(z) = N[u](z) - f(z)`` at one point (``(E,)`` on a system)."""
        return self._equations(self.operator(self.as_fields(u), z)) - self.source(z)

    def pde_residuals(self, u: ScalarField, points: jax.Array, source: jax.Array | None = None) -> jax.Array:
        """Residuals at ``points`` (N, d) -> (N,), or (N, E) for several equations. With
        ``source`` given (the batch's precomputed f) the source is not re-derived. The
        operator goes through the derivative fast path (`cgmpinn_jax.nn._taylor`: one
        Taylor-mode pass of the network for all points, lanes and, on a system, fields) when it
        covers ``u`` and the operator, else ``vmap`` of the operator with nested ``jvp``;
        ``taylor.fast_path(False)`` forces the latter."""
        points = check_points(points, self.dim, name="pde points")
        if source is None:
            source = jax.vmap(self.source)(points)
        if not self.is_system:
            return _taylor.operator_values(self.operator, u, points) - source
        fast = _taylor_systems.system_operator_values(lambda f, z: self._equations(self.operator(f, z)), u, points,
                                              self.fields)
        if fast is not None:
            return fast - source
        fields = self.as_fields(u)
        return jax.vmap(lambda z: self._equations(self.operator(fields, z)))(points) - source

    def sample(self, key: jax.Array) -> Batch:
        """Draw the training points with ``key`` and attach sources and targets."""
        pts = self.sample_points(key)
        pieces = self.pieces()
        _check_pieces(self, pieces)
        _check_sampled(self, pts, pieces)
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
        pieces, u = self.pieces(), self.as_fields(u)
        return {
            term: tuple(piece.residual(u, p, t) for piece, (p, t) in zip(pieces[term], batch[term]))
            for term in self.terms
        }

    def exact_on(self, points: Any) -> jax.Array:
        """u* at a batch of points (M, d) -> (M,), or (M, F) on a system."""
        return jax.vmap(self.exact)(check_points(points, self.dim))
