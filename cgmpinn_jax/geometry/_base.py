"""The `Geometry` interface and what its primitives and set operations share: argument checks,
the random draws (jax, or numpy for the host-side estimates) and the fixed-count selection of
valid candidates. Public through `cgmpinn_jax.geometry`."""

from __future__ import annotations

import abc
import functools
import math
from typing import TYPE_CHECKING, Any, Callable, cast

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["Geometry"]


# a set operation draws ceil((2 n + _MARGIN) / acceptance) candidates to keep n valid ones
_MARGIN = 32


def _float_dtype() -> Any:
    """The float dtype jnp uses now: float32, or float64 under ``jax.enable_x64(True)``."""
    return jnp.zeros(()).dtype


def _float_tuple(value: Any, owner: str, arg: str) -> tuple[float, ...]:
    """``value`` as a tuple of finite Python floats, or a ValueError naming ``owner`` and
    ``arg``."""
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{owner}: {arg} must be a sequence of numbers, got {value!r}") from None
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(
            f"{owner}: {arg} must be a non-empty 1-D sequence of numbers, got {value!r}"
        )
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{owner}: {arg} must be finite, got {value!r}")
    return tuple(float(v) for v in arr)


def _check_name(owner: str, name: Any) -> None:
    if not isinstance(name, str) or not name:
        raise ValueError(
            f"{owner}: name must be a non-empty string (the boundary part's name), got {name!r}"
        )


def _check_count(where: str, n: Any) -> int:
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(
            f"{where}: n must be a non-negative Python int (a static count under jax.jit), "
            f"got {n!r}"
        )
    return int(n)


def _n_candidates(n: int, acceptance: float) -> int:
    """How many candidates to draw so that ``n`` of them are valid with overwhelming probability."""
    return int(math.ceil((2 * n + _MARGIN) / acceptance))


def _xp(x: Any) -> Any:
    """The array namespace of ``x``: numpy for host-side estimates, jax.numpy otherwise."""
    return np if isinstance(x, np.ndarray) else jnp


def _all_valid(valid: Any, m: int, xp: Any = jnp) -> Any:
    return xp.ones((m,), dtype=bool) if valid is None else valid


class Draw:
    """Uniform random numbers on ``[0, 1)``, handed out column by column to the candidates of
    ``m`` points: a geometry takes what it needs in a fixed order, so one block of uniforms
    (one call of the generator, cheap to compile) serves a whole expression."""

    xp: Any = np
    dtype: Any = np.dtype(np.float64)

    def _take(self, m: int, k: int) -> Any:
        raise NotImplementedError

    def uniform(self, shape: tuple[int, ...], lo: Any = 0.0, hi: Any = 1.0) -> Any:
        """Uniform on ``[lo, hi)``, shape ``(m, ...)``."""
        return lo + (hi - lo) * self._take(shape[0], math.prod(shape[1:])).reshape(shape)

    def normal(self, shape: tuple[int, int]) -> Any:
        """Standard normal, shape ``(m, k)`` (Box-Muller)."""
        m, k = shape
        h = (k + 1) // 2
        u = self._take(m, 2 * h)
        xp = self.xp
        r = xp.sqrt(-2.0 * xp.log(1.0 - u[:, :h]))
        angle = (2.0 * math.pi) * u[:, h:]
        return xp.concatenate([r * xp.cos(angle), r * xp.sin(angle)], axis=1)[:, :k]

    def choice(self, k: int, m: int, weights: Any) -> Any:
        """Indices ``0 .. k - 1`` with probabilities proportional to ``weights``, shape ``(m,)``."""
        cum = np.cumsum(np.asarray(weights, dtype=np.float64))
        edges = self.xp.asarray(cum[:-1] / cum[-1], dtype=self.dtype)
        return self.xp.searchsorted(edges, self._take(m, 1)[:, 0], side="right")


class _BlockDraw(Draw):
    """Columns of one block of uniforms drawn with jax (under jit and vmap)."""

    xp = jnp

    def __init__(self, block: jax.Array):
        self.block, self.dtype, self.used = block, block.dtype, 0

    def _take(self, m: int, k: int) -> jax.Array:
        self.used += k
        return self.block[:, self.used - k : self.used]


class _CountDraw(Draw):
    """Counts the columns a candidate function takes (run on one point, in numpy)."""

    def __init__(self) -> None:
        self.used = 0

    def _take(self, m: int, k: int) -> np.ndarray:
        self.used += k
        return np.full((m, k), 0.5)


