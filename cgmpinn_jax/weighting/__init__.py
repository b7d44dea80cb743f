"""Curriculum parameter and CGM sample weights (paper Section "Difficulty Quantification,
Precision Modulation, and Curriculum Scheduling"; docs/reference-code.md §5, §6,
§11.1, §11.2).

Two layers:

* **Pure formulas** -- `tau`, `cgm_weights`, `gmmpinn_weights`,
  `clpinn_weights` and their building blocks.  They take a residual vector and (for the
  GMM variants) a `GMMFit` and return per-point weights.  They follow
  the reference code, not the paper, where the two differ:

  - the normalised difficulty uses ``(d - d_min) / (d_max - d_min)`` when
    ``d_max - d_min > eps`` and ``0`` otherwise (paper Eq. difficulty_normalized has
    ``+ eps`` in the denominator instead);
  - the final normalisation is ``w / (mean(w) + eps)`` (paper Eq. weight_normalize:
    ``N w / (sum(w) + eps)``; identical up to ``eps / N``);
  - all ``eps`` are absolute (scale-dependent), as in the reference.

* **optax-style transformations** -- `cgm_weighting`, `gmmpinn_weighting`,
  `clpinn_weighting`, `uniform_weighting` return a `Weighting`
  ``(init, update)`` pair with a `WeightingState` NamedTuple.  ``update(r, tau, state)``
  refits the GMM on the signed residuals and recomputes the weights (one *refresh*); the
  training engine calls it every ``k_upd`` steps and holds the weights fixed in between.

* **Automatic K** (an extension; the paper names it future work) --
  ``cgm_weighting(n_components="bic")`` / ``gmmpinn_weighting(n_components="bic")`` choose K
  in ``1..max_components`` at every refresh by BIC (`fit_gmm_bic`).
  The fit is padded to ``max_components`` components and the building blocks take a
  ``mask`` of the active ones, so the weights equal those of a plain fit with the chosen K.

Hyper-parameters (``beta``, ``eps``, the GMM's ``tol`` / ``reg_covar``) are closed over by the
factory, and ``tau`` is an argument of ``update``; all of them may be traced values.  To vmap a
sweep over ``beta``, call the factory *inside* the vmapped function:

```python
def weights_for(beta, tau):
    wt = cgm_weighting(beta=beta)
    return wt.update(r, tau, wt.init(r.shape[0]))[0]

jax.vmap(weights_for)(betas, taus)
```

Validation (``ValueError`` naming the argument) runs only on concrete Python/NumPy values, so
the factories and functions can be traced.

Modules (import everything from here):

* `cgmpinn_jax.weighting._formulas` -- `tau` and the pure weight formulas;
* `cgmpinn_jax.weighting._transforms` -- `Weighting`, `WeightingState` and
  the ``(init, update)`` factories;
* `cgmpinn_jax.weighting._balancing` -- ReLoBRaLo, the balancing of the loss terms
  (`relobralo`, `no_balancing`; formerly ``cgmpinn_jax.balancing``).
"""

from __future__ import annotations

from cgmpinn_jax.weighting._formulas import (
    cgm_component_weights,
    cgm_weights,
    clpinn_weights,
    component_difficulty,
    gmmpinn_component_weights,
    gmmpinn_weights,
    normalize_weights,
    normalized_difficulty,
    precision_factor,
    tau,
)
from cgmpinn_jax.weighting._transforms import (
    Weighting,
    WeightingState,
    cgm_weighting,
    clpinn_weighting,
    gmmpinn_weighting,
    uniform_weighting,
)

# Private helpers, also importable from here as before.
from cgmpinn_jax.weighting._formulas import _HI, _as_float, _check_beta, _check_eps, _check_tau  # noqa: F401
from cgmpinn_jax.weighting._transforms import (  # noqa: F401
    _BIC,
    _check_n_components,
    _check_update_args,
    _finish,
    _fit,
    _init_fn,
)

from cgmpinn_jax.weighting._balancing import (
    Balancing,
    ReLoBRaLoState,
    no_balancing,
    relobralo,
    relobralo_draws,
    relobralo_step,
)

__all__ = [
    "Balancing",
    "ReLoBRaLoState",
    "relobralo",
    "relobralo_step",
    "relobralo_draws",
    "no_balancing",
    "tau",
    "component_difficulty",
    "normalized_difficulty",
    "precision_factor",
    "normalize_weights",
    "cgm_component_weights",
    "cgm_weights",
    "gmmpinn_component_weights",
    "gmmpinn_weights",
    "clpinn_weights",
    "WeightingState",
    "Weighting",
    "cgm_weighting",
    "gmmpinn_weighting",
    "clpinn_weighting",
    "uniform_weighting",
]
