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

from ..derivatives import partial
from .base import DerivativeMatch, Dirichlet, Problem, ProblemDefaults, grid, uniform
from .heat import edge_pair, initial_line


@dataclasses.dataclass(frozen=True)
class DampedWave(Problem):
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
    defaults = ProblemDefaults(lbfgs_only_lr=0.1)

    @property
    def c2(self) -> float:
        return (self.gamma**2 + (self.alpha2 * math.pi) ** 2) / (self.alpha1 * math.pi) ** 2

    def exact(self, z):
        x, t = z[0], z[1]
        return jnp.exp(-self.gamma * t) * jnp.sin(self.alpha1 * jnp.pi * x) * jnp.cos(self.alpha2 * jnp.pi * t)

    def operator(self, u, z):
        return partial(u, 1, 1)(z) + 2.0 * self.gamma * partial(u, 1)(z) - self.c2 * partial(u, 0, 0)(z)

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
