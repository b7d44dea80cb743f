"""The set operations `Union`, `Difference` and `Intersection` of geometries, and the machinery
they share: candidates, acceptance estimates and which boundary points survive. Public through
`cgmpinn_jax.geometry`.

Sampling is rejection from proposals whose measures are known exactly, so the accepted points
are exactly uniform: interior candidates come from the first operand (a difference), the
operand of smaller proposal measure (an intersection) or both operands in proportion to
their proposal measures (a union); boundary candidates come from the primitives' boundary
parts. A candidate on a part survives when, stepping a little along its (oriented) normal,
the inner side is in the result and the outer side is not, which also removes faces two
operands share with opposite orientations (touching boxes in a union) and keeps one copy of
faces shared with the same orientation (the first operand's).

Counts are static: to return ``n`` points a call draws ``ceil((2 n + 32) / f_lo)``
candidates and keeps the first ``n`` valid ones, where ``f_lo`` is a 4-sigma lower bound on
the kept fraction. The fractions are estimated host-side in numpy with a fixed seed
(``2**17`` interior, ``2**16`` boundary candidates), once per geometry and per part, on first
need (sampling or a measure) rather than for every intermediate operand of a long chain
``a - b - c - ...``; construction only checks with ``2**12`` candidates (and, where none is
valid, with the full count) that the result and each boundary part are not empty.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, ClassVar, NamedTuple

import numpy as np

from ._base import SET_OPERATIONS, Draw, Geometry, _all_valid, _NumpyDraw, _xp

__all__ = ["Union", "Difference", "Intersection"]

# candidates the acceptance estimates are made from (lazily, on first need), those of the
# emptiness checks at construction, and their seed
_M_INTERIOR = 2**17
_M_PART = 2**16
_M_CHECK = 2**12
_SEED = 0


def _acceptance(count: int, total: int) -> tuple[float, float]:
    """The fraction of valid candidates and a conservative (about 4 sigma) lower bound on it."""
    f = count / total
    return f, max(f - 4.0 * math.sqrt(f * (1.0 - f) / total), f / 4.0)


@dataclasses.dataclass(frozen=True)
class _SetOperation(Geometry):
    """Shared machinery of the binary set operations (see the module docstring)."""

    a: Geometry
    b: Geometry
    # acceptance estimates, made on first need:
    # {("interior", None) or ("boundary", name): (f, lower bound)}
    _estimates: dict = dataclasses.field(
        init=False, repr=False, compare=False, default_factory=dict
    )

    _flip: ClassVar[float] = 1.0  # multiplies the second operand's normals
    _empty_hint: ClassVar[str] = ""
    _vanish_hint: ClassVar[tuple[str, str]] = ("", "")  # why a part of a / of b can vanish

    def __post_init__(self) -> None:
        op = type(self).__name__
        for arg in ("a", "b"):
            if not isinstance(getattr(self, arg), Geometry):
                raise TypeError(
                    f"{op}: operand {arg} must be a Geometry, got {getattr(self, arg)!r}"
                )
        if self.a.dim != self.b.dim:
            raise ValueError(
                f"{op}: the operands have different dimensions: {self.a._label()} is "
                f"{self.a.dim}-D, {self.b._label()} is {self.b.dim}-D"
            )
        shared = [p for p in self.a._all_names() if p in self.b._all_names()]
        if shared:
            raise ValueError(
                f"{op}({self.a._label()}, {self.b._label()}): boundary part name(s) {shared} "
                "appear in both operands; give the primitives distinct names, e.g. "
                "Disk(..., name='hole1')"
            )
        self._check_bounds()
        self._check_not_empty()

    def _check_bounds(self) -> None:
        pass

    def _count(self, kind: str, name: str | None, m: int, stream: int) -> int:
        """How many of ``m`` candidates (numpy, fixed seed) are valid."""
        tag = -1 if name is None else self._all_names().index(name)
        draw = _NumpyDraw(np.random.default_rng([_SEED, stream, int(kind == "interior"), tag + 1]))
        if kind == "interior":
            valid = self._interior_candidates(draw, m)[1]
        else:
            valid = self._boundary_candidates(draw, m, name)[2]
        return m if valid is None else int(np.count_nonzero(valid))

    def _estimate(self, kind: str, name: str | None = None) -> tuple[float, float]:
        """The acceptance of the interior or of a boundary part (None: all), and a lower bound."""
        key = (kind, name)
        if key not in self._estimates:
            m = _M_INTERIOR if kind == "interior" else _M_PART
            self._estimates[key] = _acceptance(self._count(kind, name, m, 0), m)
        return self._estimates[key]

    def _check_not_empty(self) -> None:
        """A quick check with few candidates; where none is valid, the full estimate decides."""
        if self._count("interior", None, _M_CHECK, 1) == 0 and self._estimate("interior")[0] == 0.0:
            raise ValueError(
                f"{self._label()}: the result is empty ({self._empty_hint}; none of {_M_INTERIOR} "
                "uniform candidate points lies in it)"
            )
        for name in self.boundary_names():
            if (
                self._count("boundary", name, _M_CHECK, 1) == 0
                and self._estimate("boundary", name)[0] == 0.0
            ):
                owner, from_b = self._owner(name)
                raise ValueError(
                    f"{self._label()}: the boundary part {name!r} of {owner._label()} vanishes "
                    f"entirely ({self._vanish_hint[from_b]}; none of {_M_PART} points drawn on it "
                    "is on the boundary of the result)"
                )

    def _label(self) -> str:
        return f"{type(self).__name__}({self.a._label()}, {self.b._label()})"

    def boundary_names(self) -> tuple[str, ...]:
        return self.a.boundary_names() + self.b.boundary_names()

    def _sub_names(self) -> tuple[str, ...]:
        return self.a._sub_names() + self.b._sub_names()

    def _owner(self, name: str) -> tuple[Geometry, bool]:
        """The operand holding the part, and whether it is the second one."""
        return (self.a, False) if name in self.a._all_names() else (self.b, True)

    # ------------------------------------------------------------ measures and acceptance

    def measure(self) -> float:
        """The area or volume, a Monte-Carlo estimate.

        Returns:
            The measure of the region the candidates are drawn from (known exactly) times the
                fraction of ``2**17`` candidates (numpy, fixed seed) in the result: the same on
                every call and run, with a relative error of about ``sqrt((1 - f) / (f 2**17))``
                for a kept fraction ``f`` (0.3% for ``f = 0.1``).
        """
        return self._interior_proposal_measure() * self._estimate("interior")[0]

    def boundary_measure(self, name: str | None = None) -> float:
        """The boundary's length or area, or one part's, a Monte-Carlo estimate.

        Args:
            name: a boundary part (one of `boundary_names`, or a Box face); None for the
                whole boundary.

        Returns:
            The measure of the primitives' boundary parts the candidates are drawn from
                (known exactly) times the fraction of ``2**16`` candidates (numpy, fixed seed) on
                this geometry's boundary: exact where nothing is cut away, the same on every call
                and run.
        """
        self._part_name(name, "boundary_measure")
        return self._boundary_proposal_measure(name) * self._estimate("boundary", name)[0]

    def _boundary_proposal_measure(self, name: str | None) -> float:
        if name is None:
            return self.a._boundary_proposal_measure(None) + self.b._boundary_proposal_measure(None)
        return self._owner(name)[0]._boundary_proposal_measure(name)

    def _interior_acceptance(self) -> float:
        return self._estimate("interior")[1]

    def _boundary_acceptance(self, name: str | None) -> float:
        return self._estimate("boundary", name)[1]

    # ------------------------------------------------------------ boundary parts

    def _leaves(self) -> tuple[Geometry, ...]:
        """The primitives of the expression, the first operand's first (depth-first)."""
        return _leaves(self.a) + _leaves(self.b)

    def _leaf_index(self, name: str) -> int:
        return next(j for j, leaf in enumerate(self._leaves()) if name in leaf._all_names())

    def _flipped(self, name: str) -> bool:
        """Whether the named part's normals are its primitive's, negated (an odd number of
        differences has it on the removed side)."""
        owner, from_b = self._owner(name)
        flipped = from_b and self._flip < 0
        return flipped != owner._flipped(name) if isinstance(owner, _SetOperation) else flipped

    def _filter(self, x: Any, n: Any, ids: Any) -> tuple[Any, Any]:
        """Oriented normals and survival of boundary points ``x`` of the primitives ``ids``
        (indices into `_leaves`) with the primitives' own outward normals ``n``."""
        xp = _xp(x)
        rows = _walk(self, x + self._nudge * n, x - self._nudge * n, ids, 0)
        return xp.where(rows.flipped[:, None], -n, n), rows.keep

    def _on_parts(self, x: Any, names: tuple[str, ...]) -> Any:
        # one pass over the expression for all parts at once: the points repeated per part
        xp, leaves, m = _xp(x), self._leaves(), x.shape[0]
        idx = [self._leaf_index(p) for p in names]
        normals = xp.concatenate([leaves[j]._part_normal(x, p) for j, p in zip(idx, names)])
        ids = xp.concatenate([xp.full((m,), j) for j in idx])
        _, keep = self._filter(xp.concatenate([x] * len(names)), normals, ids)
        on_leaf = xp.stack([leaves[j]._on_part(x, p) for j, p in zip(idx, names)])
        return on_leaf & keep.reshape(len(names), m)

    def _on_part(self, x: Any, name: str) -> Any:
        return self._on_parts(x, (name,))[0]

    def _part_normal(self, x: Any, name: str) -> Any:
        n = self._leaves()[self._leaf_index(name)]._part_normal(x, name)
        return -n if self._flipped(name) else n

    def _part_distance(self, x: Any, name: str) -> Any:
        return self._leaves()[self._leaf_index(name)]._part_distance(x, name)

    def _boundary_candidates(self, draw: Draw, m: int, name: str | None) -> tuple[Any, Any, Any]:
        xp, leaves = draw.xp, self._leaves()
        if name is not None:
            j = self._leaf_index(name)
            x, n, _ = leaves[j]._boundary_candidates(draw, m, name)
            ids = xp.full((m,), j)
        else:  # every primitive's whole boundary, in proportion to its measure
            cands = [leaf._boundary_candidates(draw, m, None) for leaf in leaves]
            ids = draw.choice(
                len(leaves), m, np.asarray([leaf.boundary_measure() for leaf in leaves])
            )
            rows = xp.arange(m)
            x = xp.stack([c[0] for c in cands])[ids, rows]
            n = xp.stack([c[1] for c in cands])[ids, rows]
        n, keep = self._filter(x, n, ids)
        return x, n, keep

    def _combine(self, in_a: Any, in_b: Any) -> Any:
        """Membership in the result from membership in the operands."""
        raise NotImplementedError


