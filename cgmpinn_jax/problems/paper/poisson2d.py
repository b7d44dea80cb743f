"""2D Poisson (docs/reference-code.md §8.2): u_xx + u_yy = f on [0, 1]^2,
u*(x, y) = sin(b1 pi x) sin(b2 pi y) + exp(-x^2 - y^2), b1 = 3, b2 = 2.

2000 collocation points uniform in the square; BC = four pieces, one per edge, each
``linspace(0, 1, 250)`` along the edge (corners duplicated, 1000 points); test grid
100 x 100 (``meshgrid(indexing='ij')``)."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from ...derivatives import partial
from ..base import Dirichlet, Problem, grid, uniform


@dataclasses.dataclass(frozen=True)
class Poisson2D(Problem):
    """2D Poisson (registry name ``poisson2d``; docs/reference-code.md §8.2).

    * PDE: ``u_xx + u_yy = f(x, y)`` on ``[0, 1]^2``, with ``f`` derived from the closed form;
    * boundary (term ``"bc"``): ``u = u*`` on the four edges, one
      [`Dirichlet`][cgmpinn_jax.problems.Dirichlet] piece per edge (``x = 0``, ``x = 1``, ``y = 0``,
      ``y = 1``), each at ``n_edge`` evenly spaced points (corners included, so duplicated);
    * closed form: ``u*(x, y) = sin(beta1 pi x) sin(beta2 pi y) + exp(-x^2 - y^2)``;
    * points: ``n_pde`` collocation points uniform in the square; test grid 100 x 100.

    Args:
        beta1: the frequency along ``x``.
        beta2: the frequency along ``y``.
        n_pde: the number of collocation points.
        n_edge: the number of boundary points on each edge (fixed, not random).
    """

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
        return jnp.sin(self.beta1 * jnp.pi * x) * jnp.sin(self.beta2 * jnp.pi * y) + jnp.exp(
            -(x**2) - y**2
        )

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
