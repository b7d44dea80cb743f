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

        def test_grid(self):
            return grid(self.lower, self.upper, (200,))

:func:`validate_problem` checks a problem's declarations against each other once, before
anything is compiled; :func:`~cgmpinn_jax.train` and :func:`~cgmpinn_jax.sweep` call it.
"""

from __future__ import annotations

import abc
import dataclasses
import math
from typing import Any, Callable, ClassVar, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .. import taylor as _taylor
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
    "validate_problem",
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
    """A PDE ``N[u](z) = f(z)`` on a box, with its constraint terms and its points.

    Define a subclass, decorated ``@dataclasses.dataclass(frozen=True)`` (so instances are
    hashable and can be closed over by jitted functions). Its dataclass *fields* are the
    problem's parameters (coefficients, point counts: ``nu: float = 0.05``,
    ``n_pde: int = 2000``); they must be hashable (floats, ints, strings, tuples) and are
    saved with a trained model so :func:`~cgmpinn_jax.load_model` can rebuild the problem.

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
    * ``defaults`` (:class:`ProblemDefaults`, optional): the budgets and sizes a
      :class:`~cgmpinn_jax.TrainConfig` left at ``None`` falls back to.

    Methods to define (``z`` is ONE point, shape ``(d,)``; use ``jax.numpy``, the methods are
    traced by JAX):

    * ``exact(self, z) -> scalar``: the exact (or a reference) solution ``u*(z)``, shape
      ``()``. The source ``f = N[u*]`` and every constraint target are derived from it.
    * ``operator(self, u, z) -> scalar``: ``N[u](z)`` for any scalar field ``u`` (a function
      of one point); take derivatives with :func:`~cgmpinn_jax.derivatives.partial`,
      e.g. ``partial(u, 1)(z) - partial(u, 0, 0)(z)`` for ``u_t - u_xx``.
    * ``pieces(self) -> {term: (Piece, ...)}``: for every name in ``terms``, a tuple of
      pieces: :class:`Dirichlet` (``u = u*``), :class:`DerivativeMatch` (``u_axis = u*_axis``)
      or :class:`Periodic` (``u`` at paired points agrees).
    * ``sample_points(self, key) -> dict``: the training points drawn with the PRNG ``key``:
      ``{"pde": (N, d) array, term: (array per piece, ...) for each term}``. Use
      ``jax.random`` (not numpy) so that sweeps can vmap it; helpers: :func:`uniform`,
      :func:`~cgmpinn_jax.problems.box_edges`, :func:`~cgmpinn_jax.problems.edge_pair`,
      :func:`~cgmpinn_jax.problems.initial_line`.
    * ``test_grid(self) -> TestGrid``: the evaluation grid of the metrics, usually
      ``grid(self.lower, self.upper, sizes)``. (``test_points``, its former name, is still
      accepted in a subclass.)

    Pairing and summing rules:

    * ``pieces()[term][i]`` pairs with ``sample_points(key)[term][i]``: same number of
      entries, in the same order (two edges = two pieces = two point arrays). Points are
      ``(n, d)``, or ``(n, 2, d)`` pairs for :class:`Periodic`.
    * A term's loss is the **sum** of its pieces' mean squared errors (the reference code's
      rule; lbPINN takes the mean over the concatenated residuals instead), so splitting a
      boundary into two pieces weights each side as much as one whole-boundary piece.
    * The PDE term's loss is the (curriculum-weighted) mean of ``N[u] - f`` squared over the
      ``"pde"`` points.

    :func:`validate_problem` checks all of this once, before any compilation, and names
    the class, the method and what was expected when something disagrees.

    Example: see the module docstring, ``cgmpinn_jax/examples.py`` and the README's
    "Your own PDE".
    """

    name: ClassVar[str]
    coords: ClassVar[tuple[str, ...]]
    lower: ClassVar[tuple[float, ...]]
    upper: ClassVar[tuple[float, ...]]
    terms: ClassVar[tuple[str, ...]]  # constraint terms, in ReLoBRaLo order after "pde"
    homogeneous: ClassVar[bool] = False  # True: no source term (f = 0)
    defaults: ClassVar[ProblemDefaults] = ProblemDefaults()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # ``test_points`` was the method's former name: a subclass defining only it still works.
        if "test_points" in cls.__dict__ and "test_grid" not in cls.__dict__:
            cls.test_grid = cls.__dict__["test_points"]

    # ---- to implement ------------------------------------------------------------
    @abc.abstractmethod
    def exact(self, z: jax.Array) -> jax.Array:
        """The exact solution at one point ``z`` of shape ``(d,)``: a scalar (shape ``()``)."""

    @abc.abstractmethod
    def operator(self, u: ScalarField, z: jax.Array) -> jax.Array:
        """The differential operator N[u] at one point ``z`` (d,) (the PDE is N[u] = f): a
        scalar. ``u`` is a scalar field of one point (the network, or ``exact``)."""

    @abc.abstractmethod
    def pieces(self) -> dict[str, tuple[Piece, ...]]:
        """``{term: (piece, ...)}`` for every term in :attr:`terms`; piece ``i`` pairs with
        point array ``i`` of :meth:`sample_points`, and a term's loss sums its pieces' MSEs."""

    @abc.abstractmethod
    def sample_points(self, key: jax.Array) -> dict[str, Any]:
        """``{"pde": (N, d), term: (points per piece, ...)}`` drawn with ``key``; points are
        ``(n, d)``, or ``(n, 2, d)`` for a :class:`Periodic` piece."""

    @abc.abstractmethod
    def test_grid(self) -> TestGrid:
        """The evaluation grid of the metrics (a :class:`TestGrid`, e.g. from :func:`grid`)."""

    def test_points(self) -> TestGrid:
        """Alias of :meth:`test_grid` (its former name)."""
        return self.test_grid()

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
        precomputed f) the source is not re-derived. The operator goes through the
        derivative fast path (:mod:`cgmpinn_jax.taylor`: one Taylor-mode pass of the
        network for all points and lanes) when it covers ``u`` and the operator, else
        ``vmap`` of the operator with nested ``jvp``; ``taylor.fast_path(False)`` forces the latter."""
        points = check_points(points, self.dim, name="pde points")
        if source is None:
            source = jax.vmap(self.source)(points)
        return _taylor.operator_values(self.operator, u, points) - source

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
        pieces = self.pieces()
        return {
            term: tuple(piece.residual(u, p, t) for piece, (p, t) in zip(pieces[term], batch[term]))
            for term in self.terms
        }

    def exact_on(self, points: Any) -> jax.Array:
        """u* at a batch of points (M, d) -> (M,)."""
        return jax.vmap(self.exact)(check_points(points, self.dim))