class _Rows(NamedTuple):
    """Per boundary point, what `_walk` knows about one node of the expression."""

    plus: Any  # x + nudge n (n the primitive's normal) in the node
    minus: Any  # x - nudge n in the node
    keep: Any  # survives every set operation from the primitive up to this node
    flipped: Any  # the node's outward normal is -n
    under: Any  # the point's primitive belongs to this node


def _leaves(geom: Geometry) -> tuple[Geometry, ...]:
    return geom._leaves() if isinstance(geom, _SetOperation) else (geom,)


def _walk(node: Geometry, plus: Any, minus: Any, ids: Any, start: int) -> _Rows:
    """Bottom-up over the expression: at every set operation above a point's primitive, the
    inner side (against the oriented normal) must be in the result and the outer side not;
    and a point of the second operand must not lie where the first operand has a boundary
    with the same orientation (that copy is kept instead). Each primitive is evaluated once."""
    xp = _xp(plus)
    if not isinstance(node, _SetOperation):
        under = ids == start
        return _Rows(
            node._inside(plus, 0.0),
            node._inside(minus, 0.0),
            xp.ones_like(under),
            xp.zeros_like(under),
            under,
        )
    ra = _walk(node.a, plus, minus, ids, start)
    rb = _walk(node.b, plus, minus, ids, start + len(_leaves(node.a)))
    plus_in, minus_in = node._combine(ra.plus, rb.plus), node._combine(ra.minus, rb.minus)
    flipped = xp.where(rb.under, rb.flipped != (node._flip < 0), ra.flipped)
    inner, outer = xp.where(flipped, plus_in, minus_in), xp.where(flipped, minus_in, plus_in)
    a_inner, a_outer = xp.where(flipped, ra.plus, ra.minus), xp.where(flipped, ra.minus, ra.plus)
    here = inner & ~outer & ~(rb.under & a_inner & ~a_outer)
    under = ra.under | rb.under
    return _Rows(plus_in, minus_in, ra.keep & rb.keep & (here | ~under), flipped, under)


