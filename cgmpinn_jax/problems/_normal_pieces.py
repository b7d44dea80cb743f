"""Constraint pieces on a curved or slanted boundary: `Neumann` ``n . grad u = g`` and
`Robin` ``a u + b n . grad u = g``, with ``n`` the outward unit normal of a
`geometry` boundary (or a function of one point).

The normal derivative is one forward-mode ``jax.jvp`` of the field along ``n`` per point.
Normals are checked once, on a concrete draw, by `validate_problem`:
a zero-length normal is an error, never a silent zero condition."""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp

from ._pieces import Piece, _values_of

__all__ = ["Neumann", "Robin", "normals_at"]


def normals_at(normal: Any, boundary: str | None, points: jax.Array) -> jax.Array:
    """``(n, d)`` outward normals at ``points`` from a geometry
    (``normal.normal(points, boundary)``) or a function of one point returning ``(d,)``."""
    if hasattr(normal, "boundary_names"):  # a Geometry
        return jnp.asarray(normal.normal(points, boundary), points.dtype)
    return jnp.asarray(jax.vmap(normal)(points), points.dtype)


def _normal_derivative(u, points: jax.Array, normals: jax.Array) -> jax.Array:
    return jax.vmap(lambda z, n: jax.jvp(u, (z,), (n,))[1])(points, normals)


@dataclasses.dataclass(frozen=True)
class Neumann(Piece):
    """Enforces the Neumann condition ``n(z) . grad u(z) = g(z)`` at boundary points ``(n, d)``.

    The residual is ``n . grad u - g``, with ``n`` the outward unit normal: a geometry's on one of
    its boundary parts (for curved or slanted boundaries), or a given function. On an
    axis-aligned edge, [`DerivativeMatch`][cgmpinn_jax.problems.DerivativeMatch] does the same.
    [`validate_problem`][cgmpinn_jax.problems.validate_problem] checks the normals once, on a
    concrete draw of the points: a zero-length normal is an error.

    Args:
        normal: a [`Geometry`][cgmpinn_jax.problems.Geometry] (its outward normal on the part
            ``boundary``) or a function of one point ``(d,)`` returning the unit normal ``(d,)``.
        boundary: the boundary part's name in the geometry, e.g. ``"h1"`` for a hole named so
            (None, default: the whole boundary).
        g: the target: a function of one point or a number (default 0).
        field: the field constrained, on a system.

    Examples:
        ``u = x^2 + y^2`` on the unit circle has ``n . grad u = 2``:

        >>> import jax.numpy as jnp
        >>> from cgmpinn_jax.problems import Disk, Neumann
        >>> piece = Neumann(Disk((0.0, 0.0), 1.0), g=2.0)
        >>> points = jnp.array([[1.0, 0.0], [0.0, 1.0]])
        >>> piece.residual(lambda z: z @ z, points, piece.target(None, points)).tolist()
        [0.0, 0.0]
    """

    normal: Any
    boundary: str | None = None
    g: Any = dataclasses.field(default=0.0, kw_only=True)
    field: str | None = dataclasses.field(default=None, kw_only=True)

    def target(self, problem, points):
        return _values_of(self.g, points)

    def value(self, u, points):
        return _normal_derivative(
            self.scalar(u), points, normals_at(self.normal, self.boundary, points)
        )


@dataclasses.dataclass(frozen=True)
class Robin(Piece):
    """Enforces the Robin condition ``a u(z) + b n(z) . grad u(z) = g(z)`` at boundary points
    ``(n, d)``.

    The residual is ``a u + b n . grad u - g``, with ``n`` the outward unit normal as for
    [`Neumann`][cgmpinn_jax.problems.Neumann].

    Args:
        normal: a [`Geometry`][cgmpinn_jax.problems.Geometry] (its outward normal on the part
            ``boundary``) or a function of one point ``(d,)`` returning the unit normal ``(d,)``.
        boundary: the boundary part's name in the geometry (None, default: the whole boundary).
        a: the coefficient of ``u``, a number.
        b: the coefficient of the normal derivative, a number.
        g: the target: a function of one point or a number (default 0).
        field: the field constrained, on a system.

    Examples:
        ``u = x^2 + y^2`` on the unit circle: ``u + 0.5 n . grad u = 1 + 0.5 * 2``:

        >>> import jax.numpy as jnp
        >>> from cgmpinn_jax.problems import Disk, Robin
        >>> piece = Robin(Disk((0.0, 0.0), 1.0), a=1.0, b=0.5)
        >>> piece.value(lambda z: z @ z, jnp.array([[1.0, 0.0], [0.0, 1.0]])).tolist()
        [2.0, 2.0]
    """

    normal: Any
    boundary: str | None = None
    a: float = 1.0
    b: float = 1.0
    g: Any = dataclasses.field(default=0.0, kw_only=True)
    field: str | None = dataclasses.field(default=None, kw_only=True)

    def target(self, problem, points):
        return _values_of(self.g, points)

    def value(self, u, points):
        f = self.scalar(u)
        dn = _normal_derivative(f, points, normals_at(self.normal, self.boundary, points))
        return self.a * jax.vmap(f)(points) + self.b * dn
