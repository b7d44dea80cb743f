"""Hand-written, jittable 1-D Gaussian mixture fitted by expectation-maximisation.

This is the "residual distribution model" of the CGM module (paper, Section
"Residual Distribution Modeling via GMM"):

.. math::

    p(r) = \\sum_{m=1}^{K} \\pi_m\\, \\mathcal{N}(r \\mid \\mu_m, \\sigma_m^2)
    \\qquad \\text{(Eq. gmm\\_pdf)}

    \\gamma_{im} = \\frac{\\pi_m \\mathcal{N}(r_i\\mid\\mu_m,\\sigma_m^2)}
                        {\\sum_l \\pi_l \\mathcal{N}(r_i\\mid\\mu_l,\\sigma_l^2)}
    \\qquad \\text{(Eq. gmm\\_posterior)}

The reference code calls ``sklearn.mixture.GaussianMixture(n_components=4,
random_state=1224)`` on the host (docs/reference-code.md §5 step 1).  `fit_gmm`
replaces it by a pure-JAX EM that runs inside ``jit``/``vmap`` and follows the
same defaults and the same conventions:

* ``tol=1e-3`` on the change of the mean log-likelihood per sample, evaluated
  exactly as sklearn does (the log-likelihood of the parameters *before* each
  M-step is compared with the previous one), ``max_iter=100``,
  ``reg_covar=1e-6`` added to every variance (so ``variances`` equals sklearn's
  ``covariances_.ravel()``), ``10 * finfo(dtype).eps`` added to every
  component's soft count, mixture weights renormalised to sum to one.
* The returned responsibilities are those of the *returned* parameters (an
  E-step after the last update, like ``predict_proba`` after ``fit``).

Differences from sklearn (deliberate):

* **Deterministic initialisation.**  sklearn seeds k-means++ from
  ``random_state``; here the initial centres are the quantiles
  ``(k + 1/2) / K`` of the sorted data, refined by Lloyd (k-means) iterations
  until the assignment stops changing (``init="kmeans"``, default), or the
  sorted data are split into K equal-count blocks (``init="quantile"``).  The
  one-hot assignment is turned into initial parameters by one M-step, as
  sklearn does.  The two can end in different local optima; the test-suite
  checks that the log-likelihood is never worse than sklearn's by more than
  0.05 per sample on heavy-tailed, outlier, near-constant and real PINN
  residuals.
* **Internal standardisation.**  EM is affine-equivariant, so the data are
  centred on their median and divided by ``s = max(std, sqrt(reg_covar))``
  before the loop (``reg_covar`` is divided by ``s**2`` accordingly) and the
  results are mapped back.  This keeps float32 well conditioned for residuals
  from ``1e-30`` (late training) up to spreads of about ``1e18``; beyond that
  the variances themselves overflow float32 and the status is ``NONFINITE``
  (sklearn fails on such float32 input too).
* **Status codes instead of exceptions/warnings** (see `GMMStatus`).
  sklearn raises on NaN/Inf input and only warns when there are fewer distinct
  values than components; here both give a status the caller can act on (the
  CGM weighting keeps its previous weights, docs/reference-code.md §5 step 8).
* After the loop one more EM update is made whose M-step ends in raw units
  (variances re-estimated about the means rounded to the input dtype), so
  the returned parameters are self-consistent even for a tight component
  far from the bulk.  ``n_iter`` does not count this update.
* ``loglik`` is the mean log-likelihood of the *returned* parameters
  (sklearn's ``score(X)``), not sklearn's ``lower_bound_`` (which belongs to
  parameters one M-step earlier).
* sklearn's M-step divides by ``sum(resp) + 10 eps``, which shrinks every
  mean towards the coordinate origin by a relative ``10 eps`` (in float32
  a lone residual of 1e6 gets the mean 999998.8).  Here the same guarded
  count is used, but the update is ``mu_new = mu_old + sum(resp (x - mu_old))
  / (sum(resp) + 10 eps)``, which shrinks towards the previous mean and has
  the exact weighted mean as its fixed point.

Speed (CPU; see benchmarks/results/gmm_speed.md): the sort uses an order-preserving
integer key (XLA sorts integers faster than floats), Lloyd's k-means moves
K - 1 block edges over the sorted data with a prefix sum, and every EM
iteration is a single fused pass over a ``(K, N)`` array (long axis minor),
streamed in chunks of 8192 samples when N is larger.

Modules (import everything from here; the split is one idea per module):

* `cgmpinn_jax.gmm._types` -- `GMMStatus`, `GMMFit`;
* `cgmpinn_jax.gmm._density` -- `log_prob`, `responsibilities`,
  `mean_log_likelihood` (Eqs. gmm_pdf, gmm_posterior);
* `cgmpinn_jax.gmm._em` -- `fit_gmm` (the EM and its final raw-unit update);
* `cgmpinn_jax.gmm._data` -- sanitising, sorting and standardising the data;
* `cgmpinn_jax.gmm._init` -- the k-means / quantile initialisation;
* `cgmpinn_jax.gmm._stream` -- chunked passes over the samples;
* `cgmpinn_jax.gmm._bic` -- `GMMSelection`, `fit_gmm_bic` (automatic K);
* `cgmpinn_jax.gmm._checks` -- argument validation (shared with weighting / balancing).

Examples:
    >>> import jax.numpy as jnp
    >>> from cgmpinn_jax.gmm import fit_gmm, GMMStatus
    >>> r = jnp.concatenate([jnp.linspace(-1.0, -0.9, 50), jnp.linspace(2.0, 2.2, 50)])
    >>> fit = fit_gmm(r, 2)
    >>> int(fit.status) == GMMStatus.CONVERGED
    True
    >>> [round(float(m), 2) for m in jnp.sort(fit.means)]
    [-0.95, 2.1]
"""

from __future__ import annotations

from cgmpinn_jax.gmm._bic import GMMSelection, fit_gmm_bic
from cgmpinn_jax.gmm._density import log_prob, mean_log_likelihood, responsibilities
from cgmpinn_jax.gmm._em import fit_gmm
from cgmpinn_jax.gmm._types import GMMFit, GMMStatus

# Private helpers, also importable from here as before (weighting.py / balancing.py use the checks).
from cgmpinn_jax.gmm._bic import _fit_gmm_bic_impl, _pad_fit  # noqa: F401
from cgmpinn_jax.gmm._checks import (  # noqa: F401
    _INITS,
    _check_1d,
    _check_em_args,
    _check_static_int,
    _concrete_float,
    _float_dtype,
)
from cgmpinn_jax.gmm._data import _sort_floats  # noqa: F401
from cgmpinn_jax.gmm._density import _LOG_2PI, _resp_kn  # noqa: F401
from cgmpinn_jax.gmm._em import _fit_gmm_impl  # noqa: F401
from cgmpinn_jax.gmm._stream import _EM_CHUNK  # noqa: F401

__all__ = [
    "GMMStatus",
    "GMMFit",
    "fit_gmm",
    "GMMSelection",
    "fit_gmm_bic",
    "log_prob",
    "responsibilities",
    "mean_log_likelihood",
]