# --------------------------------------------------------------------------------------
# validation

_ATTR_HELP = {
    "name": "a short label, e.g. name = 'burgers'",
    "coords": "the coordinate names, e.g. coords = ('x', 't')",
    "lower": "the box's lower corner, one float per coordinate, e.g. lower = (0.0, 0.0)",
    "upper": "the box's upper corner, one float per coordinate, e.g. upper = (1.0, 1.0)",
    "terms": "the constraint terms besides the PDE, e.g. terms = ('ic', 'bc') or ()",
}
_PIECE_KINDS = "Dirichlet(), DerivativeMatch(axis) or Periodic(axes)"


def _cls_name(problem: Any) -> str:
    return problem.__name__ if isinstance(problem, type) else type(problem).__name__


def _fail(problem: Any, where: str, msg: str) -> None:
    raise ValueError(f"{_cls_name(problem)}.{where}: {msg}")


def _shape(x: Any) -> tuple[int, ...] | None:
    """The shape of an array, a ShapeDtypeStruct or a nested list; None for anything else."""
    if hasattr(x, "shape") and hasattr(x, "dtype"):
        return tuple(x.shape)
    try:
        arr = np.asarray(x)
    except Exception:
        return None
    return tuple(arr.shape) if arr.dtype.kind in "biuf" else None


def _dtype(x: Any):
    return x.dtype if hasattr(x, "dtype") else np.asarray(x).dtype


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))


def _user_call(problem: Any, where: str, fn: Callable, *args: Any) -> Any:
    """Call a user-defined method; an exception becomes a ValueError naming the method."""
    try:
        return fn(*args)
    except ValueError as e:
        if str(e).startswith(_cls_name(problem) + "."):
            raise
        raise ValueError(f"{_cls_name(problem)}.{where} raised ValueError: {e}") from e
    except Exception as e:  # noqa: BLE001 - re-raised with the culprit named
        raise ValueError(f"{_cls_name(problem)}.{where} raised {type(e).__name__}: {e}") from e


