"""Point sets a [`Problem`][cgmpinn_jax.problems.Problem] commonly samples.

Every helper returns plain arrays of shape ``(n, d)`` (one row per point, columns in the
order of the problem's ``coords``), ready to be returned from ``sample_points``:

* `uniform` -- i.i.d. points in a box (collocation points),
* `grid` -- a tensor grid with endpoints (test grids),
* `box_edges` -- the ``2 d`` faces of a box, one array per face (Dirichlet pieces on
  every edge of a square, both ends of an interval, ...),
* `edge_pair` -- for ``coords = ("x", "t")``: the left and right edges at the same times,
* `initial_line` -- for ``coords = ("x", "t")``: the line ``t = t0``.

Examples:
    >>> import jax
    >>> from cgmpinn_jax.problems import box_edges, edge_pair, initial_line
    >>> [e.shape for e in box_edges((0.0, 0.0), (1.0, 2.0), 5)]
    [(5, 2), (5, 2), (5, 2), (5, 2)]
    >>> left, right = edge_pair(jax.numpy.array([0.1, 0.5]), -1.0, 1.0)
    >>> left.tolist(), right.tolist()
    ([[-1.0, 0.10000000149011612], [-1.0, 0.5]], [[1.0, 0.10000000149011612], [1.0, 0.5]])
    >>> initial_line(jax.numpy.array([0.25, 0.75])).tolist()
    [[0.25, 0.0], [0.75, 0.0]]
"""

from __future__ import annotations

from typing import Sequence

import jax
import jax.numpy as jnp

from .base import grid, uniform

__all__ = ["uniform", "grid", "box_edges", "edge_pair", "initial_line"]


def box_edges(
    lower: Sequence[float],
    upper: Sequence[float],
    n: int,
    *,
    key: jax.Array | None = None,
) -> tuple[jax.Array, ...]:
    """Points on the ``2 d`` faces of the box ``[lower, upper]``, one array per face.

    The faces come in the order ``z_0 = lower_0, z_0 = upper_0, z_1 = lower_1,
    z_1 = upper_1, ...``, so for ``coords = ("x", "y")`` they are the edges ``x = lo``,
    ``x = hi``, ``y = lo``, ``y = hi``. Pair them with one piece each, e.g.
    ``pieces() -> {"bc": (Dirichlet(),) * 4}`` and ``sample_points -> {"bc": box_edges(...)}``.

    Args:
        lower: the box's lower corner, ``d`` numbers (typically the problem's ``self.lower``).
        upper: the box's upper corner, ``d`` numbers (typically ``self.upper``).
        n: points per face. Without ``key``: a ``linspace(lo, hi, n)`` on every free axis of
            the face (endpoints, hence corners, included), ``n ** (d - 1)`` points per face.
            With ``key``: ``n`` points uniform on the face. For ``d = 1`` each face is a
            single point (shape ``(1, 1)``) and ``n`` is ignored.
        key: a PRNG key for random points on each face (one sub-key per face); ``None`` for
            the deterministic grid.

    Returns:
        A tuple of ``2 d`` arrays of shape ``(m, d)`` in jnp's default float dtype, with
            ``m = n ** (d - 1)`` without ``key``, ``m = n`` with it (``m = 1`` for ``d = 1``).

    Examples: The 2D Poisson benchmark's boundary: 250 points per edge, corners included
        >>> edges = box_edges((0.0, 0.0), (1.0, 1.0), 250)
        >>> len(edges), edges[0].shape, float(edges[0][:, 0].max())
        (4, (250, 2), 0.0)
    """
    lower = tuple(float(v) for v in lower)
    upper = tuple(float(v) for v in upper)
    d = len(lower)
    if d == 0 or len(upper) != d:
        raise ValueError(
            f"box_edges: lower and upper must have the same length >= 1, got {lower} and {upper}"
        )
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"box_edges: n must be a positive int, got {n!r}")
    dtype = jnp.zeros(()).dtype
    keys = jax.random.split(key, 2 * d) if key is not None else [None] * (2 * d)
    faces = []
    for axis in range(d):
        free_lo = lower[:axis] + lower[axis + 1 :]
        free_hi = upper[:axis] + upper[axis + 1 :]
        for side, value in enumerate((lower[axis], upper[axis])):
            k = keys[2 * axis + side]
            if d == 1:
                free = jnp.zeros((1, 0), dtype)
            elif k is None:
                axes = [jnp.linspace(lo, hi, n, dtype=dtype) for lo, hi in zip(free_lo, free_hi)]
                free = jnp.stack([m.reshape(-1) for m in jnp.meshgrid(*axes, indexing="ij")], -1)
            else:
                free = uniform(k, n, free_lo, free_hi).astype(dtype)
            fixed = jnp.full((free.shape[0], 1), value, dtype)
            faces.append(jnp.concatenate([free[:, :axis], fixed, free[:, axis:]], axis=1))
    return tuple(faces)


def edge_pair(t: jax.Array, x_left: float, x_right: float) -> tuple[jax.Array, jax.Array]:
    """The spatial edges of a ``coords = ("x", "t")`` domain at the same times.

    Args:
        t: times, shape ``(n,)``.
        x_left: the left edge's position, e.g. the problem's ``self.lower[0]``.
        x_right: the right edge's position, e.g. ``self.upper[0]``.

    Returns:
        ``(left, right)``: the points ``(x_left, t_i)`` and ``(x_right, t_i)``, each of
            shape ``(n, 2)``: two point arrays, so two pieces (e.g. ``(Dirichlet(), Dirichlet())``).
            For a periodic condition stack them into pairs: ``jnp.stack([left, right], axis=1)``
            has shape ``(n, 2, 2)``, as [`Periodic`][cgmpinn_jax.problems.Periodic] expects.

    Examples:
        >>> import jax.numpy as jnp
        >>> left, right = edge_pair(jnp.array([0.0, 0.5]), -1.0, 1.0)
        >>> left.tolist(), right.tolist()
        ([[-1.0, 0.0], [-1.0, 0.5]], [[1.0, 0.0], [1.0, 0.5]])
    """
    t = jnp.asarray(t)
    return (
        jnp.stack([jnp.full_like(t, x_left), t], -1),
        jnp.stack([jnp.full_like(t, x_right), t], -1),
    )


def initial_line(x: jax.Array, t0: float = 0.0) -> jax.Array:
    """The line ``t = t0`` of a ``coords = ("x", "t")`` domain: points ``(x_i, t0)``.

    Args:
        x: positions, shape ``(n,)``.
        t0: the time (default 0).

    Returns:
        An array of shape ``(n, 2)``: one point array, so one piece (e.g. ``Dirichlet()`` for
            the initial value, ``DerivativeMatch(1)`` for an initial velocity).

    Examples:
        >>> import jax.numpy as jnp
        >>> initial_line(jnp.array([0.25, 0.75]), t0=1.0).tolist()
        [[0.25, 1.0], [0.75, 1.0]]
    """
    x = jnp.asarray(x)
    return jnp.stack([x, jnp.full_like(x, t0)], -1)
