"""A user-defined PDE that is not one of the paper's six benchmarks: 1D viscous Burgers.

.. math::

    u_t + u\\,u_x - \\nu\\,u_{xx} = 0, \\qquad (x, t) \\in [-1, 1] \\times [0, 1],\\ \\nu = 0.05,

with the Cole-Hopf travelling-wave solution (a viscous shock from ``u = 1`` to ``u = 0``
moving right at speed 1/2)

.. math::

    u^*(x, t) = \\tfrac12 \\left(1 - \\tanh\\frac{x - t/2}{4\\nu}\\right).

It is written exactly as a user would write it (the README's "Your own PDE"): a frozen
dataclass subclass of :class:`~cgmpinn_jax.problems.Problem` that states its exact solution,
its operator and its points, using only the public helpers.  Initial and boundary targets
come from the exact solution; ``homogeneous = True`` skips deriving the (zero) source.
It is deliberately not registered in :data:`~cgmpinn_jax.problems.PROBLEMS`; pass an
instance to :func:`~cgmpinn_jax.train`.

Example:
    >>> import cgmpinn_jax as cj
    >>> from cgmpinn_jax.examples import ViscousBurgers
    >>> problem = ViscousBurgers(n_pde=500)
    >>> problem.loss_terms
    ('pde', 'ic', 'bc')
    >>> res = cj.train(problem, "cgmpinn", cj.TrainConfig(adam_steps=20, lbfgs_steps=0), quiet=True)  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from .derivatives import partial
from .problems import Dirichlet, Problem, grid, uniform
from .problems.heat import edge_pair, initial_line

__all__ = ["ViscousBurgers"]


@dataclasses.dataclass(frozen=True)
class ViscousBurgers(Problem):
    """u_t + u u_x - nu u_xx = 0 on [-1, 1] x [0, 1], u* = (1 - tanh((x - t/2) / (4 nu))) / 2."""

    nu: float = 0.05
    n_pde: int = 2000
    n_ic: int = 200
    n_bc: int = 200

    name = "burgers"
    coords = ("x", "t")
    lower = (-1.0, 0.0)
    upper = (1.0, 1.0)
    terms = ("ic", "bc")
    homogeneous = True  # no source term

    def exact(self, z):
        return 0.5 * (1.0 - jnp.tanh((z[0] - 0.5 * z[1]) / (4.0 * self.nu)))

    def operator(self, u, z):
        return partial(u, 1)(z) + u(z) * partial(u, 0)(z) - self.nu * partial(u, 0, 0)(z)

    def pieces(self):
        return {"ic": (Dirichlet(),), "bc": (Dirichlet(), Dirichlet())}

    def sample_points(self, key: jax.Array):
        k_pde, k_ic, k_bc = jax.random.split(key, 3)
        x_ic = uniform(k_ic, self.n_ic, (-1.0,), (1.0,))[:, 0]
        t_bc = uniform(k_bc, self.n_bc, (0.0,), (1.0,))[:, 0]
        return {
            "pde": uniform(k_pde, self.n_pde, self.lower, self.upper),
            "ic": (initial_line(x_ic),),
            "bc": edge_pair(t_bc, -1.0, 1.0),
        }

    def test_points(self):
        return grid(self.lower, self.upper, (201, 101))