def _check_declarations(problem: "Problem") -> None:
    """Class attributes: present, of the right kind, consistent with each other."""
    cls = type(problem)
    for attr, help_ in _ATTR_HELP.items():
        if not hasattr(problem, attr):
            raise ValueError(f"{cls.__name__} must define the class attribute {attr!r} ({help_})")
    name = problem.name
    if not isinstance(name, str) or not name:
        _fail(problem, "name", f"must be a non-empty string ({_ATTR_HELP['name']}), got {name!r}")
    coords = problem.coords
    if not isinstance(coords, (tuple, list)) or not coords or not all(isinstance(c, str) and c for c in coords):
        hint = " (a string is not a tuple: write ('x',) for one coordinate)" if isinstance(coords, str) else ""
        _fail(problem, "coords", f"must be a non-empty tuple of coordinate names, e.g. ('x', 't'), got {coords!r}{hint}")
    if len(set(coords)) != len(coords):
        _fail(problem, "coords", f"names must be distinct, got {tuple(coords)!r}")
    d = len(coords)
    for attr in ("lower", "upper"):
        v = getattr(problem, attr)
        if not isinstance(v, (tuple, list)) or len(v) != d or not all(_is_number(x) for x in v):
            hint = f" ((0.0) is a float, not a tuple: write (0.0,))" if _is_number(v) else ""
            _fail(problem, attr, f"must be a tuple of {d} floats (one per coordinate of {tuple(coords)!r}), got {v!r}{hint}")
        if not all(math.isfinite(float(x)) for x in v):
            _fail(problem, attr, f"must be finite, got {tuple(v)!r}")
    bad = [c for c, lo, hi in zip(coords, problem.lower, problem.upper) if not float(lo) < float(hi)]
    if bad:
        _fail(problem, "lower/upper", f"need lower < upper along every coordinate; not so for {', '.join(bad)}: "
                                      f"lower = {tuple(problem.lower)!r}, upper = {tuple(problem.upper)!r}")
    terms = problem.terms
    if not isinstance(terms, (tuple, list)) or not all(isinstance(t, str) and t for t in terms):
        hint = " (a string is not a tuple: write ('bc',) for one term)" if isinstance(terms, str) else ""
        _fail(problem, "terms", f"must be a tuple of term names, e.g. ('ic', 'bc') or (), got {terms!r}{hint}")
    if len(set(terms)) != len(terms):
        _fail(problem, "terms", f"names must be distinct, got {tuple(terms)!r}")
    if "pde" in terms:
        _fail(problem, "terms", f"'pde' is reserved for the PDE residual term (always present); got {tuple(terms)!r}")
    if not isinstance(problem.homogeneous, (bool, np.bool_)):
        _fail(problem, "homogeneous", f"must be True or False, got {problem.homogeneous!r}")
    if not isinstance(problem.defaults, ProblemDefaults):
        _fail(problem, "defaults", f"must be a ProblemDefaults(...), got {type(problem.defaults).__name__}")


def _check_dataclass(problem: "Problem") -> None:
    """A decorated frozen dataclass with hashable field values."""
    cls = type(problem)
    fields = {f.name for f in dataclasses.fields(problem)}
    own = cls.__dict__.get("__annotations__", {})
    undeclared = [
        k for k, a in own.items()
        if k not in fields and "ClassVar" not in (a if isinstance(a, str) else repr(a))
    ]
    if undeclared and "__dataclass_fields__" not in cls.__dict__:
        raise ValueError(
            f"{cls.__name__} declares fields ({', '.join(undeclared)}) but is not a dataclass: "
            f"decorate it with @dataclasses.dataclass(frozen=True)"
        )
    try:
        hash(problem)
    except TypeError:
        for f in dataclasses.fields(problem):
            try:
                hash(getattr(problem, f.name))
            except TypeError:
                v = getattr(problem, f.name)
                raise ValueError(
                    f"{cls.__name__}.{f.name}: field values must be hashable (floats, ints, strings, tuples), "
                    f"got a {type(v).__name__}; use a tuple instead of a list or an array"
                ) from None
        raise ValueError(f"{cls.__name__} instances must be hashable: decorate the class with "
                         f"@dataclasses.dataclass(frozen=True)") from None


