"""Domains built from primitives by set operations, to draw PINN collocation points from.

Primitives: `Box` (any ``d >= 1``), `Ball` (``d >= 2``; `Disk` in 2-D)
and `Polygon` (2-D). Combine them with ``|`` (`Union`), ``-``
(`Difference`) and ``&`` (`Intersection`). Every `Geometry` offers

* `sample_interior` -- ``n`` points uniform in the domain,
* `sample_boundary` -- ``n`` points uniform on the boundary (or one named
  part of it) with outward unit normals,
* `contains`, `on_boundary`, `normal`,
* `grid` -- the points of a tensor grid that lie in the domain (test grids),
* `measure` and `boundary_measure`.

Boundary parts are named: a primitive's boundary is one part called by its ``name`` (a Box's
faces can also be addressed as ``"name.x0-"``, ``"name.x0+"``, ...), and a set operation
keeps the parts of its operands that survive it: for ``a - b`` the parts of ``a`` outside
``b`` and those of ``b`` inside ``a``, with normals flipped. Names must be unique within a
geometry; a part that vanishes entirely, or an empty result, is a ValueError at construction.

Geometries are hashable frozen dataclasses, so a jitted function can close over them;
sampling uses `jax.random` with static counts (it works under `jax.jit` and
`jax.vmap` over keys) in jnp's current float dtype. A set operation draws a fixed,
generous number of candidates and keeps the first ``n`` valid ones: the counts come from
acceptance rates estimated once (numpy, fixed seed), which also give its Monte-Carlo
measures. Falling short is astronomically unlikely; should it happen, valid points repeat to
fill ``n`` rows (NaN rows if none is valid), never points outside the domain.

Examples: A plate with a hole: Dirichlet on the outer wall, Neumann on the hole
    >>> import jax
    >>> from cgmpinn_jax.geometry import Box, Disk
    >>> plate = Box((0.0, 0.0), (1.0, 1.0), name="wall") - Disk((0.5, 0.5), 0.2, name="hole")
    >>> interior = jax.jit(lambda k: plate.sample_interior(k, 256))(jax.random.key(0))
    >>> x_hole, n_hole = plate.sample_boundary(jax.random.key(1), 64, name="hole")
    >>> interior.shape, x_hole.shape, bool(plate.contains(interior).all())
    ((256, 2), (64, 2), True)
"""

from __future__ import annotations

from ._base import Geometry
from ._polygon import Polygon
from ._primitives import Ball, Box, Disk
from ._sets import Difference, Intersection, Union

__all__ = ["Geometry", "Box", "Ball", "Disk", "Polygon", "Union", "Difference", "Intersection"]
