"""The primitives `Box`, `Ball` and `Disk`.
Public through `cgmpinn_jax.geometry`."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from ._base import Draw, Geometry, _check_name, _float_tuple, _xp

__all__ = ["Box", "Ball", "Disk"]


@dataclasses.dataclass(frozen=True)
class Box(Geometry):
    """The axis-aligned box ``[lower_0, upper_0] x ... x [lower_{d-1}, upper_{d-1}]``, any
    ``d >= 1``.

    Its boundary is one part named ``name``; each face can also be addressed on its own as
    ``f"{name}.x{i}-"`` (the face ``x_i = lower_i``) or ``f"{name}.x{i}+"`` (``x_i = upper_i``),
    see `face_names`. In 1-D the faces are the two end points.

    Args:
        lower: the lower corner, ``d`` numbers.
        upper: the upper corner, ``d`` numbers, each greater than the lower one.
        name: the name of the boundary part.

    Examples:
        >>> import jax
        >>> box = Box((0.0, 0.0), (2.0, 1.0), name="wall")
        >>> box.measure(), box.boundary_measure(), box.face_names()
        (2.0, 6.0, ('wall.x0-', 'wall.x0+', 'wall.x1-', 'wall.x1+'))
        >>> x, nrm = box.sample_boundary(jax.random.key(0), 8)
        >>> x.shape, bool(box.on_boundary(x).all())
        ((8, 2), True)
    """

    lower: tuple[float, ...]
    upper: tuple[float, ...]
    name: str = "box"

    def __post_init__(self) -> None:
        lower = _float_tuple(self.lower, "Box", "lower")
        upper = _float_tuple(self.upper, "Box", "upper")
        if len(lower) != len(upper):
            raise ValueError(
                f"Box: lower and upper must have the same length, got {len(lower)} and "
                f"{len(upper)} ({lower} and {upper})"
            )
        for i, (lo, hi) in enumerate(zip(lower, upper)):
            if not lo < hi:
                raise ValueError(
                    f"Box: lower must be < upper in every coordinate; coordinate {i} has "
                    f"lower={lo} >= upper={hi}"
                )
        _check_name("Box", self.name)
        object.__setattr__(self, "lower", lower)
        object.__setattr__(self, "upper", upper)

    def _label(self) -> str:
        return f"Box({self.name!r})"

    def face_names(self) -> tuple[str, ...]:
        """The faces' part names, ``x_0 = lower_0`` first, then ``x_0 = upper_0``,
        ``x_1 = lower_1``, ...

        Returns:
            A tuple of ``2 d`` strings ``f"{name}.x{i}-"`` / ``f"{name}.x{i}+"``.

        Examples:
            >>> Box((0.0,), (1.0,), name="rod").face_names()
            ('rod.x0-', 'rod.x0+')
        """
        return tuple(f"{self.name}.x{i}{s}" for i in range(self.dim) for s in "-+")

    def boundary_names(self) -> tuple[str, ...]:
        return (self.name,)

    def _sub_names(self) -> tuple[str, ...]:
        return self.face_names()

    def _face_areas(self) -> list[float]:
        ext = [u - lo for lo, u in zip(self.lower, self.upper)]
        return [math.prod(ext[:i] + ext[i + 1 :]) for i in range(self.dim) for _ in "-+"]

    def measure(self) -> float:
        return float(math.prod(u - lo for lo, u in zip(self.lower, self.upper)))

    def boundary_measure(self, name: str | None = None) -> float:
        self._part_name(name, "boundary_measure")
        areas = self._face_areas()
        return float(
            sum(areas) if name in (None, self.name) else areas[self.face_names().index(name)]
        )

    def _arrays(self, xp: Any, dtype: Any) -> tuple[Any, Any]:
        return xp.asarray(self.lower, dtype=dtype), xp.asarray(self.upper, dtype=dtype)

    def _inside(self, x: Any, t: float) -> Any:
        xp = _xp(x)
        lo, hi = self._arrays(xp, x.dtype)
        return xp.all((x >= lo - t) & (x <= hi + t), axis=1)

    def _face_gaps(self, x: Any) -> Any:
        """Signed distance of each point to each face's plane, outward positive: ``(n, 2 d)``."""
        xp = _xp(x)
        lo, hi = self._arrays(xp, x.dtype)
        return xp.stack([lo - x, x - hi], axis=-1).reshape(x.shape[0], 2 * self.dim)

    def _on_part(self, x: Any, name: str) -> Any:
        tol = self._tol
        if name == self.name:
            return self._inside(x, tol) & ~self._inside(x, -tol)
        face = self.face_names().index(name)
        return self._inside(x, tol) & (abs(self._face_gaps(x)[:, face]) <= tol)

    def _face_normals(self, xp: Any, faces: Any, dtype: Any) -> Any:
        sign = xp.where(faces % 2 == 1, 1.0, -1.0)[:, None]
        return xp.where(xp.eye(self.dim, dtype=bool)[faces // 2], sign, 0.0).astype(dtype)

    def _part_normal(self, x: Any, name: str) -> Any:
        xp = _xp(x)
        if name == self.name:
            faces = xp.argmax(self._face_gaps(x), axis=1)
        else:
            faces = xp.full((x.shape[0],), self.face_names().index(name))
        return self._face_normals(xp, faces, x.dtype)

    def _part_distance(self, x: Any, name: str) -> Any:
        xp = _xp(x)
        gaps = self._face_gaps(x)
        if name == self.name:
            return abs(xp.max(gaps, axis=1))
        face = self.face_names().index(name)
        outside = xp.maximum(gaps, 0.0).reshape(x.shape[0], self.dim, 2).max(axis=2)
        normal_axis = xp.arange(self.dim) == face // 2
        outside = xp.where(normal_axis, abs(gaps[:, face : face + 1]), outside)
        return xp.linalg.norm(outside, axis=1)

    def _interior_candidates(self, draw: Draw, m: int) -> tuple[Any, None]:
        lo, hi = self._arrays(draw.xp, draw.dtype)
        return draw.uniform((m, self.dim), lo, hi), None

    def _boundary_candidates(self, draw: Draw, m: int, name: str | None) -> tuple[Any, Any, None]:
        xp = draw.xp
        if name in (None, self.name):
            faces = draw.choice(2 * self.dim, m, np.asarray(self._face_areas()))
        else:
            faces = xp.full((m,), self.face_names().index(name))
        x, _ = self._interior_candidates(draw, m)
        lo, hi = self._arrays(xp, draw.dtype)
        axis = xp.eye(self.dim, dtype=bool)[faces // 2]
        x = xp.where(axis, xp.where((faces % 2 == 1)[:, None], hi, lo), x)
        return x, self._face_normals(xp, faces, draw.dtype), None


@dataclasses.dataclass(frozen=True)
class Ball(Geometry):
    """The closed ball ``|x - center| <= radius`` in ``d >= 2`` dimensions (a disk for ``d = 2``).

    Its boundary, the sphere, is one part named ``name``.

    Args:
        center: the centre, ``d >= 2`` numbers (a 1-D ball is an interval: use `Box`).
        radius: the radius, ``> 0``.
        name: the name of the boundary part.

    Examples:
        >>> import jax, math
        >>> ball = Ball((0.0, 0.0, 0.0), 1.0)
        >>> (
        ...     math.isclose(ball.measure(), 4 / 3 * math.pi),
        ...     math.isclose(ball.boundary_measure(), 4 * math.pi),
        ... )
        (True, True)
        >>> x, nrm = ball.sample_boundary(jax.random.key(0), 5)
        >>> bool(jax.numpy.allclose(x, nrm, atol=1e-6))
        True
    """

    center: tuple[float, ...]
    radius: float
    name: str = "ball"

    def __post_init__(self) -> None:
        owner = type(self).__name__
        center = _float_tuple(self.center, owner, "center")
        if len(center) < 2:
            raise ValueError(
                f"{owner}: center must have at least 2 coordinates, got {center} "
                "(a 1-D ball is an interval: use Box((a,), (b,)))"
            )
        try:
            radius = float(self.radius)
        except (TypeError, ValueError):
            raise ValueError(f"{owner}: radius must be a number, got {self.radius!r}") from None
        if not (math.isfinite(radius) and radius > 0.0):
            raise ValueError(f"{owner}: radius must be a finite number > 0, got {self.radius!r}")
        _check_name(owner, self.name)
        object.__setattr__(self, "center", center)
        object.__setattr__(self, "radius", radius)

    def _label(self) -> str:
        return f"{type(self).__name__}({self.name!r})"

    @property
    def lower(self) -> tuple[float, ...]:
        """The bounding box's lower corner, ``center - radius``."""
        return tuple(c - self.radius for c in self.center)

    @property
    def upper(self) -> tuple[float, ...]:
        """The bounding box's upper corner, ``center + radius``."""
        return tuple(c + self.radius for c in self.center)

    def boundary_names(self) -> tuple[str, ...]:
        return (self.name,)

    def measure(self) -> float:
        d = self.dim
        return float(math.pi ** (d / 2) / math.gamma(d / 2 + 1) * self.radius**d)

    def boundary_measure(self, name: str | None = None) -> float:
        self._part_name(name, "boundary_measure")
        return self.dim * self.measure() / self.radius

    def _offsets(self, x: Any) -> tuple[Any, Any]:
        xp = _xp(x)
        diff = x - xp.asarray(self.center, dtype=x.dtype)
        return diff, xp.linalg.norm(diff, axis=1)

    def _inside(self, x: Any, t: float) -> Any:
        return self._offsets(x)[1] <= self.radius + t

    def _on_part(self, x: Any, name: str) -> Any:
        return self._part_distance(x, name) <= self._tol

    def _part_normal(self, x: Any, name: str) -> Any:
        xp = _xp(x)
        diff, dist = self._offsets(x)
        e0 = xp.eye(self.dim, dtype=x.dtype)[0]
        return xp.where((dist > 0)[:, None], diff / xp.where(dist > 0, dist, 1.0)[:, None], e0)

    def _part_distance(self, x: Any, name: str) -> Any:
        return abs(self._offsets(x)[1] - self.radius)

    def _directions(self, draw: Draw, m: int, k: int) -> Any:
        """Points uniform on the unit sphere in ``R^k``, shape ``(m, k)``."""
        g = draw.normal((m, k))
        return g / draw.xp.linalg.norm(g, axis=1, keepdims=True)

    def _interior_candidates(self, draw: Draw, m: int) -> tuple[Any, None]:
        # the first d coordinates of a uniform point on the sphere in R^(d + 2) are uniform in
        # the ball
        v = self._directions(draw, m, self.dim + 2)[:, : self.dim]
        return draw.xp.asarray(self.center, dtype=draw.dtype) + self.radius * v, None

    def _boundary_candidates(self, draw: Draw, m: int, name: str | None) -> tuple[Any, Any, None]:
        u = self._directions(draw, m, self.dim)
        return draw.xp.asarray(self.center, dtype=draw.dtype) + self.radius * u, u, None


@dataclasses.dataclass(frozen=True)
class Disk(Ball):
    """A `Ball` in 2-D: the closed disk ``|x - center| <= radius``.

    Args:
        center: the centre, 2 numbers.
        radius: the radius, ``> 0``.
        name: the name of the boundary part (the circle).

    Examples:
        >>> import math
        >>> disk = Disk((1.0, 2.0), 0.5, name="hole")
        >>> math.isclose(disk.measure(), math.pi / 4), disk.lower, disk.upper
        (True, (0.5, 1.5), (1.5, 2.5))
    """

    name: str = "disk"

    def __post_init__(self) -> None:
        super().__post_init__()
        if len(self.center) != 2:
            raise ValueError(
                f"Disk: center must have 2 coordinates, got {self.center} (use Ball for d != 2)"
            )