def _check_pieces(problem: "Problem", pieces: Any) -> None:
    """``pieces()``: a dict with exactly the declared terms, each a tuple of valid pieces."""
    terms = tuple(problem.terms)
    if not isinstance(pieces, dict):
        _fail(problem, "pieces()", f"must return a dict {{term: (piece, ...)}} for the terms {terms!r}, "
                                   f"got {type(pieces).__name__}")
    for t in pieces:
        if t not in terms:
            _fail(problem, "pieces()", f"returns the term {t!r}, which is not declared in terms = {terms!r}")
    for t in terms:
        if t not in pieces:
            _fail(problem, "pieces()", f"has no entry for the term {t!r} declared in terms = {terms!r}")
        group = pieces[t]
        if isinstance(group, Piece) or not isinstance(group, (tuple, list)):
            _fail(problem, f"pieces()[{t!r}]", f"must be a tuple of pieces, e.g. (Dirichlet(),), got {group!r}")
        if not group:
            _fail(problem, f"pieces()[{t!r}]", "is empty: a term needs at least one piece")
        for i, piece in enumerate(group):
            where = f"pieces()[{t!r}][{i}]"
            if isinstance(piece, type) and issubclass(piece, Piece):
                _fail(problem, where, f"must be a Piece instance: write {piece.__name__}(...), not {piece.__name__}")
            if not isinstance(piece, Piece):
                _fail(problem, where, f"must be a Piece ({_PIECE_KINDS}), got {piece!r}")
            axes = (piece.axis,) if isinstance(piece, DerivativeMatch) else getattr(piece, "axes", ()) if isinstance(piece, Periodic) else ()
            for a in axes:
                if not isinstance(a, (int, np.integer)) or isinstance(a, bool) or not 0 <= a < problem.dim:
                    _fail(problem, where, f"{piece!r}: an axis indexes coords = {tuple(problem.coords)!r}, so it must "
                                          f"be an int in 0..{problem.dim - 1}, got {a!r}")


def _check_sampled(problem: "Problem", pts: Any, pieces: dict) -> None:
    """``sample_points(key)`` against ``pieces()``: term by term, piece by piece."""
    d, terms = problem.dim, tuple(problem.terms)
    where = "sample_points(key)"
    expected_keys = ("pde",) + terms
    if not isinstance(pts, dict):
        _fail(problem, where, f"must return a dict with the keys {expected_keys!r}, got {type(pts).__name__}")
    for k in pts:
        if k not in expected_keys:
            _fail(problem, where, f"returns the key {k!r}, which is neither 'pde' nor a term declared in terms = {terms!r}")
    for k in expected_keys:
        if k not in pts:
            what = "the collocation points (N, d)" if k == "pde" else f"the points of the term {k!r}"
            _fail(problem, where, f"has no key {k!r} ({what}); expected the keys {expected_keys!r}")

    def check_array(x: Any, label: str, paired: bool) -> None:
        shape = _shape(x)
        want = f"(n, 2, {d})" if paired else f"(n, {d})"
        ok = shape is not None and len(shape) == (3 if paired else 2) and shape[-1] == d and (not paired or shape[1] == 2)
        if not ok:
            got = "not an array" if shape is None else f"shape {shape}"
            extra = " (paired points for a Periodic piece: jnp.stack([left, right], axis=1))" if paired else ""
            _fail(problem, f"{where}[{label}]", f"must be an array of shape {want} (d = {d} coordinates "
                                                f"{tuple(problem.coords)!r}){extra}, got {got}")
        if shape[0] < 1:
            _fail(problem, f"{where}[{label}]", f"has no points (shape {shape})")
        if not jnp.issubdtype(_dtype(x), jnp.floating):
            _fail(problem, f"{where}[{label}]", f"must hold floating-point coordinates, got dtype {_dtype(x)} "
                                                "(write 0.0, not 0)")

    check_array(pts["pde"], "'pde'", False)
    for t in terms:
        group, arrays = pieces[t], pts[t]
        n_pieces = len(group)
        if not isinstance(arrays, (tuple, list)):
            shape = _shape(arrays)
            _fail(problem, f"{where}[{t!r}]", f"must be a tuple with one point array per piece ({n_pieces} declared in "
                                              f"pieces()[{t!r}]), got {'an array of shape ' + str(shape) if shape else repr(arrays)}"
                                              f"; wrap a single array as (points,)")
        if len(arrays) != n_pieces:
            _fail(problem, f"{where}[{t!r}]", f"has {len(arrays)} point array(s) but pieces()[{t!r}] declares "
                                              f"{n_pieces} piece(s) {tuple(group)!r}: piece i pairs with point array i")
        for i, (piece, x) in enumerate(zip(group, arrays)):
            check_array(x, f"{t!r}][{i}", piece.paired)


def _probe_field(z: jax.Array) -> jax.Array:
    """A smooth scalar field standing in for the network in shape checks."""
    return jnp.sin(jnp.sum(z))


