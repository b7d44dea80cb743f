"""The primitive `Polygon`: checks (simple, non-degenerate) and an ear-clipping
triangulation for exact uniform sampling. Public through `cgmpinn_jax.geometry`."""

from __future__ import annotations

import dataclasses
import math
from typing import Any, cast

import numpy as np

from ._base import Draw, Geometry, _check_name, _xp

__all__ = ["Polygon"]

Point = tuple[float, float]


def _cross(o: Point, a: Point, b: Point) -> float:
    """The z-component of ``(a - o) x (b - o)``: > 0 when ``o, a, b`` turn counter-clockwise."""
    return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])


def _on_segment(a: Point, b: Point, p: Point, eps: float) -> bool:
    """Whether ``p``, known to be on the line through ``a`` and ``b``, lies between them."""
    return (
        min(a[0], b[0]) - eps <= p[0] <= max(a[0], b[0]) + eps
        and min(a[1], b[1]) - eps <= p[1] <= max(a[1], b[1]) + eps
    )


def _segments_meet(p1: Point, p2: Point, q1: Point, q2: Point, eps: float, eps_len: float) -> bool:
    """Whether the closed segments ``p1 p2`` and ``q1 q2`` share a point."""
    d1, d2 = _cross(q1, q2, p1), _cross(q1, q2, p2)
    d3, d4 = _cross(p1, p2, q1), _cross(p1, p2, q2)

    def straddle(u: float, v: float) -> bool:
        return (u > eps and v < -eps) or (u < -eps and v > eps)

    if straddle(d1, d2) and straddle(d3, d4):
        return True
    cases = ((q1, q2, p1, d1), (q1, q2, p2, d2), (p1, p2, q1, d3), (p1, p2, q2, d4))
    return any(abs(d) <= eps and _on_segment(a, b, p, eps_len) for a, b, p, d in cases)


def _parse_vertices(vertices: Any) -> tuple[Point, ...]:
    try:
        arr = np.asarray(vertices, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(
            f"Polygon: vertices must be a sequence of (x, y) pairs, got {vertices!r}"
        ) from None
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise ValueError(
            f"Polygon: vertices must be a sequence of (x, y) pairs, got shape {arr.shape}"
        )
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"Polygon: vertices must be finite, got {vertices!r}")
    verts = tuple((float(x), float(y)) for x, y in arr)
    if len(set(verts)) < 3:
        raise ValueError(f"Polygon: vertices must hold at least 3 distinct points, got {verts}")
    return verts


def _check_simple(verts: tuple[Point, ...]) -> float:
    """Raise unless the vertices trace a simple polygon of nonzero area; return its signed area."""
    k = len(verts)
    for i in range(k):
        if verts[i] == verts[(i + 1) % k]:
            raise ValueError(
                f"Polygon: vertices {i} and {(i + 1) % k} coincide ({verts[i]}), so edge {i} "
                "has zero length and no normal (do not repeat the first vertex at the end)"
            )
    arr = np.asarray(verts)
    ext = float(np.max(arr.max(axis=0) - arr.min(axis=0)))
    area = 0.5 * float(
        np.sum(arr[:, 0] * np.roll(arr[:, 1], -1) - np.roll(arr[:, 0], -1) * arr[:, 1])
    )
    if abs(area) <= 1e-12 * ext**2:
        raise ValueError(f"Polygon: the vertices enclose zero area (all on one line?): {verts}")
    eps, eps_len = 1e-12 * ext**2, 1e-12 * ext
    for i in range(k):
        a, b, c = verts[i], verts[(i + 1) % k], verts[(i + 2) % k]
        if (
            abs(_cross(a, b, c)) <= eps
            and (b[0] - a[0]) * (c[0] - b[0]) + (b[1] - a[1]) * (c[1] - b[1]) < 0
        ):
            raise ValueError(
                f"Polygon: edges {i} and {(i + 1) % k} fold back onto each other at vertex "
                f"{(i + 1) % k} {b}; the polygon must be simple"
            )
        for j in range(i + 2, k):
            if (j + 1) % k == i:
                continue
            if _segments_meet(a, b, verts[j], verts[(j + 1) % k], eps, eps_len):
                raise ValueError(
                    f"Polygon: edges {i} and {j} intersect; the vertices must trace a simple "
                    "(non-self-intersecting) polygon"
                )
    return area