@dataclasses.dataclass(frozen=True)
class Union(_SetOperation):
    """The union ``a | b``: points in either operand.

    Boundary parts: those of each operand outside the other. Interior points are drawn from
    both operands in proportion to their measures, a point of ``b`` kept only outside ``a``.

    Args:
        a: the first geometry; where the operands share a boundary face with the same
            orientation, its copy is the one kept.
        b: the second geometry, of the same dimension as ``a``, without a boundary part name
            in common with it.

    Examples:
        >>> from cgmpinn_jax.geometry import Box
        >>> ell = (
        ...     Box((0.0, 0.0), (2.0, 1.0), name="bottom")
        ...     | Box((0.0, 0.0), (1.0, 2.0), name="left")
        ... )
        >>> ell.boundary_names(), ell.lower, ell.upper, round(ell.measure(), 1)
        (('bottom', 'left'), (0.0, 0.0), (2.0, 2.0), 3.0)
    """

    _empty_hint: ClassVar[str] = "both operands are empty"
    _vanish_hint: ClassVar[tuple[str, str]] = (
        "it lies inside the second operand",
        "it lies inside the first operand",
    )

    @property
    def lower(self) -> tuple[float, ...]:
        """The bounding box's lower corner."""
        return tuple(min(p, q) for p, q in zip(self.a.lower, self.b.lower))

    @property
    def upper(self) -> tuple[float, ...]:
        """The bounding box's upper corner."""
        return tuple(max(p, q) for p, q in zip(self.a.upper, self.b.upper))

    def _inside(self, x: Any, t: float) -> Any:
        return self.a._inside(x, t) | self.b._inside(x, t)

    def _combine(self, in_a: Any, in_b: Any) -> Any:
        return in_a | in_b

    def _interior_proposal_measure(self) -> float:
        return self.a._interior_proposal_measure() + self.b._interior_proposal_measure()

    def _interior_candidates(self, draw: Draw, m: int) -> tuple[Any, Any]:
        xp = draw.xp
        xa, va = self.a._interior_candidates(draw, m)
        xb, vb = self.b._interior_candidates(draw, m)
        pa, pb = self.a._interior_proposal_measure(), self.b._interior_proposal_measure()
        from_a = draw.uniform((m,)) < pa / (pa + pb)
        valid = xp.where(
            from_a, _all_valid(va, m, xp), _all_valid(vb, m, xp) & ~self.a._inside(xb, 0.0)
        )
        return xp.where(from_a[:, None], xa, xb), valid


