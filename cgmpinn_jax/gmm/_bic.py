"""Automatic number of components by the Bayesian information criterion: `fit_gmm_bic`.

.. math::

    \\mathrm{BIC}(K) = -2 N \\bar\\ell_K + p_K \\log N, \\qquad p_K = 3K - 1

(sklearn's ``GaussianMixture.bic``).  Choosing K automatically is the paper's stated future
work; the paper and the reference fix K = 4.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp

from cgmpinn_jax.gmm._checks import _check_1d, _check_em_args, _check_static_int, _float_dtype
from cgmpinn_jax.gmm._em import _fit_gmm_impl
from cgmpinn_jax.gmm._types import GMMFit

__all__ = ["GMMSelection", "fit_gmm_bic"]


class GMMSelection(NamedTuple):
    """The mixture chosen by [`fit_gmm_bic`][cgmpinn_jax.gmm.fit_gmm_bic] (a pytree).

    Attributes:
        fit: the chosen fit as a [`GMMFit`][cgmpinn_jax.gmm.GMMFit] *padded* to
            ``max_components`` components: ``weights``, ``means``, ``variances`` of shape
            ``(max_components,)``, ``resp`` of shape ``(n, max_components)``.
            Components ``n_components .. max_components - 1`` are inactive padding with
            weight 0, mean 0, variance 1 and responsibility column 0 (so ``resp`` rows still
            sum to 1 and every downstream quantity stays finite).  ``status``, ``loglik`` and
            ``n_iter`` are those of the chosen fit.
        n_components: ``()`` int32, the chosen K in ``1..max_components``.
        bic: ``(max_components,)`` BIC of K = 1..max_components (``+inf`` for a fit that is
            not usable, i.e. DEGENERATE or NONFINITE).
    """

    fit: GMMFit
    n_components: jax.Array
    bic: jax.Array

    @property
    def mask(self) -> jax.Array:
        """``(max_components,)`` bool array: True for the active components (the first
        ``n_components``)."""
        return jnp.arange(self.bic.shape[-1]) < self.n_components[..., None]


def fit_gmm_bic(
    r,
    max_components: int = 6,
    *,
    max_iter: int = 100,
    tol=1e-3,
    reg_covar=1e-6,
    init: str = "kmeans",
    kmeans_max_iter: int = 100,
) -> GMMSelection:
    r"""Fit mixtures of K = 1 .. ``max_components`` components and keep the one of lowest BIC,

    $$
    \mathrm{BIC}(K) = -2 n\, \bar\ell_K + p_K \log n, \qquad p_K = 3K - 1,
    $$

    with $\bar\ell_K$ the mean log-likelihood of the K-component fit
    ([`GMMFit.loglik`][cgmpinn_jax.gmm.GMMFit]) and $p_K$ its free parameters in 1-D (K means,
    K variances, K - 1 weights): scikit-learn's ``GaussianMixture.bic``.  Choosing K
    automatically is the paper's stated future work (the paper and the reference fix K = 4).
    Each fit is exactly [`fit_gmm`][cgmpinn_jax.gmm.fit_gmm] with the same options; a fit whose
    status is ``DEGENERATE`` or ``NONFINITE`` gets ``BIC = +inf`` and is never chosen; ties go
    to the smaller K.  If no fit is usable (NaN or Inf input) the K = 1 fit is returned with its
    status.

    Jitted (``max_components`` and the static options of ``fit_gmm`` are static; the fits run
    one after another inside one compiled function); works under ``jax.vmap``.  It costs about
    ``max_components`` times one ``fit_gmm``.

    Args:
        r: ``(n,)`` float array, the signed residuals.
        max_components: the largest K tried (a Python int >= 1, default 6).
        max_iter: the maximum number of EM iterations of each fit (default 100).
        tol: the convergence threshold on the change of the mean log-likelihood (default
            1e-3).
        reg_covar: added to every variance (default 1e-6, absolute).
        init: ``"kmeans"`` (default) or ``"quantile"``, as in
            [`fit_gmm`][cgmpinn_jax.gmm.fit_gmm].
        kmeans_max_iter: the cap on Lloyd iterations for ``init="kmeans"`` (default 100).

    Returns:
        The [`GMMSelection`][cgmpinn_jax.gmm.GMMSelection] ``(fit, n_components, bic)``;
        ``selection.mask`` marks the active components of the padded ``fit``.

    Raises:
        ValueError: as [`fit_gmm`][cgmpinn_jax.gmm.fit_gmm], or ``max_components < 1``.

    Examples:
        >>> import jax
        >>> k1, k2 = jax.random.split(jax.random.PRNGKey(0))
        >>> r = jnp.concatenate(
        ...     [jax.random.normal(k1, (300,)) - 8.0, jax.random.normal(k2, (300,)) + 8.0]
        ... )
        >>> sel = fit_gmm_bic(r, 4)
        >>> int(sel.n_components), sel.fit.resp.shape, sel.mask.tolist()
        (2, (600, 4), [True, True, False, False])
    """
    _check_1d("r", r)
    max_components = _check_static_int("max_components", max_components, 1)
    max_iter, kmeans_max_iter = _check_em_args(max_iter, kmeans_max_iter, tol, reg_covar, init)
    r = jnp.asarray(r)
    return _fit_gmm_bic_impl(
        r.astype(_float_dtype(r)),
        tol,
        reg_covar,
        max_components=max_components,
        max_iter=max_iter,
        init=init,
        kmeans_max_iter=kmeans_max_iter,
    )


def _pad_fit(fit: GMMFit, k_max: int) -> GMMFit:
    """Pad a K-component fit with inactive components (weight 0, mean 0, variance 1,
    responsibility 0) to ``k_max`` components."""
    extra = k_max - fit.weights.shape[0]
    dtype = fit.weights.dtype

    def pad(a, value):
        widths = [(0, 0)] * (a.ndim - 1) + [(0, extra)]
        return jnp.pad(a, widths, constant_values=jnp.asarray(value, dtype))

    return fit._replace(
        weights=pad(fit.weights, 0.0),
        means=pad(fit.means, 0.0),
        variances=pad(fit.variances, 1.0),
        resp=pad(fit.resp, 0.0),
    )


@functools.partial(
    jax.jit, static_argnames=("max_components", "max_iter", "init", "kmeans_max_iter")
)
def _fit_gmm_bic_impl(r, tol, reg_covar, *, max_components, max_iter, init, kmeans_max_iter):
    n = r.shape[0]
    dtype = r.dtype
    fits, bics = [], []
    for k in range(1, max_components + 1):
        fit = _fit_gmm_impl(
            r,
            tol,
            reg_covar,
            n_components=k,
            max_iter=max_iter,
            init=init,
            kmeans_max_iter=kmeans_max_iter,
        )
        n_params = 3 * k - 1
        bic = -2.0 * n * fit.loglik + n_params * math.log(n)
        ok = fit.usable & jnp.isfinite(bic)
        bics.append(jnp.where(ok, bic, jnp.asarray(jnp.inf, dtype)).astype(dtype))
        fits.append(_pad_fit(fit, max_components))
    bic = jnp.stack(bics)
    best = jnp.argmin(bic).astype(jnp.int32)  # first minimum: the smallest K on ties / all +inf
    stacked = jax.tree.map(lambda *xs: jnp.stack(xs), *fits)
    chosen = jax.tree.map(lambda a: a[best], stacked)
    return GMMSelection(fit=chosen, n_components=best + 1, bic=bic)
