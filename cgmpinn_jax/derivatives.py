"""Partial derivatives of a scalar field ``u(z)`` with respect to its coordinates.

Every problem writes its differential operator with `partial`, which builds
``z -> d^n u / dz_{a1} ... dz_{an}`` by nesting forward-mode ``jax.jvp`` along unit
vectors. For the small tanh MLPs of the benchmarks (1-2 inputs) nested forward mode is
the fastest general form we measured (see
``benchmarks/results/derivatives.md``): it avoids the reverse pass over the network that
``jax.grad``-of-``jax.grad`` needs and vectorises cleanly under ``vmap``.

Examples:
    >>> import jax.numpy as jnp
    >>> u = lambda z: jnp.sin(z[0]) * z[1] ** 2
    >>> u_xx = partial(u, 0, 0)
    >>> float(u_xx(jnp.array([0.5, 2.0])))  # -sin(0.5) * 4
    -1.917702...
"""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp

from .nn import fast_path, fast_path_enabled

ScalarField = Callable[[jax.Array], jax.Array]

__all__ = [
    "partial",
    "partial_jvp",
    "partial_reverse",
    "gradient",
    "fast_path",
    "fast_path_enabled",
]


def _unit(z: jax.Array, axis: int) -> jax.Array:
    return jnp.zeros_like(z).at[axis].set(1.0)


def _first(f: ScalarField, axis: int) -> ScalarField:
    def df(z: jax.Array) -> jax.Array:
        _, tangent = jax.jvp(f, (z,), (_unit(z, axis),))
        return tangent

    return df


def partial(f: ScalarField, *axes: int) -> ScalarField:
    r"""The partial derivative $\partial^n f / \partial z_{a_1} \cdots \partial z_{a_n}$ of a
    scalar field, as a function of one point, by nested forward mode (``jax.jvp`` along unit
    vectors).

    This is how a problem writes its differential operator, e.g.
    ``partial(u, 1)(z) - D * partial(u, 0, 0)(z)`` for ``u_t - D u_xx``.  A pure second
    derivative ``partial(f, i, i)`` of a field that offers ``f.jet2(z, v)`` (the networks
    [`MLP`][cgmpinn_jax.nn.MLP], [`LNNPINN`][cgmpinn_jax.nn.LNNPINN] and
    [`STARPINN`][cgmpinn_jax.nn.STARPINN] do) uses that Taylor-mode pass instead: the same
    value with one stream fewer than nested ``jvp``.  Inside an operator evaluated through the
    derivative fast path (see [`fast_path`][cgmpinn_jax.nn.fast_path]), ``f`` is a lane-aware
    field and ``partial`` reads the lane that one Taylor-mode pass over the whole batch has
    already computed.

    Args:
        f: a scalar field of one point ``z`` of shape ``(d,)``.
        *axes: coordinate indices ``a_1, ..., a_n``, one per derivative order
            (``partial(u, 0, 0)`` is ``u_xx``; no axes returns ``f`` itself).

    Returns:
        A function of one point ``z`` (shape ``(d,)``) returning a scalar.  Use ``jax.vmap``
        for a batch of points.

    Raises:
        ValueError: an axis that is not a non-negative int.

    Examples:
        >>> u = lambda z: z[0] ** 3 * z[1]
        >>> float(partial(u, 0, 1)(jnp.array([2.0, 5.0])))   # 3 x^2
        12.0
    """
    for axis in axes:
        if not isinstance(axis, int) or axis < 0:
            raise ValueError(f"axes must be non-negative ints, got {axis!r}")
    lane = getattr(f, "_lane_partial", None)
    if lane is not None:  # inside the fast path: read (or record) the lane
        return lane(axes)
    if len(axes) == 2 and axes[0] == axes[1] and hasattr(f, "jet2"):
        jet2, axis = f.jet2, axes[0]
        return lambda z: jet2(z, _unit(z, axis))[2]
    for axis in axes:
        f = _first(f, axis)
    return f


def partial_jvp(f: ScalarField, *axes: int) -> ScalarField:
    """[`partial`][cgmpinn_jax.derivatives.partial] without its shortcuts: always nested
    forward mode (``jax.jvp``), never the Taylor-mode pass of a network or the fast path's
    lanes; for comparisons and tests.

    Args:
        f: a scalar field of one point ``z`` of shape ``(d,)``.
        *axes: coordinate indices, one per derivative order.

    Returns:
        A function of one point ``z`` (shape ``(d,)``) returning a scalar.
    """
    for axis in axes:
        f = _first(f, axis)
    return f


def partial_reverse(f: ScalarField, *axes: int) -> ScalarField:
    """[`partial`][cgmpinn_jax.derivatives.partial] by nested reverse mode (``jax.grad``);
    slower for the small networks here, kept for comparison and as a cross-check.

    Args:
        f: a scalar field of one point ``z`` of shape ``(d,)``.
        *axes: coordinate indices, one per derivative order.

    Returns:
        A function of one point ``z`` (shape ``(d,)``) returning a scalar.
    """
    for axis in axes:
        f = (lambda g, a: lambda z: jax.grad(g)(z)[a])(f, axis)
    return f


def gradient(f: ScalarField) -> Callable[[jax.Array], jax.Array]:
    """The gradient ``z -> (df/dz_0, ..., df/dz_(d-1))`` of a scalar field by forward mode, one
    [`partial`][cgmpinn_jax.derivatives.partial] per coordinate.

    Args:
        f: a scalar field of one point ``z`` of shape ``(d,)``.

    Returns:
        A function of one point ``z`` (shape ``(d,)``) returning a ``(d,)`` array.

    Examples:
        >>> g = gradient(lambda z: z[0] ** 2 + 3.0 * z[1])
        >>> g(jnp.array([1.0, 0.0])).tolist()
        [2.0, 3.0]
    """

    def grad_f(z: jax.Array) -> jax.Array:
        return jnp.stack([partial(f, i)(z) for i in range(z.shape[-1])])

    return grad_f
