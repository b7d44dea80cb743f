"""Observations of a solution (the data term of an inverse problem) and synthetic ones drawn
from a problem's exact solution; see `cgmpinn_jax.inverse`."""

from __future__ import annotations

import dataclasses
import math

import jax
import numpy as np

from ..problems import Problem, get_problem, uniform

__all__ = ["Observations", "synthetic_observations"]


@dataclasses.dataclass(frozen=True, eq=False)
class Observations:
    """Measurements of the solution, ``values[m] ~ u*(points[m])``: the data term of an
    [`InverseProblem`][cgmpinn_jax.inverse.InverseProblem].  ``len(obs)`` is the number of
    observations ``M``.

    Args:
        points: ``(M, d)`` observation points (inside the problem's domain).
        values: ``(M,)`` measured values.
        noise: the relative noise level they carry (a record; the loss does not use it).

    Raises:
        ValueError: naming the culprit, for wrong shapes, no points, or non-finite points
            or values. [`check`][cgmpinn_jax.inverse.Observations.check] tests them against a
            problem (dimension, domain).
    """

    points: np.ndarray
    values: np.ndarray
    noise: float = 0.0

    def __post_init__(self):
        try:
            pts = np.asarray(self.points, dtype=np.float64)
            vals = np.asarray(self.values, dtype=np.float64)
        except (TypeError, ValueError) as e:
            raise ValueError(
                f"Observations: points and values must be numeric arrays ({e})"
            ) from None
        if pts.ndim != 2:
            raise ValueError(f"Observations.points must have shape (M, d), got {pts.shape}")
        if vals.ndim != 1:
            hint = " (flatten it: values.reshape(-1))" if vals.ndim == 2 and 1 in vals.shape else ""
            raise ValueError(f"Observations.values must have shape (M,), got {vals.shape}{hint}")
        if pts.shape[0] != vals.shape[0]:
            raise ValueError(
                f"Observations: {pts.shape[0]} points (points {pts.shape}) "
                f"but {vals.shape[0]} values "
                f"(values {vals.shape}); one value per point"
            )
        if pts.shape[0] < 1:
            raise ValueError("Observations: no observations (M = 0)")
        for label, arr in (("points", pts), ("values", vals)):
            bad = np.argwhere(~np.isfinite(arr))
            if bad.size:
                where = tuple(int(i) for i in bad[0])
                raise ValueError(
                    f"Observations.{label} must be finite: {label}[{', '.join(map(str, where))}] = "
                    f"{arr[where]} ({len(bad)} non-finite entr{'y' if len(bad) == 1 else 'ies'})"
                )
        if (
            isinstance(self.noise, bool)
            or not isinstance(self.noise, (int, float, np.floating, np.integer))
            or not math.isfinite(float(self.noise))
            or self.noise < 0
        ):
            raise ValueError(f"Observations.noise must be a finite number >= 0, got {self.noise!r}")
        object.__setattr__(self, "points", pts)
        object.__setattr__(self, "values", vals)
        object.__setattr__(self, "noise", float(self.noise))

    def __len__(self) -> int:
        return self.points.shape[0]

    def check(self, problem: Problem) -> "Observations":
        """The observations themselves, after checking them against a problem: one coordinate
        per ``problem.coords`` and every point in the box ``[lower, upper]``.

        Args:
            problem: the forward [`Problem`][cgmpinn_jax.Problem].

        Returns:
            ``self``.

        Raises:
            ValueError: the wrong number of coordinates, or a point outside the box (the
                message names the first one).
        """
        d = problem.dim
        if self.points.shape[1] != d:
            raise ValueError(
                f"Observations.points must have shape (M, {d}) for {type(problem).__name__} "
                f"(coords {tuple(problem.coords)!r}), got {self.points.shape}"
            )
        lo, hi = np.asarray(problem.lower, np.float64), np.asarray(problem.upper, np.float64)
        outside = (self.points < lo) | (self.points > hi)
        if outside.any():
            m, j = (int(i) for i in np.argwhere(outside)[0])
            n_out = int(outside.any(axis=1).sum())
            raise ValueError(
                f"Observations.points[{m}] = {self.points[m].tolist()} is outside the domain of "
                f"{type(problem).__name__}: {problem.coords[j]} = {self.points[m, j]} not in "
                f"[{lo[j]}, {hi[j]}] ({n_out} point(s) outside the box "
                f"lower = {tuple(problem.lower)}, "
                f"upper = {tuple(problem.upper)})"
            )
        return self

    def to_dict(self) -> dict:
        """``{"points", "values", "noise"}`` as plain lists and a float (JSON-ready)."""
        return {"points": self.points.tolist(), "values": self.values.tolist(), "noise": self.noise}


def _as_key(key) -> jax.Array:
    if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
        return jax.random.key(int(key))
    return key


def synthetic_observations(
    problem: Problem | str, key: jax.Array | int, n: int = 200, noise: float = 0.0
) -> Observations:
    r"""Noisy measurements of a problem's exact solution, reproducible from a key.

    The points $z_m$ are uniform inside the domain box; the values are

    $$
    y_m = u^*(z_m) + \mathrm{noise} \cdot \mathrm{std}_m\left(u^*(z_m)\right) \cdot \xi_m,
    \qquad \xi_m \sim \mathcal{N}(0, 1),
    $$

    so ``noise`` is relative to the standard deviation of the exact values at the points.  The
    same key gives the same observations.

    Args:
        problem: a [`Problem`][cgmpinn_jax.Problem] with an exact solution, or a registry name
            (an inverse problem's forward problem is used).
        key: PRNG key or int seed.
        n: the number of observations ``M`` (default 200).
        noise: the relative noise level, >= 0 (default 0, exact values).

    Returns:
        The [`Observations`][cgmpinn_jax.inverse.Observations] (``points`` ``(n, d)``,
        ``values`` ``(n,)``).

    Raises:
        ValueError: ``n`` not a positive int, or ``noise`` negative or not finite.

    Examples:
        >>> a = synthetic_observations("heat", 0, 5, noise=0.05)
        >>> b = synthetic_observations("heat", 0, 5, noise=0.05)
        >>> bool((a.points == b.points).all() and (a.values == b.values).all())
        True
    """
    problem = get_problem(problem)
    problem = getattr(problem, "forward", problem)  # an InverseProblem's forward problem
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"synthetic_observations: n must be a positive int, got {n!r}")
    if (
        isinstance(noise, bool)
        or not isinstance(noise, (int, float))
        or not math.isfinite(noise)
        or noise < 0
    ):
        raise ValueError(
            f"synthetic_observations: noise must be a finite number >= 0, got {noise!r}"
        )

    @jax.jit
    def draw(key):
        k_pts, k_noise = jax.random.split(key)
        pts = uniform(
            k_pts, int(n), tuple(map(float, problem.lower)), tuple(map(float, problem.upper))
        )
        return pts, jax.vmap(problem.exact)(pts), jax.random.normal(k_noise, (int(n),))

    pts, exact, eps = (np.asarray(x, np.float64) for x in draw(_as_key(key)))
    scale = float(np.std(exact)) if n > 1 else abs(float(exact[0]))
    return Observations(pts, exact + float(noise) * scale * eps, float(noise))
