"""1D damped wave (docs/reference-code.md §8.4): u_tt + 2 g u_t - c^2 u_xx = 0 on
[0, 1]^2, g = 0.1, c = sqrt(g^2 + (a2 pi)^2) / (a1 pi),
u*(x, t) = exp(-g t) sin(a1 pi x) cos(a2 pi t).

2000 collocation points; IC: 300 x ~ U[0, 1) at t = 0 with two pieces bundled into the one
IC term (u - u* and u_t - u*_t, as the reference does); BC: 300 t ~ U[0, 1), the same times
on both edges. Test grid 100 x 100."""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp

from ...derivatives import partial
from ..base import DerivativeMatch, Dirichlet, Problem, grid, uniform
from ..points import edge_pair, initial_line


@dataclasses.dataclass(frozen=True)
class DampedWave(Problem):
    """1D damped wave equation (registry name ``damped_wave``; docs/reference-code.md §8.4).

    * PDE: ``u_tt + 2 gamma u_t - c^2 u_xx = 0`` on ``(x, t) in [0, 1]^2``, with
      ``c^2 = (gamma^2 + (alpha2 pi)^2) / (alpha1 pi)^2`` (the property
      [`c2`][cgmpinn_jax.problems.DampedWave.c2]);
    * initial (term ``"ic"``): ``u = u*`` ([`Dirichlet`][cgmpinn_jax.problems.Dirichlet]) and
      ``u_t = u*_t`` ([`DerivativeMatch(axis=1)`][cgmpinn_jax.problems.DerivativeMatch]) at the same
      ``n_ic`` points ``x ~ U[0, 1)``, ``t = 0``: two pieces of one term, as the reference does;
    * boundary (term ``"bc"``): ``u = u* = 0`` on the edges ``x = 0`` and ``x = 1``, two pieces at
      the same ``n_bc`` times ``t ~ U[0, 1)``;
    * closed form: ``u*(x, t) = exp(-gamma t) sin(alpha1 pi x) cos(alpha2 pi t)``;
    * test grid 100 x 100. Its [`ProblemDefaults`][cgmpinn_jax.problems.ProblemDefaults] set the
      L-BFGS-only step to 0.1.

    Args:
        alpha1: the spatial frequency.
        alpha2: the temporal frequency.
        gamma: the damping coefficient.
        n_pde: the number of collocation points.
        n_ic: the number of initial points (used by both initial pieces).
        n_bc: the number of boundary times (each used on both edges).
    """

    alpha1: float = 1.0
    alpha2: float = 1.0
    gamma: float = 0.1
    n_pde: int = 2000
    n_ic: int = 300
    n_bc: int = 300

    name = "damped_wave"
    coords = ("x", "t")
    lower = (0.0, 0.0)
    upper = (1.0, 1.0)
    terms = ("ic", "bc")
    homogeneous = True

    @property
    def c2(self) -> float:
        """The squared wave speed ``c^2 = (gamma^2 + (alpha2 pi)^2) / (alpha1 pi)^2`` that makes
        ``u*`` a solution."""
        return (self.gamma**2 + (self.alpha2 * math.pi) ** 2) / (self.alpha1 * math.pi) ** 2

    def exact(self, z):
        x, t = z[0], z[1]
        return (
            jnp.exp(-self.gamma * t)
            * jnp.sin(self.alpha1 * jnp.pi * x)
            * jnp.cos(self.alpha2 * jnp.pi * t)
        )

    def operator(self, u, z):
        return (
            partial(u, 1, 1)(z)
            + 2.0 * self.gamma * partial(u, 1)(z)
            - self.c2 * partial(u, 0, 0)(z)
        )

    def pieces(self):
        return {"ic": (Dirichlet(), DerivativeMatch(axis=1)), "bc": (Dirichlet(), Dirichlet())}

    def sample_points(self, key: jax.Array):
        k_pde, k_ic, k_bc = jax.random.split(key, 3)
        ic = initial_line(jax.random.uniform(k_ic, (self.n_ic,)))
        t_bc = jax.random.uniform(k_bc, (self.n_bc,))
        return {
            "pde": uniform(k_pde, self.n_pde, self.lower, self.upper),
            "ic": (ic, ic),
            "bc": edge_pair(t_bc, 0.0, 1.0),
        }

    def test_grid(self):
        return grid(self.lower, self.upper, (100, 100))
