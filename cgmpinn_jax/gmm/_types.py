"""Result records of the 1-D Gaussian mixture (`cgmpinn_jax.gmm`): the status code and the fit.

Import them from `cgmpinn_jax.gmm`; this module only holds their definitions.
"""

from __future__ import annotations

import enum
from typing import NamedTuple

import jax

__all__ = ["GMMStatus", "GMMFit"]


class GMMStatus(enum.IntEnum):
    """Outcome of `fit_gmm` (stored as an ``int32`` scalar in `GMMFit`).

    CONVERGED:  EM stopped because the change in mean log-likelihood fell below ``tol``.
    MAX_ITER:   EM ran ``max_iter`` iterations without meeting ``tol`` (the fit is usable;
                sklearn only warns in this case).
    DEGENERATE: fewer distinct values than components (including all values equal).
                The outputs are still a finite EM fit, but the caller should not trust them.
    NONFINITE:  the input contained NaN/Inf, or the fit overflowed (variances beyond the
                dtype's range, for residual spreads above ~1e18 in float32).  The outputs are a
                finite placeholder (uniform weights and responsibilities, means 0,
                variances 1, ``loglik = finfo(dtype).min``).
    """

    CONVERGED = 0
    MAX_ITER = 1
    DEGENERATE = 2
    NONFINITE = 3


class GMMFit(NamedTuple):
    """Result of `fit_gmm` (a pytree; every field is a JAX array).

    Attributes:
        weights: ``(K,)`` mixing coefficients ``pi_m`` (sum to 1).
        means: ``(K,)`` component means ``mu_m``.
        variances: ``(K,)`` component variances ``sigma_m^2``, ``reg_covar`` included
            (sklearn's ``covariances_.ravel()``).
        resp: ``(N, K)`` responsibilities ``gamma_im`` of the final parameters
            (Eq. gmm_posterior; rows sum to 1).
        loglik: ``()`` mean log-likelihood per sample of the final parameters.
        n_iter: ``()`` int32, number of EM iterations run in the loop (sklearn's ``n_iter_``;
            the final raw-unit update is not counted).
        status: ``()`` int32, a `GMMStatus` value.
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
        """``()`` bool: True when status is CONVERGED or MAX_ITER."""
        return self.status <= GMMStatus.MAX_ITER
