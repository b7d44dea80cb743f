"""1D heat (docs/reference-code.md §8.3): u_t - kappa u_xx = f on (x, t) in [0, 1]^2,
kappa = 1, u*(x, t) = (sin(a1 pi x) + tanh(s x)) sin(a2 pi t), a1 = 1, a2 = 2, s = 10.

The diffusivity ``kappa`` (1 in the paper) is a field so that an inverse run can identify
it (`cgmpinn_jax.inverse`); the source f = N[u*] is always derived with the problem's
own kappa (the true one), and ``1.0 * u_xx`` is exact, so forward runs are unchanged.

1500 collocation points; IC: 300 x ~ U[0, 1) at t = 0 (target identically 0);
BC: 300 t ~ U[0, 1), the same times on both edges x = 0 and x = 1 (two pieces).
Test grid 100 x 100."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from ...derivatives import partial
from ..base import Dirichlet, Problem, grid, uniform
from ..points import edge_pair, initial_line
from ..unknowns import Unknown


@dataclasses.dataclass(frozen=True)
class Heat(Problem):
    """1D heat equation (registry name ``heat``; docs/reference-code.md §8.3).

    * PDE: ``u_t - kappa u_xx = f(x, t)`` on ``(x, t) in [0, 1]^2``, with ``f`` derived from the
      closed form (with the problem's own ``kappa``);
    * initial (term ``"ic"``): ``u(x, 0) = u*(x, 0) = 0`` at ``n_ic`` points ``x ~ U[0, 1)``, one
      [`Dirichlet`][cgmpinn_jax.problems.Dirichlet] piece;
    * boundary (term ``"bc"``): ``u = u*`` on the edges ``x = 0`` and ``x = 1``, two pieces at the
      same ``n_bc`` times ``t ~ U[0, 1)``;
    * closed form: ``u*(x, t) = (sin(alpha1 pi x) + tanh(s x)) sin(alpha2 pi t)``;
    * test grid 100 x 100.

    ``kappa`` is an unknown an inverse run can identify from data
    ([`InverseProblem`][cgmpinn_jax.inverse.InverseProblem]).

    Args:
        alpha1: the frequency of the spatial sine.
        alpha2: the frequency in time.
        s: the steepness of the ``tanh`` layer at ``x = 0``.
        n_pde: the number of collocation points.
        n_ic: the number of initial points.
        n_bc: the number of boundary times (each used on both edges).
        kappa: the diffusivity (1 in the paper).
    """

    alpha1: float = 1.0
    alpha2: float = 2.0
    s: float = 10.0
    n_pde: int = 1500
    n_ic: int = 300
    n_bc: int = 300
    kappa: float = 1.0  # diffusivity

    name = "heat"
    coords = ("x", "t")
    lower = (0.0, 0.0)
    upper = (1.0, 1.0)
    terms = ("ic", "bc")
    unknowns = (Unknown("kappa", 0.5, "log"),)  # identifiable from data (cgmpinn_jax.inverse)

    def exact(self, z):
        x, t = z[0], z[1]
        return (jnp.sin(self.alpha1 * jnp.pi * x) + jnp.tanh(self.s * x)) * jnp.sin(
            self.alpha2 * jnp.pi * t
        )

    def operator(self, u, z):
        return partial(u, 1)(z) - self.kappa * partial(u, 0, 0)(z)

    def pieces(self):
        return {"ic": (Dirichlet(),), "bc": (Dirichlet(), Dirichlet())}

    def sample_points(self, key: jax.Array):
        k_pde, k_ic, k_bc = jax.random.split(key, 3)
        x_ic = jax.random.uniform(k_ic, (self.n_ic,))
        t_bc = jax.random.uniform(k_bc, (self.n_bc,))
        return {
            "pde": uniform(k_pde, self.n_pde, self.lower, self.upper),
            "ic": (initial_line(x_ic),),
            "bc": edge_pair(t_bc, 0.0, 1.0),
        }

    def test_grid(self):
        return grid(self.lower, self.upper, (100, 100))