@dataclasses.dataclass(frozen=True)
class Difference(_SetOperation):
    """The difference ``a - b``: points of ``a`` not in (the interior of) ``b``.

    Boundary parts: those of ``a`` outside ``b`` and those of ``b`` inside ``a``, the latter
    with flipped normals (they point into ``b``, out of the difference). Interior points are
    drawn from ``a`` and kept outside ``b``.

    Args:
        a: the geometry to cut from.
        b: the geometry to remove, of the same dimension as ``a``, without a boundary part
            name in common with it; its boundary must cut ``a`` (else its part vanishes, a
            ValueError).

    Examples:
        >>> import jax
        >>> from cgmpinn_jax.geometry import Box, Disk
        >>> plate = Box((-1.0, -1.0), (1.0, 1.0), name="wall") - Disk((0.0, 0.0), 0.5, name="hole")
        >>> x, nrm = plate.sample_boundary(jax.random.key(0), 3, name="hole")
        >>> bool(jax.numpy.allclose(nrm, -x / 0.5, atol=1e-5))
        True
    """

    _flip: ClassVar[float] = -1.0
    _empty_hint: ClassVar[str] = "the second operand covers the first"
    _vanish_hint: ClassVar[tuple[str, str]] = (
        "it lies inside the second operand",
        "it lies outside the first operand, which the second does not cut",
    )

    @property
    def lower(self) -> tuple[float, ...]:
        """The bounding box's lower corner (the first operand's)."""
        return self.a.lower

    @property
    def upper(self) -> tuple[float, ...]:
        """The bounding box's upper corner (the first operand's)."""
        return self.a.upper

    def _inside(self, x: Any, t: float) -> Any:
        return self.a._inside(x, t) & ~self.b._inside(x, -t)

    def _combine(self, in_a: Any, in_b: Any) -> Any:
        return in_a & ~in_b

    def _interior_proposal_measure(self) -> float:
        return self.a._interior_proposal_measure()

    def _interior_candidates(self, draw: Draw, m: int) -> tuple[Any, Any]:
        x, valid = self.a._interior_candidates(draw, m)
        return x, _all_valid(valid, m, draw.xp) & ~self.b._inside(x, 0.0)


