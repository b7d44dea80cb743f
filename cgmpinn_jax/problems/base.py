"""The Problem interface: a PDE, its exact solution or its data, its constraint terms and its
points.

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
(`cgmpinn_jax.geometry`) with `Neumann` and
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

from .. import nn
from ._checks import _check_pieces, _check_sampled  # the same checks as validate_problem
from ._pieces import (
    Condition,
    DerivativeMatch,
    Dirichlet,
    Fields,
    Periodic,
    Piece,
    ProblemDefaults,
    ScalarField,
    TestGrid,
    check_points,
    grid,
    uniform,
)
from ._truth import Truth, reference_of, truth_of

Batch = dict[str, Any]

__all__ = [
    "Problem",
    "ProblemDefaults",
    "TestGrid",
    "Piece",
    "Dirichlet",
    "DerivativeMatch",
    "Periodic",
    "Condition",
    "Fields",
    "Truth",
    "uniform",
    "grid",
    "check_points",
]


@dataclasses.dataclass(frozen=True)
class Problem(abc.ABC):
    """A PDE ``N[u](z) = f(z)`` on a box (or a geometry), with its constraint terms and its points.

    Define a subclass, decorated ``@dataclasses.dataclass(frozen=True)`` (so instances are
    hashable and can be closed over by jitted functions). Its dataclass *fields* are the
    problem's parameters (coefficients, point counts: ``nu: float = 0.05``,
    ``n_pde: int = 2000``); they must be hashable (floats, ints, strings, tuples) and are
    saved with a trained model so [`load_model`][cgmpinn_jax.load_model] can rebuild the problem.
    Override a parameter with [`get_problem`][cgmpinn_jax.get_problem]
    (``get_problem("heat", n_pde=500)``) or ``dataclasses.replace``.

    The class attributes below are plain assignments in the subclass body (no annotation,
    so they are not dataclass fields).

    Methods to define (``z`` is ONE point, shape ``(d,)``; use ``jax.numpy``, the methods are
    traced by JAX):

    * [`operator(u, z)`][cgmpinn_jax.Problem.operator]: ``N[u](z)`` for any scalar field ``u``
      (a function of one point); take derivatives with
      [`partial`][cgmpinn_jax.derivatives.partial], e.g. ``partial(u, 1)(z) - partial(u, 0, 0)(z)``
      for ``u_t - u_xx``.
    * [`exact(z)`][cgmpinn_jax.Problem.exact] (optional): the exact solution ``u*(z)``, shape ``()``
      (``(F,)`` on a system). The source ``f = N[u*]`` and every constraint target without a
      given ``g`` are derived from it. Without it, define
      [`source(z)`][cgmpinn_jax.Problem.source] (or set ``homogeneous = True``), give the pieces
      their targets (``Dirichlet(g=...)``), and optionally
      [`reference()`][cgmpinn_jax.Problem.reference] (data the errors are measured against).
    * [`pieces()`][cgmpinn_jax.Problem.pieces]: ``{term: (Piece, ...)}`` for every name in
      ``terms``: [`Dirichlet`][cgmpinn_jax.problems.Dirichlet] (``u = g``),
      [`DerivativeMatch`][cgmpinn_jax.problems.DerivativeMatch] (``u_axis = g``),
      [`Periodic`][cgmpinn_jax.problems.Periodic] (``u`` agrees at paired points),
      [`Neumann`][cgmpinn_jax.problems.Neumann], [`Robin`][cgmpinn_jax.problems.Robin] or
      [`Condition`][cgmpinn_jax.problems.Condition].
    * [`sample_points(key)`][cgmpinn_jax.Problem.sample_points]: the training points drawn with the
      PRNG ``key``: ``{"pde": (N, d) array, term: (array per piece, ...) for each term}``. Use
      ``jax.random`` (not numpy) so that sweeps can vmap it; helpers:
      [`uniform`][cgmpinn_jax.problems.uniform], [`box_edges`][cgmpinn_jax.problems.box_edges],
      [`edge_pair`][cgmpinn_jax.problems.edge_pair],
      [`initial_line`][cgmpinn_jax.problems.initial_line], or a geometry's samplers.
    * [`test_grid()`][cgmpinn_jax.Problem.test_grid]: the evaluation grid of the metrics, usually
      ``grid(self.lower, self.upper, sizes)`` ([`grid`][cgmpinn_jax.problems.grid]); optional when
      the problem has a reference (its points serve).

    Pairing and summing rules:

    * ``pieces()[term][i]`` pairs with ``sample_points(key)[term][i]``: same number of
      entries, in the same order (two edges = two pieces = two point arrays). Points are
      ``(n, d)``, or ``(n, 2, d)`` pairs for `Periodic`.
    * A term's loss is the **sum** of its pieces' mean squared errors (the reference code's
      rule; lbPINN takes the mean over the concatenated residuals instead), so splitting a
      boundary into two pieces weights each side as much as one whole-boundary piece.
    * The PDE term's loss is the (curriculum-weighted) mean of ``(N[u] - f)^2`` over the
      ``"pde"`` points.

    [`validate_problem`][cgmpinn_jax.problems.validate_problem] checks all of this once, before any
    compilation, and names the class, the method and what was expected when something disagrees;
    [`train`][cgmpinn_jax.train] calls it. More in the guide "Your own PDE" (``docs/own-pde.md``),
    and for problems without a closed form, "Problems from data" (``docs/problems-from-data.md``).

    Attributes:
        name (str): a short label for logs and saved runs, e.g. ``"burgers"`` (the registry
            name of a registered problem).
        coords (tuple[str, ...]): the coordinate names, e.g. ``("x", "t")``. Their order is the
            column order of every point array and what an ``axis`` index means (``partial(u, 1)``
            is ``u_t`` here); ``d = len(coords)``.
        lower (tuple[float, ...]): the box's lower corner, ``d`` floats with
            ``lower[j] < upper[j]``. Write ``(0.0,)`` in 1D: ``(0.0)`` is not a tuple. Defaults
            to the geometry's bounding box.
        upper (tuple[float, ...]): the box's upper corner, ``d`` floats.
        terms (tuple[str, ...]): the names of the constraint terms besides the PDE, e.g.
            ``("ic", "bc")`` or ``()``. One loss term each, balanced by ReLoBRaLo in the order
            ``("pde", *terms)``; ``"pde"`` itself is reserved.
        homogeneous (bool): True when ``f = 0`` (default False); the source is then not derived
            from ``exact``.
        defaults (ProblemDefaults): the network size and budgets a
            [`TrainConfig`][cgmpinn_jax.TrainConfig] left at ``None`` falls back to
            (default [`ProblemDefaults()`][cgmpinn_jax.problems.ProblemDefaults]).
        fields (tuple[str, ...]): the network's outputs, default ``("u",)``. A system names
            several: the network has one output per field, the operator receives the
            [`Fields`][cgmpinn_jax.problems.Fields] view and each piece names the field it
            constrains.
        equations (tuple[str, ...]): the names of the operator's residual equations, default
            ``("pde",)``; on a system the operator returns one value per name.
        geometry (Geometry | None): a domain built from the primitives of
            [`Geometry`][cgmpinn_jax.problems.Geometry] (``Box``, ``Disk``, ... and set operations),
            or None (default) for the box ``[lower, upper]``.

    Examples:
        A problem with a closed form: ``u_xx = f`` on ``[0, 1]`` with ``u* = sin(pi x)``.

        >>> import dataclasses
        >>> import jax.numpy as jnp
        >>> from cgmpinn_jax import Problem
        >>> from cgmpinn_jax.derivatives import partial
        >>> from cgmpinn_jax.problems import Dirichlet, grid, uniform
        >>> @dataclasses.dataclass(frozen=True)
        ... class MyPoisson(Problem):
        ...     n_pde: int = 100
        ...     name = "my_poisson"
        ...     coords = ("x",)
        ...     lower = (0.0,)
        ...     upper = (1.0,)
        ...     terms = ("bc",)
        ...
        ...     def exact(self, z):
        ...         return jnp.sin(jnp.pi * z[0])
        ...
        ...     def operator(self, u, z):
        ...         return partial(u, 0, 0)(z)
        ...
        ...     def pieces(self):
        ...         return {"bc": (Dirichlet(),)}
        ...
        ...     def sample_points(self, key):
        ...         return {"pde": uniform(key, self.n_pde, self.lower, self.upper),
        ...                 "bc": (jnp.array([[0.0], [1.0]]),)}
        ...
        ...     def test_grid(self):
        ...         return grid(self.lower, self.upper, (200,))
        >>> p = MyPoisson()
        >>> p.loss_terms, p.dim
        (('pde', 'bc'), 1)
        >>> round(float(p.source(jnp.array([0.5]))), 4)  # f = -pi^2 sin(pi x), derived from exact
        -9.8696
    """

    name: ClassVar[str]
    coords: ClassVar[tuple[str, ...]]
    terms: ClassVar[tuple[str, ...]]  # constraint terms, in ReLoBRaLo order after "pde"
    homogeneous: ClassVar[bool] = False  # True: no source term (f = 0)
    defaults: ClassVar[ProblemDefaults] = ProblemDefaults()
    fields: ClassVar[tuple[str, ...]] = ("u",)  # the network's outputs (a system: several)
    equations: ClassVar[tuple[str, ...]] = ("pde",)  # the operator's residual equations
    geometry: ClassVar[Any] = None  # a cgmpinn_jax.geometry.Geometry, or None for the box

    # ---- the box: stated, or the geometry's bounding box ---------------------------------
    @property
    def lower(self) -> tuple[float, ...]:
        """The box's lower corner, ``d`` floats (a class attribute, or the geometry's bounding
        box)."""
        if self.geometry is None:
            raise AttributeError("lower")
        return tuple(float(v) for v in self.geometry.lower)

    @property
    def upper(self) -> tuple[float, ...]:
        """The box's upper corner, ``d`` floats (a class attribute, or the geometry's bounding
        box)."""
        if self.geometry is None:
            raise AttributeError("upper")
        return tuple(float(v) for v in self.geometry.upper)

    # ---- to implement ------------------------------------------------------------
    def exact(self, z: jax.Array) -> jax.Array:
        """The exact solution ``u*(z)`` at one point (optional: override it when there is a
        closed form).

        A problem without one gives its [`source`][cgmpinn_jax.Problem.source] and its pieces'
        targets ``g`` directly, and may carry a [`reference`][cgmpinn_jax.Problem.reference].

        Args:
            z: one point, shape ``(d,)``, in the order of ``coords``.

        Returns:
            A scalar (shape ``()``), or ``(F,)`` on a system (one value per name in ``fields``).

        Raises:
            NotImplementedError: when the subclass states no exact solution (the base method).
        """
        raise NotImplementedError(f"{type(self).__name__} states no exact solution")

    @abc.abstractmethod
    def operator(self, u: ScalarField, z: jax.Array) -> jax.Array:
        """The differential operator ``N[u]`` at one point (the PDE is ``N[u] = f``).

        Args:
            u: the field: a function of one point returning a scalar (the network, or
                ``exact``); on a system, the [`Fields`][cgmpinn_jax.problems.Fields] view
                (``u["v"]`` is the field ``v``). Differentiate it with
                [`partial`][cgmpinn_jax.derivatives.partial].
            z: one point, shape ``(d,)``.

        Returns:
            A scalar, or one value per name in ``equations`` (a tuple or an ``(E,)`` array).
        """

    @abc.abstractmethod
    def pieces(self) -> dict[str, tuple[Piece, ...]]:
        """The constraint pieces of every term.

        Returns:
            ``{term: (piece, ...)}`` for every name in ``terms``, each piece a
            [`Piece`][cgmpinn_jax.problems.Piece]; piece ``i`` pairs with point array ``i`` of
            [`sample_points`][cgmpinn_jax.Problem.sample_points], and a term's loss sums its
            pieces' mean squared errors.
        """

    @abc.abstractmethod
    def sample_points(self, key: jax.Array) -> dict[str, Any]:
        """The training points, drawn with ``key`` (use ``jax.random``, so that sweeps can vmap it).

        Args:
            key: a JAX PRNG key.

        Returns:
            ``{"pde": (N, d) array, term: (points per piece, ...) for each term}``; a piece's
            points are ``(n, d)``, or ``(n, 2, d)`` pairs for a
            [`Periodic`][cgmpinn_jax.problems.Periodic] piece.
        """

    def test_grid(self) -> TestGrid:
        """The evaluation grid of the metrics.

        Default: the reference's own points ([`reference`][cgmpinn_jax.Problem.reference]); a
        problem with an exact solution and no reference defines it.

        Returns:
            A [`TestGrid`][cgmpinn_jax.problems.TestGrid], e.g. from
            [`grid`][cgmpinn_jax.problems.grid].
        """
        ref = self.reference_data()
        if ref is None:
            raise NotImplementedError(
                f"{type(self).__name__} must define test_grid() (it has no reference data "
                "whose points could serve)"
            )
        return TestGrid(points=ref.points, shape=(ref.points.shape[0],), axes=())

    def reference(self) -> Any:
        """A reference solution as data (optional: override it when there is one).

        Errors are measured against [`exact`][cgmpinn_jax.Problem.exact] when the problem states
        it, else against this; a problem with neither has no error metrics.

        Returns:
            A [`Reference`][cgmpinn_jax.problems.Reference] (points, values, field names), e.g.
            from [`load_reference`][cgmpinn_jax.problems.load_reference], or None (the default).
        """
        return None

    # ---- derived -----------------------------------------------------------------
    @property
    def dim(self) -> int:
        """The number of coordinates, ``d = len(coords)``."""
        return len(self.coords)

    @property
    def loss_terms(self) -> tuple[str, ...]:
        """All loss terms in ReLoBRaLo order: ``("pde", *terms)``."""
        return ("pde",) + tuple(self.terms)

    @property
    def has_exact(self) -> bool:
        """Whether the problem states an exact solution (overrides
        [`exact`][cgmpinn_jax.Problem.exact])."""
        return type(self).exact is not Problem.exact

    @property
    def is_system(self) -> bool:
        """Several fields or several residual equations."""
        return len(self.fields) > 1 or len(self.equations) > 1

    def reference_data(self) -> Any:
        """[`reference`][cgmpinn_jax.Problem.reference], read once per problem instance (cached)."""
        return reference_of(self)

    def truth(self, dtype=None) -> Truth | None:
        """What errors are measured against: the exact solution on the test grid, else the
        reference.

        Args:
            dtype: the dtype the exact solution is evaluated in (default: the current default
                float).

        Returns:
            A [`Truth`][cgmpinn_jax.problems.Truth] (points, values, against what), or None when
            the problem has neither an exact solution nor a reference.
        """
        return truth_of(self, dtype)

    def as_fields(self, u: Any) -> Any:
        """``u`` as the operator and pieces see it.

        Args:
            u: a function of one point: the network (``(F,)`` outputs on a system) or ``exact``.

        Returns:
            ``u`` itself for one field, else its [`Fields`][cgmpinn_jax.problems.Fields] view.
        """
        return u if len(self.fields) == 1 else Fields(u, self.fields)

    def _equations(self, out: Any) -> jax.Array:
        return out if len(self.equations) == 1 else jnp.stack(out)

    def source(self, z: jax.Array) -> jax.Array:
        """The source term ``f(z) = N[u*](z)``, by automatic differentiation (0 for homogeneous
        PDEs).

        A problem without an exact solution overrides this (or sets ``homogeneous = True``).

        Args:
            z: one point, shape ``(d,)``.

        Returns:
            A scalar, or ``(E,)`` with several equations.

        Raises:
            ValueError: when the problem states neither ``exact`` nor ``homogeneous = True``.
        """
        if self.homogeneous:
            return jnp.zeros(
                () if len(self.equations) == 1 else (len(self.equations),), dtype=z.dtype
            )
        if not self.has_exact:
            raise ValueError(
                f"{type(self).__name__}.source(z): the problem states no exact(z) to derive "
                "f = N[u*] from; define source(z), or set homogeneous = True when f = 0"
            )
        return self._equations(self.operator(self.as_fields(self.exact), z))

    def residual(self, u: ScalarField, z: jax.Array) -> jax.Array:
        """The PDE residual ``r(z) = N[u](z) - f(z)`` at one point.

        Args:
            u: the field, a function of one point (the network, or ``exact``).
            z: one point, shape ``(d,)``.

        Returns:
            A scalar, or ``(E,)`` with several equations.
        """
        return self._equations(self.operator(self.as_fields(u), z)) - self.source(z)

    def pde_residuals(
        self, u: ScalarField, points: jax.Array, source: jax.Array | None = None
    ) -> jax.Array:
        """The PDE residuals ``N[u] - f`` at a batch of points.

        The operator goes through the derivative fast path (one Taylor-mode pass of the network
        for all points, lanes and, on a system, fields) when it covers ``u`` and the operator,
        else ``vmap`` of the operator with nested ``jvp``;
        [`fast_path(False)`][cgmpinn_jax.nn.fast_path] forces the latter.

        Args:
            u: the field, a function of one point (the network, or ``exact``).
            points: ``(N, d)`` array of points.
            source: ``(N,)`` (``(N, E)`` on a system) precomputed values of ``f`` at ``points``
                (the batch's); None derives them.

        Returns:
            ``(N,)`` array, or ``(N, E)`` for several equations.
        """
        points = check_points(points, self.dim, name="pde points")
        if source is None:
            source = jax.vmap(self.source)(points)
        if not self.is_system:
            return nn.operator_values(self.operator, u, points) - source
        fast = nn.system_operator_values(
            lambda f, z: self._equations(self.operator(f, z)), u, points, self.fields
        )
        if fast is not None:
            return fast - source
        fields = self.as_fields(u)
        return jax.vmap(lambda z: self._equations(self.operator(fields, z)))(points) - source

    def sample(self, key: jax.Array) -> Batch:
        """Draw the training points with ``key`` and attach sources and targets: one batch.

        Args:
            key: a JAX PRNG key, passed to [`sample_points`][cgmpinn_jax.Problem.sample_points].

        Returns:
            ``{"pde": (points (N, d), source (N,)), term: ((points, target (n,)), ...) for each
            term}``: one ``(points, target)`` pair per piece, in the order of ``pieces()``.
        """
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

    def constraint_residuals(
        self, u: ScalarField, batch: Batch
    ) -> dict[str, tuple[jax.Array, ...]]:
        """The residual vectors of every piece of every constraint term.

        Args:
            u: the field, a function of one point (the network).
            batch: a batch from [`sample`][cgmpinn_jax.Problem.sample].

        Returns:
            ``{term: (residual (n,), ...)}``, one array per piece.
        """
        pieces, u = self.pieces(), self.as_fields(u)
        return {
            term: tuple(piece.residual(u, p, t) for piece, (p, t) in zip(pieces[term], batch[term]))
            for term in self.terms
        }

    def exact_on(self, points: Any) -> jax.Array:
        """The exact solution at a batch of points.

        Args:
            points: ``(M, d)`` array of points.

        Returns:
            ``(M,)`` array, or ``(M, F)`` on a system.
        """
        return jax.vmap(self.exact)(check_points(points, self.dim))


def _forwarded(attr: str) -> property:
    """A read-only property that reads ``attr`` of the wrapped problem, ``self.forward``."""
    return property(
        lambda self: getattr(self.forward, attr), doc=f"The forward problem's ``{attr}``."
    )


class ForwardWrapper(Problem):
    """A problem built around another one, ``self.forward`` (a dataclass field of the subclass):
    everything the forward problem states (name, coordinates, box, geometry, fields, equations,
    defaults, exact solution, source, reference, test grid) is the forward problem's, so errors
    are measured as for it. A subclass states its own ``terms``, ``pieces`` and
    ``sample_points`` (a hard constraint drops pieces, an inverse problem adds observations).
    """

    forward: Problem

    name = _forwarded("name")
    coords = _forwarded("coords")
    lower = _forwarded("lower")
    upper = _forwarded("upper")
    homogeneous = _forwarded("homogeneous")
    defaults = _forwarded("defaults")
    fields = _forwarded("fields")
    equations = _forwarded("equations")
    geometry = _forwarded("geometry")
    has_exact = _forwarded("has_exact")

    def exact(self, z):
        return self.forward.exact(z)

    def source(self, z):
        return self.forward.source(z)

    def test_grid(self) -> TestGrid:
        return self.forward.test_grid()

    def reference(self):
        return self.forward.reference()

    def reference_data(self):
        return self.forward.reference_data()
