r"""Hard constraints: an output transform that meets Dirichlet pieces exactly.

The network's output is replaced by

$$u(z) = g(z) + d(z)\, N(z),$$

in the manner of DeepXDE's output transforms (Lagaris, Likas and Fotiadis 1998; Lu, Pestourie
et al. 2021): ``g`` takes the piece's values on its part of the boundary and ``d`` vanishes
there, so ``u`` meets the piece whatever the network ``N`` is. The pieces met this way leave
the loss and the balancing.

[`HardConstrained`][cgmpinn_jax.problems.HardConstrained] wraps a problem. Either the user
gives ``g`` and ``d``, or they are built from the problem's
[`Dirichlet`][cgmpinn_jax.problems.Dirichlet] pieces that lie on faces of its box: for each
constrained coordinate ``z_j`` with faces at ``a_j`` and/or ``b_j``,

* ``d_j = 4 (z_j - a_j)(b_j - z_j) / (b_j - a_j)^2`` (both faces) or
  ``(z_j - a_j) / (b_j - a_j)`` (one face; ``(b_j - z_j) / (b_j - a_j)`` for the upper one),
  and ``d = \prod_j d_j``;
* ``g`` is the transfinite (Coons) interpolation of the face values: the Boolean sum
  ``P = 1 - \prod_j (1 - P_j)`` of the projectors ``P_j`` that interpolate linearly in
  ``z_j`` between the faces (or extend one face's values constantly), applied to the
  faces' target functions, each evaluated at the projection of ``z`` onto its face. It uses
  the boundary data only (the exact solution restricted to the faces, where a piece has no
  ``g`` of its own), never the interior.

Where two faces meet (corners, edges), ``g`` meets both only when their data agree there
(compatible data); the lid of a cavity, say, does not, and ``u`` then differs from one of
the two values at that corner. A system gets ``g`` and ``d`` per field; a field without a
constrained piece keeps ``N`` (``g = 0``, ``d = 1``).
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any, Callable, Optional, cast

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ._pieces import Dirichlet
from .base import ForwardWrapper, Problem

__all__ = ["HardConstrained", "ConstrainedNetwork"]

# (coordinate j, side 0 = lower / 1 = upper, term, piece index): a face and the piece whose
# target it takes
Face = tuple[int, int, str, int]


def _piece_ids(problem: Problem, satisfies) -> tuple[str, ...]:
    """``satisfies`` as sorted ``"term:index"`` strings, checked against the problem's pieces."""
    pieces = problem.pieces()
    if satisfies is None:
        ids = [
            f"{t}:{i}"
            for t in problem.terms
            for i, p in enumerate(pieces[t])
            if isinstance(p, Dirichlet)
        ]
        if not ids:
            raise ValueError(
                f"HardConstrained: {type(problem).__name__} has no Dirichlet piece to meet exactly"
            )
        return tuple(sorted(ids))
    if isinstance(satisfies, str):
        satisfies = (satisfies,)
    ids = []
    for s in satisfies:
        term, _, idx = str(s).partition(":")
        if term not in problem.terms:
            raise ValueError(
                f"HardConstrained: satisfies names the term {term!r}, which "
                f"{type(problem).__name__} does not have "
                f"(its terms: {', '.join(problem.terms) or 'none'})"
            )
        n = len(pieces[term])
        if not idx:
            ids += [f"{term}:{i}" for i in range(n)]
            continue
        if not idx.isdigit() or int(idx) >= n:
            raise ValueError(
                f"HardConstrained: satisfies entry {s!r}: the term {term!r} has pieces 0..{n - 1}; "
                f"write 'term' or 'term:index'"
            )
        ids.append(f"{term}:{int(idx)}")
    return tuple(sorted(set(ids)))


