"""1D advection-diffusion (docs/reference-code.md §8.5): u_t + a u_x - nu u_xx = 0 on
[-1, 1] x [0, 1], a = 1, nu = 0.01, u*(x, t) = -exp(-nu pi^2 t) sin(pi (x - a t)).

The sign follows the reference code (IC u(x, 0) = -sin(pi x)); the paper writes +sin.
3000 collocation points; IC: 300 x ~ U[-1, 1) at t = 0; periodic BC at 300 t ~ U[0, 1):
two pieces, u(-1, t) - u(1, t) and u_x(-1, t) - u_x(1, t). Test grid 100 x 100."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from ...derivatives import partial
from ..base import Dirichlet, Periodic, Problem, grid, uniform
from ..points import edge_pair, initial_line
from ..unknowns import Unknown


@dataclasses.dataclass(frozen=True)
class AdvectionDiffusion(Problem):
    """1D advection-diffusion (registry name ``advection_diffusion``; docs/reference-code.md §8.5).

    * PDE: ``u_t + a u_x - nu u_xx = 0`` on ``(x, t) in [-1, 1] x [0, 1]``;
    * initial (term ``"ic"``): ``u(x, 0) = -sin(pi x)`` (``u*``) at ``n_ic`` points
      ``x ~ U[-1, 1)``; the sign follows the reference code, the paper writes ``+sin``;
    * boundary (term ``"bc"``): periodic, two [`Periodic`][cgmpinn_jax.problems.Periodic] pieces
      ``u(-1, t) = u(1, t)`` and ``u_x(-1, t) = u_x(1, t)`` at the same ``n_bc`` times
      ``t ~ U[0, 1)``;
    * closed form: ``u*(x, t) = -exp(-nu pi^2 t) sin(pi (x - a t))``;
    * test grid 100 x 100.

    ``a`` and ``nu`` are unknowns an inverse run can identify from data
    ([`InverseProblem`][cgmpinn_jax.inverse.InverseProblem]).

    Args:
        a: the advection speed.
        nu: the diffusivity.
        n_pde: the number of collocation points.
        n_ic: the number of initial points.
        n_bc: the number of boundary times (pairs of points on ``x = -1`` and ``x = 1``).
    """

    a: float = 1.0
    nu: float = 0.01
    n_pde: int = 3000
    n_ic: int = 300
    n_bc: int = 300

    name = "advection_diffusion"
    coords = ("x", "t")
    lower = (-1.0, 0.0)
    upper = (1.0, 1.0)
    terms = ("ic", "bc")
    homogeneous = True
    # identifiable from data (cgmpinn_jax.inverse)
    unknowns = (
        Unknown("a", 0.5, "identity"),
        Unknown("nu", 0.05, "log"),
    )

    def exact(self, z):
        x, t = z[0], z[1]
        return -jnp.exp(-self.nu * jnp.pi**2 * t) * jnp.sin(jnp.pi * (x - self.a * t))

    def operator(self, u, z):
        return partial(u, 1)(z) + self.a * partial(u, 0)(z) - self.nu * partial(u, 0, 0)(z)

    def pieces(self):
        return {"ic": (Dirichlet(),), "bc": (Periodic(()), Periodic((0,)))}

    def sample_points(self, key: jax.Array):
        k_pde, k_ic, k_bc = jax.random.split(key, 3)
        x_ic = jax.random.uniform(k_ic, (self.n_ic,), minval=-1.0, maxval=1.0)
        t_bc = jax.random.uniform(k_bc, (self.n_bc,))
        left, right = edge_pair(t_bc, -1.0, 1.0)
        pairs = jnp.stack([left, right], axis=1)  # (n, 2, 2)
        return {
            "pde": uniform(k_pde, self.n_pde, self.lower, self.upper),
            "ic": (initial_line(x_ic),),
            "bc": (pairs, pairs),
        }

    def test_grid(self):
        return grid(self.lower, self.upper, (100, 100))
