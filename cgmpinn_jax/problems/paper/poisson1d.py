"""1D Poisson (docs/reference-code.md §8.1): u_xx = f on [0, 1],
u*(x) = sin(a1 pi x) cos(a2 pi x) + tanh(s x), a1 = 5, a2 = 3, s = 20.

1500 collocation points x ~ U[0, 1); BC = the two endpoints as two one-point pieces
(loss (u(0)-u*(0))^2 + (u(1)-u*(1))^2); no IC; test grid linspace(0, 1, 200)."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from ...derivatives import partial
from ..base import Dirichlet, Problem, grid, uniform


@dataclasses.dataclass(frozen=True)
class Poisson1D(Problem):
    """1D Poisson (registry name ``poisson1d``; docs/reference-code.md §8.1).

    * PDE: ``u_xx = f(x)`` on ``x in [0, 1]``, with ``f = u*''`` derived from the closed form;
    * boundary (term ``"bc"``): ``u = u*`` at ``x = 0`` and at ``x = 1``, two one-point
      [`Dirichlet`][cgmpinn_jax.problems.Dirichlet] pieces
      (loss ``(u(0) - u*(0))^2 + (u(1) - u*(1))^2``);
    * closed form: ``u*(x) = sin(alpha1 pi x) cos(alpha2 pi x) + tanh(s x)``;
    * points: ``n_pde`` collocation points uniform in ``[0, 1)``; test grid ``linspace(0, 1, 200)``.

    Args:
        alpha1: the frequency ``alpha1`` of the sine.
        alpha2: the frequency ``alpha2`` of the cosine.
        s: the steepness of the ``tanh`` layer at ``x = 0``.
        n_pde: the number of collocation points.

    Examples:
        >>> from cgmpinn_jax.problems import Poisson1D
        >>> p = Poisson1D()
        >>> p.loss_terms, [len(p.pieces()[t]) for t in p.terms]
        (('pde', 'bc'), [2])
    """

    alpha1: float = 5.0
    alpha2: float = 3.0
    s: float = 20.0
    n_pde: int = 1500

    name = "poisson1d"
    coords = ("x",)
    lower = (0.0,)
    upper = (1.0,)
    terms = ("bc",)

    def exact(self, z):
        x = z[0]
        return jnp.sin(self.alpha1 * jnp.pi * x) * jnp.cos(self.alpha2 * jnp.pi * x) + jnp.tanh(
            self.s * x
        )

    def operator(self, u, z):
        return partial(u, 0, 0)(z)

    def pieces(self):
        return {"bc": (Dirichlet(), Dirichlet())}

    def sample_points(self, key: jax.Array):
        dtype = jnp.zeros(()).dtype
        return {
            "pde": uniform(key, self.n_pde, self.lower, self.upper),
            "bc": (jnp.zeros((1, 1), dtype), jnp.ones((1, 1), dtype)),
        }

    def test_grid(self):
        return grid(self.lower, self.upper, (200,))