def _faces_of(problem: Problem, ids: tuple[str, ...], pts: dict) -> tuple[tuple[Face, ...], ...]:
    """Per field, the box faces the Dirichlet pieces ``ids`` lie on (found from a draw ``pts`` of
    their points: a face counts when some point lies on it and on no other face)."""
    from ..geometry import Box

    if problem.geometry is not None and not isinstance(problem.geometry, Box):
        raise ValueError(
            f"HardConstrained: {type(problem).__name__} has a geometry, and g and d are built for "
            f"box faces only; give g and d yourself"
        )
    lo, hi = np.asarray(problem.lower, np.float64), np.asarray(problem.upper, np.float64)
    tol = 1e-6 * (hi - lo)
    pieces, fields = problem.pieces(), tuple(problem.fields)
    out: list[list[Face]] = [[] for _ in fields]
    for pid in ids:
        term, i = pid.split(":")[0], int(pid.split(":")[1])
        piece = pieces[term][i]
        if not isinstance(piece, Dirichlet):
            raise ValueError(
                f"HardConstrained: piece {i} of {term!r} is a {type(piece).__name__}; g and d are "
                f"built for Dirichlet pieces only (give g and d yourself, or leave the piece in "
                f"the loss)"
            )
        z = np.asarray(pts[term][i], np.float64).reshape(-1, problem.dim)
        # (n, 2d): on face (side, j)
        on = np.concatenate([np.abs(z - lo) <= tol, np.abs(z - hi) <= tol], axis=1)
        only = on[on.sum(axis=1) == 1]
        if not np.all(on.any(axis=1)):
            raise ValueError(
                f"HardConstrained: piece {i} of {term!r} has points off the faces of the box "
                f"{problem.lower}..{problem.upper}; g and d are built for pieces on box faces only "
                f"(give g and d yourself, or leave the piece in the loss)"
            )
        faces = sorted({int(k) for k in np.nonzero((only if len(only) else on).any(axis=0))[0]})
        f = fields.index(piece.field) if piece.field is not None else 0
        for k in faces:
            side, j = divmod(k, problem.dim)
            if not any(fc[:2] == (j, side) for fc in out[f]):
                out[f].append((j, side, term, i))
    return tuple(tuple(sorted(fs)) for fs in out)


