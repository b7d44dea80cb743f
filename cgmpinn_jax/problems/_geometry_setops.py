"""The set operations `Union`, `Difference` and `Intersection` of geometries
(see `._geometry_setbase` for how they sample). Public through
`cgmpinn_jax.problems.geometry`."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from ._geometry_base import SET_OPERATIONS
from ._geometry_setbase import _SetOperation
from ._geometry_util import Draw, _all_valid

__all__ = ["Union", "Difference", "Intersection"]


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
        >>> from cgmpinn_jax.problems.geometry import Box
        >>> ell = Box((0.0, 0.0), (2.0, 1.0), name="bottom") | Box((0.0, 0.0), (1.0, 2.0), name="left")
        >>> ell.boundary_names(), ell.lower, ell.upper, round(ell.measure(), 1)
        (('bottom', 'left'), (0.0, 0.0), (2.0, 2.0), 3.0)
    """

    _empty_hint: ClassVar[str] = "both operands are empty"
    _vanish_hint: ClassVar[tuple[str, str]] = ("it lies inside the second operand", "it lies inside the first operand")

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
        valid = xp.where(from_a, _all_valid(va, m, xp), _all_valid(vb, m, xp) & ~self.a._inside(xb, 0.0))
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
        >>> from cgmpinn_jax.problems.geometry import Box, Disk
        >>> plate = Box((-1.0, -1.0), (1.0, 1.0), name="wall") - Disk((0.0, 0.0), 0.5, name="hole")
        >>> x, nrm = plate.sample_boundary(jax.random.key(0), 3, name="hole")
        >>> bool(jax.numpy.allclose(nrm, -x / 0.5, atol=1e-5))
        True
    """

    _flip: ClassVar[float] = -1.0
    _empty_hint: ClassVar[str] = "the second operand covers the first"
    _vanish_hint: ClassVar[tuple[str, str]] = ("it lies inside the second operand",
                                               "it lies outside the first operand, which the second does not cut")

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
        >>> from cgmpinn_jax.problems.geometry import Box, Disk
        >>> half = Disk((0.0, 0.0), 1.0, name="arc") & Box((0.0, -1.0), (1.0, 1.0), name="cut")
        >>> half.boundary_names(), half.lower, half.upper
        (('arc', 'cut'), (0.0, -1.0), (1.0, 1.0))
        >>> half.on_boundary([[0.0, 0.5], [0.5, 0.5]]).tolist(), half.normal([[0.0, 0.5]]).tolist()
        ([True, False], [[-1.0, 0.0]])
    """

    _empty_hint: ClassVar[str] = "the operands do not overlap"
    _vanish_hint: ClassVar[tuple[str, str]] = ("it lies outside the second operand",
                                               "it lies outside the first operand")

    def _check_bounds(self) -> None:
        if any(lo >= hi for lo, hi in zip(self.lower, self.upper)):
            raise ValueError(f"{self._label()}: the result is empty (the operands' bounding boxes do not overlap)")

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