@dataclasses.dataclass(frozen=True)
class Intersection(_SetOperation):
    """The intersection ``a & b``: points in both operands.

    Boundary parts: those of each operand inside the other. Interior points are drawn from
    the operand of smaller measure and kept inside the other.

    Args:
        a: the first geometry.
        b: the second geometry, of the same dimension as ``a``, overlapping it, without a
            boundary part name in common with it.

    Examples:
        >>> from cgmpinn_jax.geometry import Box, Disk
        >>> half = Disk((0.0, 0.0), 1.0, name="arc") & Box((0.0, -1.0), (1.0, 1.0), name="cut")
        >>> half.boundary_names(), half.lower, half.upper
        (('arc', 'cut'), (0.0, -1.0), (1.0, 1.0))
        >>> half.on_boundary([[0.0, 0.5], [0.5, 0.5]]).tolist(), half.normal([[0.0, 0.5]]).tolist()
        ([True, False], [[-1.0, 0.0]])
    """

    _empty_hint: ClassVar[str] = "the operands do not overlap"
    _vanish_hint: ClassVar[tuple[str, str]] = (
        "it lies outside the second operand",
        "it lies outside the first operand",
    )

    def _check_bounds(self) -> None:
        if any(lo >= hi for lo, hi in zip(self.lower, self.upper)):
            raise ValueError(
                f"{self._label()}: the result is empty (the operands' bounding boxes do not "
                "overlap)"
            )

    @property
    def lower(self) -> tuple[float, ...]:
        """The bounding box's lower corner (the overlap of the operands' boxes)."""
        return tuple(max(p, q) for p, q in zip(self.a.lower, self.b.lower))

    @property
    def upper(self) -> tuple[float, ...]:
        """The bounding box's upper corner (the overlap of the operands' boxes)."""
        return tuple(min(p, q) for p, q in zip(self.a.upper, self.b.upper))

    def _inside(self, x: Any, t: float) -> Any:
        return self.a._inside(x, t) & self.b._inside(x, t)

    def _combine(self, in_a: Any, in_b: Any) -> Any:
        return in_a & in_b

    def _interior_proposal_measure(self) -> float:
        return min(self.a._interior_proposal_measure(), self.b._interior_proposal_measure())

    def _interior_candidates(self, draw: Draw, m: int) -> tuple[Any, Any]:
        small, other = self.a, self.b
        if other._interior_proposal_measure() < small._interior_proposal_measure():
            small, other = other, small
        x, valid = small._interior_candidates(draw, m)
        return x, _all_valid(valid, m, draw.xp) & other._inside(x, 0.0)


SET_OPERATIONS.update(union=Union, difference=Difference, intersection=Intersection)
