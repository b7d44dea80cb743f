"""Inverse problems: identify unknown PDE coefficients from noisy measurements of the solution.

A coefficient of the PDE is unknown, a few hundred noisy measurements ``(z_m, y_m)`` of the
solution are available, and the network and the coefficients are trained together:

    loss = lambda_pde mean(w r^2) + sum_c lambda_c L_c + lambda_obs mean((u(z_m) - y_m)^2)

where the PDE residual ``r = N_theta[u] - f`` uses the *trainable* coefficients ``theta``,
the CGM weights ``w`` apply to it unchanged, and the observation term ``"obs"`` is one more
ReLoBRaLo-balanced term. The source ``f`` is data: it is derived with the problem's TRUE
coefficients (its field values), never with the unknowns (of the three benchmarks only heat
has one; Fisher-KPP and advection-diffusion are homogeneous).

Pieces:

* `Unknown` ``(name, init, transform)``: a coefficient
  (a float field of the problem), its initial guess and its parameterisation (``"log"``,
  ``"softplus"``: positive; ``"identity"``). A problem declares the ones it can identify as
  the class attribute ``unknowns``: heat ``kappa`` (1; guess 0.5), Fisher-KPP ``D`` (0.25;
  0.5) and ``r`` (4; 2), advection-diffusion ``a`` (1; 0.5, identity) and ``nu`` (0.01; 0.05).
* [`Observations`][cgmpinn_jax.inverse.Observations] ``(points (M, d), values (M,), noise)``,
  checked for shapes, finite values and (against a problem) points inside the domain;
  [`synthetic_observations`][cgmpinn_jax.inverse.synthetic_observations] draws them from a
  problem's exact solution with a seeded noise level.
* [`InverseProblem`][cgmpinn_jax.inverse.InverseProblem] ``(forward, observations, unknowns)``: a
  [`Problem`][cgmpinn_jax.problems.Problem] whose loss terms are the forward problem's plus
  ``"obs"``; [`train`][cgmpinn_jax.train] trains it like any problem, the unknowns' raw
  parameters being leaves of the trainable pytree (``Trainable.coeffs``) updated by Adam and
  the second stage alike.
* [`inverse_problem`][cgmpinn_jax.inverse.inverse_problem]: the ready-made inverse benchmarks;
  [`cgmpinn_jax.infer`][cgmpinn_jax.infer] trains one in a single call.

Noise convention: ``noise = 0.01`` adds Gaussian noise of standard deviation 1% of the
standard deviation of the exact values at the observation points,
``y_m = u*(z_m) + noise * std_m(u*(z_m)) * N(0, 1)``.

A run reports the coefficients in ``TrainResult.unknowns`` (estimate, true value, relative
error, initial guess) and their trajectory in ``history.coeff_k`` / ``history.coeffs``,
recorded at the start and at the end of every chunk (every weight refresh, k_upd steps), not
at every step.

Examples:
    >>> import cgmpinn_jax as cj
    >>> from cgmpinn_jax import inverse
    >>> prob = inverse.inverse_problem("heat", n_obs=50, noise=0.01, key=0)
    >>> prob.loss_terms, [u.name for u in prob.unknowns]
    (('pde', 'ic', 'bc', 'obs'), ['kappa'])
    >>> cfg = cj.TrainConfig(stages=(cj.stages.Adam(steps=10), cj.stages.LBFGS(steps=0)))
    >>> res = cj.train(prob, "pinn", cfg, quiet=True)
    >>> sorted(res.unknowns.as_dict()["kappa"])
    ['estimate', 'init', 'rel_error', 'true']
"""

from ._inverse import INVERSE_BENCHMARKS as INVERSE_BENCHMARKS
from ._inverse import TRANSFORMS as TRANSFORMS
from ._inverse import InverseProblem as InverseProblem
from ._inverse import Unknown as Unknown
from ._inverse import UnknownsResult as UnknownsResult
from ._inverse import as_list as as_list
from ._inverse import declared_unknowns as declared_unknowns
from ._inverse import inverse_problem as inverse_problem
from ._inverse import unknowns_result as unknowns_result
from ._observations import Observations as Observations
from ._observations import synthetic_observations as synthetic_observations

__all__ = [
    "Unknown",
    "TRANSFORMS",
    "Observations",
    "synthetic_observations",
    "InverseProblem",
    "UnknownsResult",
    "inverse_problem",
    "declared_unknowns",
    "INVERSE_BENCHMARKS",
]
