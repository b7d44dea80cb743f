"""Result records of the 1-D Gaussian mixture (`cgmpinn_jax.gmm`): the status code and the fit.

Import them from `cgmpinn_jax.gmm`; this module only holds their definitions.
"""

from __future__ import annotations

import enum
from typing import NamedTuple

import jax

__all__ = ["GMMStatus", "GMMFit"]


class GMMStatus(enum.IntEnum):
    """The outcome of [`fit_gmm`][cgmpinn_jax.gmm.fit_gmm], stored as an ``int32`` scalar in
    [`GMMFit.status`][cgmpinn_jax.gmm.GMMFit]; compare with
    ``int(fit.status) == GMMStatus.CONVERGED``. The first two are usable fits (``fit.usable``).

    Attributes:
        CONVERGED: 0; EM stopped because the change of the mean log-likelihood fell below
            ``tol``.
        MAX_ITER: 1; EM ran ``max_iter`` iterations without meeting ``tol`` (the fit is usable;
            scikit-learn only warns in this case).
        DEGENERATE: 2; fewer distinct values than components (all values equal included).  The
            outputs are still a finite EM fit, but should not be trusted.
        NONFINITE: 3; the input contained NaN or Inf, or the fit overflowed (variances beyond
            the dtype's range, for residual spreads above about 1e18 in float32).  The outputs
            are a finite placeholder: uniform weights and responsibilities, means 0, variances
            1, ``loglik = finfo(dtype).min``.

    Examples:
        >>> GMMStatus(2).name, int(GMMStatus.NONFINITE)
        ('DEGENERATE', 3)
    """

    CONVERGED = 0
    MAX_ITER = 1
    DEGENERATE = 2
    NONFINITE = 3


class GMMFit(NamedTuple):
    """A K-component Gaussian mixture fitted to ``n`` samples by
    [`fit_gmm`][cgmpinn_jax.gmm.fit_gmm] (a pytree; every field is a JAX array).

    Attributes:
        weights: ``(K,)`` float array, the mixing coefficients ``pi_m`` (they sum to 1).
        means: ``(K,)`` float array, the component means ``mu_m``.
        variances: ``(K,)`` float array, the component variances ``sigma_m^2``, ``reg_covar``
            included (scikit-learn's ``covariances_.ravel()``).
        resp: ``(n, K)`` float array, the responsibilities ``gamma_im`` of the returned
            parameters (the paper's Eq. gmm_posterior; rows sum to 1).
        loglik: ``()`` float, the mean log-likelihood per sample of the returned parameters
            (scikit-learn's ``score``).
        n_iter: ``()`` int32, the number of EM iterations of the loop (scikit-learn's
            ``n_iter_``; the final update in raw units is not counted).
        status: ``()`` int32, a [`GMMStatus`][cgmpinn_jax.gmm.GMMStatus] value.
    """

    weights: jax.Array
    means: jax.Array
    variances: jax.Array
    resp: jax.Array
    loglik: jax.Array
    n_iter: jax.Array
    status: jax.Array

    @property
    def usable(self) -> jax.Array:
        """``()`` bool array: True when the status is ``CONVERGED`` or ``MAX_ITER``."""
        return self.status <= GMMStatus.MAX_ITER