class _NumpyDraw(Draw):
    """Columns from a numpy Generator, float64: the host-side acceptance estimates."""

    def __init__(self, rng: np.random.Generator):
        self.rng = rng

    def _take(self, m: int, k: int) -> np.ndarray:
        return self.rng.random((m, k))


def _jax_candidates(key: jax.Array, m: int, fn: Callable[[Draw, int], Any]) -> Any:
    """``fn(draw, m)`` with one block of uniforms from ``key``, its width counted beforehand."""
    counter = _CountDraw()
    fn(counter, 1)
    return fn(_BlockDraw(jax.random.uniform(key, (m, max(counter.used, 1)), _float_dtype())), m)


def _first_valid(valid: jax.Array, n: int, *arrays: jax.Array) -> tuple[jax.Array, ...]:
    """The first ``n`` rows of each array whose ``valid`` entry is true (fixed shapes under jit).

    With fewer than ``n`` valid rows the valid ones repeat cyclically; with none, the rows are NaN.
    """
    order = jnp.argsort(~valid, stable=True)
    count = jnp.sum(valid)
    i = jnp.arange(n)
    idx = order[jnp.where(i < count, i, i % jnp.maximum(count, 1))]
    return tuple(jnp.where(count > 0, a[idx], jnp.nan) for a in arrays)


