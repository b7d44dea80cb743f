"""2D Poisson (docs/reference-code.md §8.2): u_xx + u_yy = f on [0, 1]^2,
u*(x, y) = sin(b1 pi x) sin(b2 pi y) + exp(-x^2 - y^2), b1 = 3, b2 = 2.

2000 collocation points uniform in the square; BC = four pieces, one per edge, each
``linspace(0, 1, 250)`` along the edge (corners duplicated, 1000 points); test grid
100 x 100 (``meshgrid(indexing='ij')``)."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from ..derivatives import partial
from .base import Dirichlet, Problem, grid, uniform


@dataclasses.dataclass(frozen=True)
class Poisson2D(Problem):
    beta1: float = 3.0
    beta2: float = 2.0
    n_pde: int = 2000
    n_edge: int = 250

    name = "poisson2d"
    coords = ("x", "y")
    lower = (0.0, 0.0)
    upper = (1.0, 1.0)
    terms = ("bc",)

    def exact(self, z):
        x, y = z[0], z[1]
        return jnp.sin(self.beta1 * jnp.pi * x) * jnp.sin(self.beta2 * jnp.pi * y) + jnp.exp(-(x**2) - y**2)

    def operator(self, u, z):
        return partial(u, 0, 0)(z) + partial(u, 1, 1)(z)

    def pieces(self):
        return {"bc": (Dirichlet(),) * 4}

    def sample_points(self, key: jax.Array):
        s = jnp.linspace(0.0, 1.0, self.n_edge)
        zero, one = jnp.zeros_like(s), jnp.ones_like(s)
        edges = (
            jnp.stack([zero, s], -1),  # x = 0
            jnp.stack([one, s], -1),  # x = 1
            jnp.stack([s, zero], -1),  # y = 0
            jnp.stack([s, one], -1),  # y = 1
        )
        return {"pde": uniform(key, self.n_pde, self.lower, self.upper), "bc": edges}

    def test_grid(self):
        return grid(self.lower, self.upper, (100, 100))