@dataclasses.dataclass(frozen=True)
class HardConstrained(ForwardWrapper):
    r"""A problem whose network output is transformed so that chosen pieces hold exactly.

    The network ``N`` becomes ``u(z) = g(z) + d(z) N(z)`` (module docstring); the pieces in
    ``satisfies`` leave the loss and the ReLoBRaLo balancing (a term none of whose pieces is
    left goes altogether), and the run says so. Everything else (operator, exact solution,
    reference, test grid, defaults, name) is the forward problem's, so the errors are measured
    as for it. [`train`][cgmpinn_jax.train] builds the transformed network
    ([`ConstrainedNetwork`][cgmpinn_jax.problems.ConstrainedNetwork]) around whatever network
    the run has; the derivatives then take the general (autodiff) path.

    Args:
        forward: the problem, a [`Problem`][cgmpinn_jax.Problem] instance
            (``cj.get_problem("heat")`` for a registered one).
        satisfies: the pieces met exactly: ``None`` (default) every
            [`Dirichlet`][cgmpinn_jax.problems.Dirichlet] piece of the problem; or a tuple of
            ``"term"`` (all its pieces) and ``"term:index"`` entries (``("ic", "bc:0")``).
        g: ``None`` (default: built from the pieces' faces) or a function of one point ``(d,)``
            returning the lift ``g(z)``, a scalar (``(F,)`` on a system).
        d: ``None`` (built with ``g``) or a function of one point returning ``d(z)``, zero on
            the pieces' points, a scalar (or ``(F,)``, one per field). Give ``g`` and ``d``
            together; a saved model reloads with them when they are importable module-level
            functions.

    Raises:
        ValueError: an unknown term or piece, a piece that is not Dirichlet or not on the box's
            faces (when g and d are built), only one of ``g`` and ``d``, or a ``g`` and ``d``
            that do not meet the pieces' targets at their points (the message gives the
            largest miss).

    Examples:
        >>> import cgmpinn_jax as cj
        >>> heat = cj.problems.HardConstrained(cj.get_problem("heat"))
        >>> heat.terms, heat.satisfied
        ((), ('bc:0', 'bc:1', 'ic:0'))
        >>> import jax.numpy as jnp
        >>> u = heat.constrain(lambda z: jnp.float32(7.0))  # any network: N = 7
        >>> (
        ...     float(u(jnp.array([0.0, 0.3]))),
        ...     float(u(jnp.array([0.25, 0.0]))) == float(heat.exact(jnp.array([0.25, 0.0]))),
        ... )
        (0.0, True)
    """

    forward: Any
    satisfies: Optional[tuple[str, ...]] = None
    g: Optional[Callable] = None
    d: Optional[Callable] = None

    def __post_init__(self) -> None:
        from .validate import validate_problem

        fwd = self.forward
        if isinstance(fwd, HardConstrained):
            raise ValueError(
                "HardConstrained: forward is already hard-constrained; list every piece in one "
                "HardConstrained"
            )
        if not isinstance(fwd, Problem):
            raise TypeError(
                f"HardConstrained: forward must be a Problem instance "
                f"(e.g. cj.get_problem('heat')), got {type(fwd).__name__}"
            )
        if type(fwd).sample is not Problem.sample:
            raise ValueError(
                f"HardConstrained: {type(fwd).__name__} builds its own training batch (sample), "
                f"as an inverse problem does; a hard constraint wraps a forward problem only"
            )
        validate_problem(fwd)
        ids = _piece_ids(fwd, self.satisfies)
        object.__setattr__(self, "satisfies", ids)
        if (self.g is None) != (self.d is None):
            raise ValueError(
                "HardConstrained: give g and d together (or neither: built from the pieces' box "
                "faces)"
            )
        for name in ("g", "d"):
            if getattr(self, name) is not None and not callable(getattr(self, name)):
                raise TypeError(
                    f"HardConstrained: {name} must be a function of one point, got "
                    f"{type(getattr(self, name)).__name__}"
                )
        # per field, the faces g and d are built from; None when g and d are given
        self._faces: Optional[tuple[tuple[Face, ...], ...]]
        # one draw: the faces are found and checked on it
        pts = fwd.sample_points(jax.random.key(0))
        object.__setattr__(self, "_faces", None if self.g is not None else _faces_of(fwd, ids, pts))
        self._check_meets(pts)

    @property
    def satisfied(self) -> tuple[str, ...]:
        """The pieces met exactly, as sorted ``"term:index"`` strings."""
        return tuple(sorted(cast("tuple[str, ...]", self.satisfies)))  # a tuple after __post_init__

    @property
    def terms(self):
        kept = self._kept()
        return tuple(t for t in self.forward.terms if kept[t])

    def _kept(self) -> dict[str, tuple[int, ...]]:
        pieces = self.forward.pieces()
        ids = cast("tuple[str, ...]", self.satisfies)  # a tuple after __post_init__
        return {
            t: tuple(i for i in range(len(pieces[t])) if f"{t}:{i}" not in ids)
            for t in self.forward.terms
        }

    # ---- the Problem interface -----------------------------------------------------------
    def operator(self, u, z):
        return self.forward.operator(u, z)

    def pieces(self):
        pieces, kept = self.forward.pieces(), self._kept()
        return {t: tuple(pieces[t][i] for i in kept[t]) for t in self.terms}

    def sample_points(self, key):
        pts, kept = self.forward.sample_points(key), self._kept()
        return {"pde": pts["pde"], **{t: tuple(pts[t][i] for i in kept[t]) for t in self.terms}}

    # ---- the transform -------------------------------------------------------------------
    @property
    def note(self) -> str:
        """The line a run prints: which pieces the output transform meets and what left the loss."""
        gone = [t for t in self.forward.terms if t not in self.terms]
        how = (
            "the given g and d"
            if self.g is not None
            else "g and d built from the pieces' box faces"
        )
        return (
            f"[{self.name}] hard constraint ({how}): {', '.join(self.satisfied)} met exactly by "
            f"the output transform u = g + d N; dropped from the loss and the balancing"
            + (f" (terms gone: {', '.join(gone)})" if gone else "")
        )

    def lift_and_distance(self, z: jax.Array) -> tuple[jax.Array, jax.Array]:
        """``(g(z), d(z))`` at one point ``(d,)``: scalars, or ``(F,)`` on a system."""
        if self.g is not None:
            d = cast(Callable, self.d)  # given together with g
            return jnp.asarray(self.g(z), z.dtype), jnp.asarray(d(z), z.dtype)
        faces_per_field = cast("tuple[tuple[Face, ...], ...]", self._faces)  # built without g
        gs, ds = zip(*(self._field_lift(z, faces) for faces in faces_per_field))
        if len(self.fields) == 1:
            return gs[0], ds[0]
        return jnp.stack(gs), jnp.stack(ds)

    def _field_lift(self, z: jax.Array, faces: tuple[Face, ...]):
        if not faces:
            return jnp.zeros((), z.dtype), jnp.ones((), z.dtype)
        lo, hi = jnp.asarray(self.lower, z.dtype), jnp.asarray(self.upper, z.dtype)
        pieces = self.forward.pieces()
        by_coord: dict[int, list[Face]] = {}
        for fc in faces:
            by_coord.setdefault(fc[0], []).append(fc)
        coords = sorted(by_coord)
        dist, weights = jnp.ones((), z.dtype), {}
        for j in coords:
            s = (z[j] - lo[j]) / (hi[j] - lo[j])
            sides = [fc[1] for fc in by_coord[j]]
            if len(sides) == 2:
                dist = dist * 4 * s * (1 - s)
                weights[j] = {0: 1 - s, 1: s}
            else:
                dist = dist * (s if sides[0] == 0 else 1 - s)
                weights[j] = {sides[0]: jnp.ones((), z.dtype)}
        lift = jnp.zeros((), z.dtype)
        for r in range(1, len(coords) + 1):
            for subset in itertools.combinations(coords, r):
                for choice in itertools.product(*(by_coord[j] for j in subset)):
                    w, p = jnp.ones((), z.dtype), z
                    for j, (_, side, _, _) in zip(subset, choice):
                        w = w * weights[j][side]
                        p = p.at[j].set(lo[j] if side == 0 else hi[j])
                    _, _, term, i = choice[0]
                    value = pieces[term][i].target(self.forward, p[None])[0]
                    lift = lift + (-1) ** (r + 1) * w * value
        return lift, dist

    def constrain(self, net: Callable) -> Callable:
        """``z -> g(z) + d(z) N(z)`` for a network ``net`` of one point.

        Args:
            net: the network, a function of one point ``(d,)``.

        Returns:
            The constrained field, a function of one point.
        """

        def u(z):
            g, d = self.lift_and_distance(z)
            return g + d * net(z)

        return u

    def _check_meets(self, pts: dict) -> None:
        """g and d meet each satisfied piece's targets at a draw ``pts`` of its points (a clear
        error otherwise)."""
        pieces = self.forward.pieces()
        u = self.constrain(
            lambda z: jnp.full((len(self.fields),) if len(self.fields) > 1 else (), 3.0, z.dtype)
        )
        fields = self.as_fields(u)
        for pid in self.satisfied:
            term, i = pid.split(":")[0], int(pid.split(":")[1])
            piece, p = pieces[term][i], jnp.asarray(pts[term][i])
            miss = np.asarray(piece.residual(fields, p, piece.target(self.forward, p)))
            scale = 1.0 + float(np.max(np.abs(np.asarray(piece.target(self.forward, p)))))
            worst = float(np.max(np.abs(miss))) if miss.size else 0.0
            if not np.isfinite(worst) or worst > 1e-4 * scale:
                raise ValueError(
                    f"HardConstrained: the output transform misses piece {i} of {term!r} at its "
                    f"points by up to {worst:.3g} (|target| up to {scale - 1:.3g}); g must equal "
                    f"the target and d vanish there (incompatible data where faces meet also "
                    f"shows here)"
                )


class ConstrainedNetwork(eqx.Module):
    """A network under a hard constraint: ``u(z) = g(z) + d(z) net(z)``.

    Built by [`train`][cgmpinn_jax.train] (through
    [`build_model`][cgmpinn_jax.methods.build_model]) for a
    [`HardConstrained`][cgmpinn_jax.problems.HardConstrained] problem; ``net`` is the run's
    network and holds every trainable parameter.

    Attributes:
        net: the inner network, an equinox module mapping one point ``(d,)`` to a scalar
            (``(F,)`` on a system).
        problem: the hard-constrained problem whose ``g`` and ``d`` apply (static).
    """

    net: Any
    problem: Any = eqx.field(static=True)

    def __call__(self, z):
        return self.problem.constrain(self.net)(z)