_VALIDATED: dict = {}


def validate_problem(problem: "Problem") -> "Problem":
    """Check a problem's declarations and methods against each other, before any compilation.

    Checked (each failure raises a ``ValueError`` naming the class, the method or attribute,
    and what was expected): the class attributes (``name``, ``coords``, ``lower < upper``
    with one bound per coordinate, ``terms``); the class is a frozen dataclass with hashable
    fields; ``exact(z)`` and ``operator(u, z)`` return a scalar for one point ``z`` of shape
    ``(d,)``; ``pieces()`` has exactly the declared terms, each a tuple of valid pieces
    (derivative axes within ``coords``); ``sample_points(key)`` returns ``"pde"`` and each
    declared term, with one point array per piece, of shape ``(n, d)`` (``(n, 2, d)`` for
    :class:`Periodic`); each piece's target and value have shape ``(n,)``; ``test_grid()``
    returns a :class:`TestGrid` of points ``(M, d)``.

    The methods are only traced (``jax.eval_shape``), never compiled or run on the training
    points, so this is cheap; the result is cached per problem.

    Args:
        problem: a :class:`Problem` instance.

    Returns:
        ``problem`` itself.

    Example:
        >>> from cgmpinn_jax.problems import get_problem, validate_problem
        >>> validate_problem(get_problem("heat")).name
        'heat'
    """
    if isinstance(problem, type) and issubclass(problem, Problem):
        raise TypeError(f"expected a Problem instance, got the class {problem.__name__}: write {problem.__name__}()")
    if not isinstance(problem, Problem):
        raise TypeError(f"expected a Problem instance (or a registry name), got {type(problem).__name__}")
    _check_dataclass(problem)
    cache_key = (type(problem), problem, bool(jax.config.jax_enable_x64))
    if cache_key in _VALIDATED:
        return problem
    _check_declarations(problem)
    d = problem.dim
    dtype = jnp.zeros(()).dtype
    z = jax.ShapeDtypeStruct((d,), dtype)
    one_point = f"for one point z of shape ({d},)"

    out = _user_call(problem, "exact(z)", jax.eval_shape, problem.exact, z)
    if _shape(out) != ():
        _fail(problem, "exact(z)", f"must return a scalar (shape ()) {one_point}, got "
                                   f"{'shape ' + str(_shape(out)) if _shape(out) is not None else repr(out)}"
                                   + ("; index the result, e.g. expr[0]" if _shape(out) == (1,) else ""))
    for label, u in (("exact", problem.exact), ("a network", _probe_field)):
        out = _user_call(problem, "operator(u, z)", jax.eval_shape, lambda q, u=u: problem.operator(u, q), z)
        if _shape(out) != ():
            _fail(problem, "operator(u, z)", f"must return a scalar (shape ()) {one_point} (u = {label}), got "
                                             f"{'shape ' + str(_shape(out)) if _shape(out) is not None else repr(out)}")

    pieces = _user_call(problem, "pieces()", problem.pieces)
    _check_pieces(problem, pieces)
    pts = _user_call(problem, "sample_points(key)", jax.eval_shape, problem.sample_points, jax.random.key(0))
    _check_sampled(problem, pts, pieces)
    for t in problem.terms:
        for i, (piece, x) in enumerate(zip(pieces[t], pts[t])):
            n = _shape(x)[0]
            spec = jax.ShapeDtypeStruct(_shape(x), dtype)
            for what, fn in (("target", lambda p: piece.target(problem, p)), ("value", lambda p: piece.value(_probe_field, p))):
                where = f"pieces()[{t!r}][{i}].{what}"
                out = _user_call(problem, where, jax.eval_shape, fn, spec)
                if _shape(out) != (n,):
                    _fail(problem, where, f"must return one value per point, shape ({n},), got {_shape(out)}")

    tg = _user_call(problem, "test_grid()", problem.test_grid)
    if not isinstance(tg, TestGrid):
        _fail(problem, "test_grid()", f"must return a TestGrid, e.g. grid(self.lower, self.upper, sizes), "
                                      f"got {type(tg).__name__}")
    shape = _shape(tg.points)
    if shape is None or len(shape) != 2 or shape[1] != d or shape[0] < 1:
        _fail(problem, "test_grid()", f"points must have shape (M, {d}), got {shape}")
    if len(_VALIDATED) > 256:
        _VALIDATED.clear()
    _VALIDATED[cache_key] = True
    return problem