class Geometry(abc.ABC):
    """A closed domain in ``R^d`` to draw PINN collocation points from.

    Subclasses are frozen dataclasses holding only floats, strings, tuples and other
    geometries, so an instance is hashable and can be closed over by `jax.jit`.
    Every concrete geometry has the attributes ``lower`` and ``upper`` (its bounding box,
    tuples of floats). Sampling uses `jax.random` only (one block of uniforms per
    call), with static counts, so it works under `jax.jit` and `jax.vmap` over
    keys, and draws in jnp's current float dtype (float32, or float64 under
    ``jax.enable_x64(True)``). The public methods are compiled once per geometry and shape.

    Combine geometries with ``|`` (`Union`), ``-`` (`Difference`) and ``&``
    (`Intersection`).

    Examples:
        >>> from cgmpinn_jax.geometry import Box, Disk
        >>> plate = Box((0.0, 0.0), (1.0, 1.0), name="wall") - Disk((0.5, 0.5), 0.2, name="hole")
        >>> plate.dim, plate.boundary_names()
        (2, ('wall', 'hole'))
    """

    if TYPE_CHECKING:
        # Read-only to the type checker: a Box's fields, the other geometries' properties.
        @property
        def lower(self) -> tuple[float, ...]: ...

        @property
        def upper(self) -> tuple[float, ...]: ...

    else:
        lower: tuple[float, ...]
        upper: tuple[float, ...]

    # ---------------------------------------------------------------- what subclasses provide

    @abc.abstractmethod
    def _label(self) -> str:
        """A short description for error messages, e.g. ``"Box('wall')"``."""

    @abc.abstractmethod
    def _inside(self, x: Any, t: float) -> Any:
        """Membership in the set grown by ``t`` (shrunk for ``t < 0``); ``x`` is ``(n, d)``, a jax
        or (for host-side estimates) a numpy array, and so is the result."""

    @abc.abstractmethod
    def boundary_names(self) -> tuple[str, ...]:
        """The names of the boundary parts, in a fixed order.

        Returns:
            A tuple of strings; each is a valid ``name`` for `sample_boundary`,
                `on_boundary`, `normal` and `boundary_measure`.

        Examples:
            >>> from cgmpinn_jax.geometry import Box
            >>> Box((0.0,), (1.0,), name="rod").boundary_names()
            ('rod',)
        """

    def _sub_names(self) -> tuple[str, ...]:
        """Extra part names that address pieces of a part (a Box's faces)."""
        return ()

    def _all_names(self) -> tuple[str, ...]:
        return self.boundary_names() + self._sub_names()

    @abc.abstractmethod
    def _on_part(self, x: jax.Array, name: str) -> jax.Array:
        """Whether each point lies on the named part (within tolerance)."""

    def _on_parts(self, x: jax.Array, names: tuple[str, ...]) -> jax.Array:
        """Whether each point lies on each named part, shape ``(len(names), n)``."""
        return jnp.stack([self._on_part(x, p) for p in names])

    @abc.abstractmethod
    def _part_normal(self, x: jax.Array, name: str) -> jax.Array:
        """Outward unit normals of the named part at (the points nearest to) ``x``."""

    @abc.abstractmethod
    def _part_distance(self, x: jax.Array, name: str) -> jax.Array:
        """Distance from each point to the named part (of the primitive it comes from)."""

    @abc.abstractmethod
    def _interior_candidates(self, draw: Draw, m: int) -> tuple[Any, Any]:
        """``m`` candidates, uniform over the proposal region, and which are in the domain
        (None: all)."""

    @abc.abstractmethod
    def _boundary_candidates(self, draw: Draw, m: int, name: str | None) -> tuple[Any, Any, Any]:
        """``m`` candidate boundary points, their outward normals and which are valid
        (None: all)."""

    def _interior_proposal_measure(self) -> float:
        """The measure of the region `_interior_candidates` draws uniformly from."""
        return self.measure()

    def _boundary_proposal_measure(self, name: str | None) -> float:
        """The measure of the boundary `_boundary_candidates` draws uniformly from."""
        return self.boundary_measure(name)

    def _interior_acceptance(self) -> float | None:
        """A lower bound on the fraction of valid interior candidates; None: all are valid."""
        return None

    def _boundary_acceptance(self, name: str | None) -> float | None:
        """A lower bound on the fraction of valid boundary candidates; None: all are valid."""
        return None

    @abc.abstractmethod
    def measure(self) -> float:
        """The domain's area (2-D) or volume.

        Returns:
            A float: exact for primitives, a Monte-Carlo estimate (fixed seed, so the same
                on every call and run) for set operations.

        Examples:
            >>> from cgmpinn_jax.geometry import Box
            >>> Box((0.0, 0.0), (2.0, 3.0)).measure()
            6.0
        """

    @abc.abstractmethod
    def boundary_measure(self, name: str | None = None) -> float:
        """The length (2-D) or area of the boundary, or of one named part of it.

        Args:
            name: a boundary part (one of `boundary_names`, or a Box face); None for
                the whole boundary.

        Returns:
            A float: exact for primitives, a Monte-Carlo estimate for set operations.

        Examples:
            >>> from cgmpinn_jax.geometry import Box
            >>> Box((0.0, 0.0), (2.0, 3.0)).boundary_measure()
            10.0
        """

    # ---------------------------------------------------------------- shared public methods

    @property
    def dim(self) -> int:
        """The space dimension ``d``."""
        return len(self.lower)

    @property
    def _size(self) -> float:
        """Extent plus magnitude of the bounding box: the scale of tolerances and rounding."""
        extent = max(u - lo for lo, u in zip(self.lower, self.upper))
        return extent + max(abs(v) for v in self.lower + self.upper)

    @property
    def _tol(self) -> float:
        """Tolerance of `contains` and `on_boundary`."""
        return 1e-6 * self._size

    @property
    def _nudge(self) -> float:
        """Step along a normal that the set operations use to tell the two sides of a boundary
        apart."""
        return 1e-5 * self._size

    def _points(self, x: Any, where: str) -> jax.Array:
        x = jnp.asarray(x)
        if x.ndim != 2 or x.shape[1] != self.dim:
            raise ValueError(
                f"{self._label()}.{where}: x must have shape (n, {self.dim}), got {tuple(x.shape)}"
            )
        return x if jnp.issubdtype(x.dtype, jnp.floating) else x.astype(_float_dtype())

    def _part_name(self, name: Any, where: str) -> None:
        if name is None:
            return
        if not isinstance(name, str) or name not in self._all_names():
            extra = f" (and the faces {self._sub_names()})" if self._sub_names() else ""
            raise ValueError(
                f"{self._label()}.{where}: unknown boundary part name {name!r}; "
                f"the parts are {self.boundary_names()}{extra}"
            )

    def contains(self, x: Any) -> jax.Array:
        """Whether each point is in the closed domain (boundary included, within a tolerance
        of ``1e-6`` times the bounding box's size).

        Args:
            x: points, shape ``(n, d)``.

        Returns:
            A bool array of shape ``(n,)``.

        Examples:
            >>> from cgmpinn_jax.geometry import Disk
            >>> Disk((0.0, 0.0), 1.0).contains([[0.5, 0.0], [1.0, 0.0], [1.5, 0.0]]).tolist()
            [True, True, False]
        """
        return _contains(self, self._points(x, "contains"))

    def on_boundary(self, x: Any, name: str | None = None) -> jax.Array:
        """Whether each point lies on the boundary (or on the named part), within tolerance.

        Args:
            x: points, shape ``(n, d)``.
            name: a boundary part; None for the whole boundary.

        Returns:
            A bool array of shape ``(n,)``.

        Examples:
            >>> from cgmpinn_jax.geometry import Box
            >>> Box((0.0, 0.0), (1.0, 1.0)).on_boundary([[0.0, 0.5], [0.5, 0.5]]).tolist()
            [True, False]
        """
        x = self._points(x, "on_boundary")
        self._part_name(name, "on_boundary")
        return _on_boundary(self, x, self.boundary_names() if name is None else (name,))

    def normal(self, x: Any, name: str | None = None) -> jax.Array:
        """Outward unit normals at boundary points.

        Args:
            x: points on the boundary, shape ``(n, d)``.
            name: the part the points are on; None to take, for each point, the part it lies
                on (the nearest part if it lies on none). At a corner one of the adjacent
                parts is chosen.

        Returns:
            An array of shape ``(n, d)`` of unit vectors pointing out of the domain.

        Examples:
            >>> from cgmpinn_jax.geometry import Box
            >>> Box((0.0, 0.0), (1.0, 1.0)).normal([[1.0, 0.5], [0.5, 0.0]]).tolist()
            [[1.0, 0.0], [0.0, -1.0]]
        """
        x = self._points(x, "normal")
        self._part_name(name, "normal")
        return _normal(self, x, self.boundary_names() if name is None else (name,))

    def sample_interior(self, key: jax.Array, n: int) -> jax.Array:
        """``n`` points uniform in the domain.

        Set operations draw candidates from their operands and keep the first ``n`` inside;
        the count of candidates is fixed at construction so that falling short has a
        probability far below ``1e-9``. Should it happen, the valid points are repeated to
        fill ``n`` rows (rows of NaN if there is none): never points outside the domain.

        Args:
            key: a `jax.random.key` (or ``PRNGKey``).
            n: the number of points, a Python int (static under `jax.jit`).

        Returns:
            An array of shape ``(n, d)`` in jnp's current float dtype.

        Examples:
            >>> import jax
            >>> from cgmpinn_jax.geometry import Ball
            >>> x = Ball((0.0, 0.0, 0.0), 2.0).sample_interior(jax.random.key(0), 100)
            >>> x.shape, bool((jax.numpy.linalg.norm(x, axis=1) <= 2.0).all())
            ((100, 3), True)
        """
        return _sample_interior(self, key, _check_count(f"{self._label()}.sample_interior", n))

    def sample_boundary(
        self, key: jax.Array, n: int, name: str | None = None
    ) -> tuple[jax.Array, jax.Array]:
        """``n`` points uniform (by length or area) on the boundary, with outward normals.

        Args:
            key: a `jax.random.key` (or ``PRNGKey``).
            n: the number of points, a Python int (static under `jax.jit`).
            name: a boundary part (one of `boundary_names`, or a Box face such as
                ``"box.x0-"``); None for the whole boundary, every part in proportion to its
                measure. Set operations fill a shortfall as `sample_interior` does.

        Returns:
            ``(points, normals)``, two arrays of shape ``(n, d)``.

        Examples:
            >>> import jax
            >>> from cgmpinn_jax.geometry import Box
            >>> x, nrm = Box((0.0, 0.0), (1.0, 1.0)).sample_boundary(
            ...     jax.random.key(0), 4, "box.x0+"
            ... )
            >>> x[:, 0].tolist(), nrm[0].tolist()
            ([1.0, 1.0, 1.0, 1.0], [1.0, 0.0])
        """
        where = f"{self._label()}.sample_boundary"
        n = _check_count(where, n)
        self._part_name(name, "sample_boundary")
        acceptance = self._boundary_acceptance(name)
        if acceptance is not None and acceptance <= 0.0:
            raise ValueError(
                f"{where}: the boundary part {name!r} is empty in this geometry (no point of it "
                "survives the set operations)"
            )
        return _sample_boundary(self, key, n, name)

    def grid(self, sizes: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        """The points of a tensor grid of the bounding box that lie in the domain.

        Args:
            sizes: points per coordinate, ``d`` ints ``>= 1``; each axis is
                ``np.linspace(lower_j, upper_j, sizes_j)`` (endpoints included).

        Returns:
            ``(points, mask)``: ``points`` (float64, shape ``(M, d)``) are the grid points in
                the closed domain, in the order of ``np.meshgrid(..., indexing="ij")`` (first
                coordinate slowest); ``mask`` (bool, shape ``(prod(sizes),)``) marks them on the
                full grid.

        Examples:
            >>> from cgmpinn_jax.geometry import Disk
            >>> points, mask = Disk((0.0, 0.0), 1.0).grid((3, 3))
            >>> points.shape, mask.tolist()
            ((5, 2), [False, True, False, True, True, True, False, True, False])
        """
        bad = (
            not isinstance(sizes, (tuple, list))
            or len(sizes) != self.dim
            or any(
                isinstance(s, bool) or not isinstance(s, (int, np.integer)) or s < 1 for s in sizes
            )
        )
        if bad:
            raise ValueError(
                f"{self._label()}.grid: sizes must be a tuple of {self.dim} ints >= 1, "
                f"got {sizes!r}"
            )
        axes = [np.linspace(lo, hi, int(s)) for lo, hi, s in zip(self.lower, self.upper, sizes)]
        mesh = np.meshgrid(*axes, indexing="ij")
        points = np.stack([m.reshape(-1) for m in mesh], axis=-1)
        mask = np.asarray(self._inside(points, self._tol))  # evaluated in numpy, float64
        return points[mask], mask

    # ---------------------------------------------------------------- set operations

    def __or__(self, other: Any) -> Geometry:
        return self._set_operation("union", other)

    def __sub__(self, other: Any) -> Geometry:
        return self._set_operation("difference", other)

    def __and__(self, other: Any) -> Geometry:
        return self._set_operation("intersection", other)

    def _set_operation(self, op: str, other: Any) -> Any:
        if not isinstance(other, Geometry):
            return NotImplemented
        return SET_OPERATIONS[op](self, other)


# The set-operation classes, registered by _sets when it is imported (the public
# module imports it), so that this base module imports nothing that builds on it.
SET_OPERATIONS: dict[str, Any] = {}


# The public methods run through these, compiled once per geometry (hashable, static) and
# shape: a call outside jit compiles one program instead of dispatching op by op, and inside
# jit they are inlined.


@functools.partial(jax.jit, static_argnums=(0,))
def _contains(geom: Geometry, x: jax.Array) -> jax.Array:
    return geom._inside(x, geom._tol)


@functools.partial(jax.jit, static_argnums=(0, 2))
def _on_boundary(geom: Geometry, x: jax.Array, names: tuple[str, ...]) -> jax.Array:
    return geom._on_parts(x, names).any(axis=0)


@functools.partial(jax.jit, static_argnums=(0, 2))
def _normal(geom: Geometry, x: jax.Array, names: tuple[str, ...]) -> jax.Array:
    """The named part's normals; with several parts, each point takes the part it lies on
    (the nearest of those, or the nearest part when it lies on none)."""
    if len(names) == 1:
        return geom._part_normal(x, names[0])
    normals = jnp.stack([geom._part_normal(x, p) for p in names])
    on = geom._on_parts(x, names)
    dist = jnp.stack([geom._part_distance(x, p) for p in names])
    best = jnp.where(
        on.any(axis=0), jnp.argmin(jnp.where(on, dist, jnp.inf), axis=0), jnp.argmin(dist, axis=0)
    )
    return jnp.take_along_axis(normals, best[None, :, None], axis=0)[0]


@functools.partial(jax.jit, static_argnums=(0, 2))
def _sample_interior(geom: Geometry, key: jax.Array, n: int) -> jax.Array:
    acceptance = geom._interior_acceptance()
    m = n if acceptance is None else _n_candidates(n, acceptance)
    x, valid = _jax_candidates(key, m, geom._interior_candidates)
    return x if acceptance is None else _first_valid(_all_valid(valid, m), n, x)[0]


@functools.partial(jax.jit, static_argnums=(0, 2, 3))
def _sample_boundary(
    geom: Geometry, key: jax.Array, n: int, name: str | None
) -> tuple[jax.Array, jax.Array]:
    acceptance = geom._boundary_acceptance(name)
    m = n if acceptance is None else _n_candidates(n, acceptance)
    x, nrm, valid = _jax_candidates(
        key, m, lambda draw, m: geom._boundary_candidates(draw, m, name)
    )
    if acceptance is None:
        return x, nrm
    return cast("tuple[jax.Array, jax.Array]", _first_valid(_all_valid(valid, m), n, x, nrm))
