"""Fisher-KPP (docs/reference-code.md §8.6): u_t - D u_xx - r u (1 - u) = 0 on
[-5, 5] x [0, 2], D = 0.25, r = 4, Ablowitz-Zeppetella travelling wave
u* = 1 / (1 + exp(z))^2 with z = lam (x - c t) clamped to [-50, 50], lam = sqrt(r / (6 D)),
c = 5 sqrt(D r / 6).

8000 collocation points; IC 400 x at t = 0; BC 400 t, the same times on x = -5 and x = 5.
The CGMPINN of the reference feeds (x/5, t-1) to an 80-wide network with Xavier-normal
weights and zero biases and refreshes every 100 steps, refitting before the L-BFGS step
(its ablation does the same but refreshes every 200 steps); its baselines use raw inputs
and the default init (docs/reference-code.md §2, §6, §11, §12 item 9). Width and budgets
live in `defaults`, the method-specific settings in
`cgmpinn_jax.methods.cgm_settings` and `ablation_settings`.
Test grid 100 x 100."""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp

from ...derivatives import partial
from ..base import Dirichlet, Problem, ProblemDefaults, grid, uniform
from ..points import edge_pair, initial_line
from ..unknowns import Unknown


@dataclasses.dataclass(frozen=True)
class FisherKPP(Problem):
    """Fisher-KPP reaction-diffusion (registry name ``fisher_kpp``; docs/reference-code.md §8.6).

    * PDE: ``u_t - D u_xx - r u (1 - u) = 0`` on ``(x, t) in [-5, 5] x [0, 2]``;
    * initial (term ``"ic"``): ``u = u*`` at ``n_ic`` points ``x ~ U[-5, 5)``, ``t = 0``;
    * boundary (term ``"bc"``): ``u = u*`` on ``x = -5`` and ``x = 5``, two pieces at the same
      ``n_bc`` times ``t ~ U[0, 2)``;
    * closed form: the Ablowitz-Zeppetella travelling wave ``u* = 1 / (1 + exp(s))^2`` with
      ``s = lam (x - speed t)`` clamped to ``[-50, 50]``, ``lam = sqrt(r / (6 D))`` and
      ``speed = 5 sqrt(D r / 6)`` (the properties [`lam`][cgmpinn_jax.problems.FisherKPP.lam] and
      [`speed`][cgmpinn_jax.problems.FisherKPP.speed]);
    * test grid 100 x 100.

    Its [`ProblemDefaults`][cgmpinn_jax.problems.ProblemDefaults] follow the reference: an 80-wide
    network, 8000 Adam and 12000 L-BFGS steps; CGMPINN's input map ``(x/5, t-1)``, Xavier init and
    refresh every 100 steps are the method's settings
    ([`cgm_settings`][cgmpinn_jax.methods.cgm_settings]). ``D`` and ``r`` are unknowns an inverse
    run can identify from data ([`InverseProblem`][cgmpinn_jax.inverse.InverseProblem]).

    Args:
        D: the diffusivity.
        r: the reaction rate.
        n_pde: the number of collocation points.
        n_ic: the number of initial points.
        n_bc: the number of boundary times (each used on both edges).

    Examples:
        >>> from cgmpinn_jax.problems import FisherKPP
        >>> p = FisherKPP()
        >>> round(p.lam, 4), round(p.speed, 4)
        (1.633, 2.0412)
    """

    D: float = 0.25
    r: float = 4.0
    n_pde: int = 8000
    n_ic: int = 400
    n_bc: int = 400

    name = "fisher_kpp"
    coords = ("x", "t")
    lower = (-5.0, 0.0)
    upper = (5.0, 2.0)
    terms = ("ic", "bc")
    homogeneous = True
    # identifiable from data (cgmpinn_jax.inverse)
    unknowns = (
        Unknown("D", 0.5, "log"),
        Unknown("r", 2.0, "log"),
    )
    # CGMPINN's input map (x/5, t-1), Xavier init, k_upd 100: cgmpinn_jax.methods.cgm_settings
    defaults = ProblemDefaults(
        width=80,
        adam_steps=8000,
        second_steps=12000,
    )

    @property
    def lam(self) -> float:
        """The travelling wave's steepness ``lam = sqrt(r / (6 D))``."""
        return math.sqrt(self.r / (6.0 * self.D))

    @property
    def speed(self) -> float:
        """The travelling wave's speed ``5 sqrt(D r / 6)``."""
        return 5.0 * math.sqrt(self.D * self.r / 6.0)

    def exact(self, z):
        x, t = z[0], z[1]
        s = jnp.clip(self.lam * (x - self.speed * t), -50.0, 50.0)
        return 1.0 / (1.0 + jnp.exp(s)) ** 2

    def operator(self, u, z):
        v = u(z)
        return partial(u, 1)(z) - self.D * partial(u, 0, 0)(z) - self.r * v * (1.0 - v)

    def pieces(self):
        return {"ic": (Dirichlet(),), "bc": (Dirichlet(), Dirichlet())}

    def sample_points(self, key: jax.Array):
        k_pde, k_ic, k_bc = jax.random.split(key, 3)
        x_ic = jax.random.uniform(k_ic, (self.n_ic,), minval=-5.0, maxval=5.0)
        t_bc = jax.random.uniform(k_bc, (self.n_bc,), maxval=2.0)
        return {
            "pde": uniform(k_pde, self.n_pde, self.lower, self.upper),
            "ic": (initial_line(x_ic),),
            "bc": edge_pair(t_bc, -5.0, 5.0),
        }

    def test_grid(self):
        return grid(self.lower, self.upper, (100, 100))