def _find_ear(v: tuple[Point, ...], idx: list[int], eps: float) -> int | None:
    """Position in ``idx`` of a vertex whose triangle with its neighbours is an ear (CCW
    polygon)."""
    m = len(idx)
    for strict in (True, False):
        for i in range(m):
            a, b, c = v[idx[i - 1]], v[idx[i]], v[idx[(i + 1) % m]]
            turn = _cross(a, b, c)
            if (turn <= eps) if strict else (turn < -eps):
                continue
            others = (v[j] for j in idx if j not in (idx[i - 1], idx[i], idx[(i + 1) % m]))
            if not any(
                _cross(a, b, p) >= -eps and _cross(b, c, p) >= -eps and _cross(c, a, p) >= -eps
                for p in others
            ):
                return i
    return None


def _triangulate(v: tuple[Point, ...], eps: float) -> tuple[tuple[Point, Point, Point], ...]:
    """Ear clipping of a simple counter-clockwise polygon."""
    idx = list(range(len(v)))
    tris = []
    while len(idx) > 3:
        i = _find_ear(v, idx, eps)
        if i is None:  # pragma: no cover - a simple polygon always has an ear
            raise ValueError(f"Polygon: could not triangulate the vertices {v}")
        tris.append((v[idx[i - 1]], v[idx[i]], v[idx[(i + 1) % len(idx)]]))
        del idx[i]
    tris.append(cast("tuple[Point, Point, Point]", tuple(v[j] for j in idx)))
    return tuple(tris)


