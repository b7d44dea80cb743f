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
    """``(n, d)`` outward normals at ``points`` from a geometry (``normal.normal(points, boundary)``)
    or a function of one point returning ``(d,)``."""
    if hasattr(normal, "boundary_names"):  # a Geometry
        return jnp.asarray(normal.normal(points, boundary), points.dtype)
    return jnp.asarray(jax.vmap(normal)(points), points.dtype)


def _normal_derivative(u, points: jax.Array, normals: jax.Array) -> jax.Array:
    return jax.vmap(lambda z, n: jax.jvp(u, (z,), (n,))[1])(points, normals)


@dataclasses.dataclass(frozen=True)
class Neumann(Piece):
    """``n(z) . grad u(z) - g(z)`` on a boundary.

    Args:
        normal: a `Geometry` (its outward normal on the
            part ``boundary``) or a function of one point returning the unit normal ``(d,)``.
        boundary: the boundary part's name in the geometry (None: the whole boundary).
        g: the target, a function of one point or a number (default 0).
        field: the field constrained, on a system.
    """

    normal: Any
    boundary: str | None = None
    g: Any = dataclasses.field(default=0.0, kw_only=True)
    field: str | None = dataclasses.field(default=None, kw_only=True)

    def target(self, problem, points):
        return _values_of(self.g, points)

    def value(self, u, points):
        return _normal_derivative(self.scalar(u), points, normals_at(self.normal, self.boundary, points))


@dataclasses.dataclass(frozen=True)
class Robin(Piece):
    """``a u(z) + b n(z) . grad u(z) - g(z)`` on a boundary (``a``, ``b`` numbers; the other
    arguments as for `Neumann`)."""

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