@dataclasses.dataclass(frozen=True)
class Polygon(Geometry):
    """A closed simple polygon in 2-D, its vertices in either orientation.

    Its boundary is one part named ``name``; normals point outward whichever way the
    vertices run. Interior points are drawn exactly uniformly from an ear-clipping
    triangulation (no rejection); boundary points uniformly by arc length.

    Args:
        vertices: ``(x, y)`` pairs, at least 3 distinct, without repeating the first at the
            end; the edges must not cross or touch (other than consecutive ones at their
            shared vertex) and the area must be nonzero.
        name: the name of the boundary part.

    Examples:
        >>> import jax
        >>> ell = Polygon(((0, 0), (2, 0), (2, 1), (1, 1), (1, 2), (0, 2)), name="ell")
        >>> ell.measure(), ell.boundary_measure()
        (3.0, 8.0)
        >>> ell.contains([[0.5, 1.5], [1.5, 1.5]]).tolist()
        [True, False]
        >>> ell.normal([[1.5, 1.0]]).tolist()
        [[0.0, 1.0]]
        >>> x = ell.sample_interior(jax.random.key(0), 8)
        >>> x.shape, bool(ell.contains(x).all())
        ((8, 2), True)
    """

    vertices: tuple[tuple[float, float], ...]
    name: str = "polygon"
    # signed: > 0 counter-clockwise
    _area: float = dataclasses.field(init=False, repr=False, compare=False)
    _triangles: tuple = dataclasses.field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        verts = _parse_vertices(self.vertices)
        area = _check_simple(verts)
        _check_name("Polygon", self.name)
        ccw = verts if area > 0 else verts[::-1]
        ext = max(max(p[i] for p in verts) - min(p[i] for p in verts) for i in (0, 1))
        object.__setattr__(self, "vertices", verts)
        object.__setattr__(self, "_area", area)
        object.__setattr__(self, "_triangles", _triangulate(ccw, 1e-12 * ext**2))

    def _label(self) -> str:
        return f"Polygon({self.name!r})"

    @property
    def lower(self) -> tuple[float, ...]:
        """The bounding box's lower corner."""
        return tuple(min(p[i] for p in self.vertices) for i in (0, 1))

    @property
    def upper(self) -> tuple[float, ...]:
        """The bounding box's upper corner."""
        return tuple(max(p[i] for p in self.vertices) for i in (0, 1))

    def boundary_names(self) -> tuple[str, ...]:
        return (self.name,)

    def measure(self) -> float:
        return float(abs(self._area))

    def boundary_measure(self, name: str | None = None) -> float:
        self._part_name(name, "boundary_measure")
        k = len(self.vertices)
        return float(sum(math.dist(self.vertices[i], self.vertices[(i + 1) % k]) for i in range(k)))

    def _edges(self, xp: Any, dtype: Any) -> tuple[Any, Any, Any]:
        """Edge starts ``a``, directions ``b - a`` and outward unit normals, each ``(k, 2)``."""
        a = xp.asarray(self.vertices, dtype=dtype)
        d = xp.roll(a, -1, axis=0) - a
        turn = 1.0 if self._area > 0 else -1.0  # counter-clockwise: (dy, -dx) points out
        nrm = turn * xp.stack([d[:, 1], -d[:, 0]], axis=1)
        return a, d, nrm / xp.linalg.norm(nrm, axis=1, keepdims=True)

    def _edge_distances(self, x: Any) -> Any:
        """Distance from each point to each edge, ``(n, k)``."""
        xp = _xp(x)
        a, d, _ = self._edges(xp, x.dtype)
        w = x[:, None, :] - a[None]
        t = xp.clip(xp.sum(w * d, axis=-1) / xp.sum(d * d, axis=-1), 0.0, 1.0)
        return xp.linalg.norm(w - t[..., None] * d, axis=-1)

    def _crossing_inside(self, x: Any) -> Any:
        """Even-odd rule: whether each point is inside (boundary points either way)."""
        xp = _xp(x)
        a, d, _ = self._edges(xp, x.dtype)
        ay, by = a[:, 1], a[:, 1] + d[:, 1]
        y = x[:, 1:2]
        straddles = (ay > y) != (by > y)
        dy = xp.where(d[:, 1] != 0, d[:, 1], 1.0)
        x_cross = a[:, 0] + (y - ay) * d[:, 0] / dy
        return xp.sum(straddles & (x[:, 0:1] < x_cross), axis=1) % 2 == 1

    def _inside(self, x: Any, t: float) -> Any:
        xp = _xp(x)
        dist = xp.min(self._edge_distances(x), axis=1)
        return xp.where(self._crossing_inside(x), -dist, dist) <= t

    def _on_part(self, x: Any, name: str) -> Any:
        return self._part_distance(x, name) <= self._tol

    def _part_normal(self, x: Any, name: str) -> Any:
        _, _, nrm = self._edges(_xp(x), x.dtype)
        return nrm[_xp(x).argmin(self._edge_distances(x), axis=1)]

    def _part_distance(self, x: Any, name: str) -> Any:
        return _xp(x).min(self._edge_distances(x), axis=1)

    def _interior_candidates(self, draw: Draw, m: int) -> tuple[Any, None]:
        xp = draw.xp
        tri = xp.asarray(self._triangles, dtype=draw.dtype)  # (T, 3, 2)
        ab, ac = tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]
        areas = np.abs([_cross(*t) for t in self._triangles])
        which = draw.choice(len(self._triangles), m, areas)
        uv = draw.uniform((m, 2))
        uv = xp.where(uv.sum(axis=1, keepdims=True) > 1.0, 1.0 - uv, uv)
        return tri[which, 0] + uv[:, :1] * ab[which] + uv[:, 1:] * ac[which], None

    def _boundary_candidates(self, draw: Draw, m: int, name: str | None) -> tuple[Any, Any, None]:
        xp = draw.xp
        a, d, nrm = self._edges(xp, draw.dtype)
        lengths = xp.linalg.norm(d, axis=1)
        ends = xp.cumsum(lengths)
        s = draw.uniform((m,)) * ends[-1]
        edge = xp.clip(xp.searchsorted(ends, s, side="right"), 0, a.shape[0] - 1)
        t = xp.clip((s - (ends[edge] - lengths[edge])) / lengths[edge], 0.0, 1.0)
        return a[edge] + t[:, None] * d[edge], nrm[edge], None
