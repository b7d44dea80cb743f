"""Expectation-maximisation for the 1-D Gaussian mixture: `fit_gmm` (see
`cgmpinn_jax.gmm` for the conventions it shares with sklearn and where it differs).

The fit runs in stages, each a helper of the jitted ``_fit_gmm_impl``:

1. sanitise and standardise the data (`cgmpinn_jax.gmm._data`);
2. initial parameters from k-means / quantile blocks (`cgmpinn_jax.gmm._init`);
3. the EM loop (``_em_loop``): one fused E-step + M-step per iteration in the ``(K, N)``
   layout, stopping when the change of the mean log-likelihood of the parameters *before*
   each M-step is below ``tol`` (sklearn's rule) or after ``max_iter`` iterations;
4. one more EM update whose M-step ends in raw units (``_raw_unit_update``), then the final
   E-step of the returned parameters (``_final_e_step``);
5. the status code and the finite placeholder of a failed fit (``_with_status``).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax import lax

from cgmpinn_jax.gmm._checks import _check_1d, _check_em_args, _check_static_int, _float_dtype
from cgmpinn_jax.gmm._data import _count_eps, _standardise, _var_floor
from cgmpinn_jax.gmm._density import _resp_kn
from cgmpinn_jax.gmm._init import _init_edges, _init_params
from cgmpinn_jax.gmm._stream import _SampleStream
from cgmpinn_jax.gmm._types import GMMFit, GMMStatus

__all__ = ["fit_gmm"]


def fit_gmm(
    r,
    n_components: int = 4,
    *,
    max_iter: int = 100,
    tol=1e-3,
    reg_covar=1e-6,
    init: str = "kmeans",
    kmeans_max_iter: int = 100,
) -> GMMFit:
    """Fit a K-component 1-D Gaussian mixture to ``r`` by expectation-maximisation (the
    paper's Eqs. gmm_pdf and gmm_posterior).

    A pure-JAX replacement of the reference code's
    ``sklearn.mixture.GaussianMixture(n_components=4)``, with scikit-learn's defaults and
    convergence rule; the initialisation is deterministic (k-means from quantile centres)
    instead of seeded k-means++.  Failures are reported in ``status`` (a
    [`GMMStatus`][cgmpinn_jax.gmm.GMMStatus]), never raised.

    Jitted internally (``n_components``, ``max_iter``, ``init``, ``kmeans_max_iter`` are
    static; ``tol`` and ``reg_covar`` may be traced).  Works under ``jax.vmap`` over a
    batch of residual vectors of equal length.

    Args:
        r: ``(n,)`` signed residuals (any float dtype; computed in float32 unless the
            input is float64).
        n_components: K, a Python int >= 1.
        max_iter: maximum number of EM iterations (sklearn default 100).
        tol: convergence threshold on the change of the mean log-likelihood (1e-3).
        reg_covar: added to every variance (1e-6, absolute, as sklearn).
        init: ``"kmeans"`` (quantile centres + Lloyd iterations, default) or
            ``"quantile"`` (equal-count split of the sorted data).
        kmeans_max_iter: cap on Lloyd iterations for ``init="kmeans"``.

    Returns:
        The [`GMMFit`][cgmpinn_jax.gmm.GMMFit]: ``weights``, ``means``, ``variances`` of shape
        ``(K,)``, ``resp`` ``(n, K)``, ``loglik``, ``n_iter`` and ``status`` ``()``.

    Raises:
        ValueError: ``r`` not 1-D or empty, ``n_components < 1``, ``max_iter < 1``,
            negative ``tol`` / ``reg_covar`` (when concrete), unknown ``init``.

    Examples:
        >>> import jax
        >>> r = jax.random.normal(jax.random.PRNGKey(0), (500,))
        >>> fit = fit_gmm(r, 3)
        >>> fit.resp.shape, bool(jnp.isclose(fit.weights.sum(), 1.0))
        ((500, 3), True)
    """
    _check_1d("r", r)
    n_components = _check_static_int("n_components", n_components, 1)
    max_iter, kmeans_max_iter = _check_em_args(max_iter, kmeans_max_iter, tol, reg_covar, init)
    r = jnp.asarray(r)
    return _fit_gmm_impl(
        r.astype(_float_dtype(r)),
        tol,
        reg_covar,
        n_components=n_components,
        max_iter=max_iter,
        init=init,
        kmeans_max_iter=kmeans_max_iter,
    )


@functools.partial(jax.jit, static_argnames=("n_components", "max_iter", "init", "kmeans_max_iter"))
def _fit_gmm_impl(r, tol, reg_covar, *, n_components, max_iter, init, kmeans_max_iter):
    dtype = r.dtype
    k = n_components
    tol = jnp.asarray(tol, dtype)
    reg_covar = jnp.asarray(reg_covar, dtype)
    data = _standardise(r, reg_covar)
    stream = _SampleStream(r.shape[0], dtype)
    edges = _init_edges(data.xs, k, init, kmeans_max_iter)
    logw0, mu0, var0 = _init_params(stream, data.xs, edges, k, data.reg)
    it, (logw, mu, var), converged = _em_loop(
        stream, data.x, (logw0, mu0, var0), data.reg, tol, max_iter
    )
    weights, means, variances = _raw_unit_update(stream, data, logw, mu, var, reg_covar)
    resp, loglik = _final_e_step(stream, data.x_raw, weights, means, variances)
    fit = GMMFit(weights, means, variances, resp, loglik, it.astype(jnp.int32), None)
    return _with_status(fit, converged, data.n_distinct < k, data.all_finite)


def _em_sums(stream, x, logw, mu, var):
    """One pass over the data: soft counts, first and second moments about ``mu``, and the
    summed log-likelihood of the current parameters (sklearn's lower bound times N)."""

    def em_sums(xc, mask):
        d = xc[None, :] - mu[:, None]
        resp, lse = _resp_kn(d, logw, var)
        if mask is not None:
            resp = resp * mask[None, :]
            lse = lse * mask
        rd = resp * d
        return jnp.sum(resp, axis=1), jnp.sum(rd, axis=1), jnp.sum(rd * d, axis=1), jnp.sum(lse)

    return stream.reduce_sum(em_sums, x)


def _em_loop(stream, x, params0, reg, tol, max_iter):
    """EM iterations from ``params0 = (logw, mu, var)`` in internal units.

    (K, N) keeps the long axis minor, which vectorises better on CPU than (N, K).  Each
    iteration makes one pass over the data (`_em_sums`), from which the M-step follows.

    Returns:
        ``(n_iter, (logw, mu, var), converged)``.
    """
    dtype = x.dtype
    n = x.shape[0]
    count_eps = _count_eps(dtype)
    var_floor = _var_floor(dtype)

    def em_cond(state):
        it, _, _, _, ll_prev, ll = state
        return (it < max_iter) & ~(jnp.abs(ll - ll_prev) < tol)

    def em_body(state):
        it, logw, mu, var, _, ll_prev_iter = state
        nk, s1, s2, ll_sum = _em_sums(stream, x, logw, mu, var)
        ll = ll_sum / n
        nk = nk + count_eps
        shift = s1 / nk  # new mean - old mean; variance about the new mean by the shift formula
        mu_new = mu + shift
        var_new = jnp.maximum(s2 / nk - shift * shift, 0.0) + reg
        var_new = jnp.maximum(var_new, var_floor)
        logw_new = jnp.log(nk / jnp.sum(nk))
        return it + 1, logw_new, mu_new, var_new, ll_prev_iter, ll

    neg_inf = jnp.array(-jnp.inf, dtype)
    it, logw, mu, var, ll_prev, ll_last = lax.while_loop(
        em_cond, em_body, (jnp.int32(0), *params0, neg_inf, neg_inf)
    )
    converged = jnp.abs(ll_last - ll_prev) < tol
    return it, (logw, mu, var), converged


def _raw_unit_update(stream, data, logw, mu, var, reg_covar):
    """One last EM update whose M-step ends in raw units.

    Responsibilities of the final internal parameters -> weights and means (mapped back and
    rounded to the input dtype) -> variances re-estimated in raw units about those rounded
    means.  Without the raw-unit variances a tight component far from the median (e.g. a lone
    residual of 1e6 with variance reg_covar = 1e-6, where one float32 ulp is 0.06) would be
    described by a mean that is off by one ulp and a variance that does not know it.

    Returns:
        ``(weights, means, variances)`` in raw units.
    """
    nk, s1, _, _ = _em_sums(stream, data.x, logw, mu, var)
    nk = nk + _count_eps(data.x.dtype)
    weights = nk / jnp.sum(nk)
    means = data.center + data.scale * (mu + s1 / nk)

    def raw_sq(xc, xrc, mask):
        resp_em, _ = _resp_kn(xc[None, :] - mu[:, None], logw, var)
        if mask is not None:
            resp_em = resp_em * mask[None, :]
        d_raw = xrc[None, :] - means[:, None]
        return (jnp.sum(resp_em * d_raw * d_raw, axis=1),)

    (sq,) = stream.reduce_sum(raw_sq, data.x, data.x_raw)
    variances = jnp.maximum(sq / nk + reg_covar, _var_floor(data.x.dtype))
    return weights, means, variances


def _final_e_step(stream, x_raw, weights, means, variances):
    """Responsibilities ``(N, K)`` and mean log-likelihood ``()`` of the returned parameters."""
    log_w = jnp.log(weights)

    def final_e(xrc):
        resp_kn, lse = _resp_kn(xrc[None, :] - means[:, None], log_w, variances)
        return resp_kn.T, lse

    resp, lse = stream.map_samples(final_e, x_raw)
    return resp, jnp.mean(lse)


def _with_status(fit: GMMFit, converged, degenerate, all_finite) -> GMMFit:
    """Set the `GMMStatus` of ``fit`` (its ``status`` field is ignored); a NONFINITE
    fit gets the finite placeholder (uniform weights / responsibilities, means 0, variances 1,
    ``loglik = finfo(dtype).min``)."""
    weights, means, variances, resp, loglik = (
        fit.weights,
        fit.means,
        fit.variances,
        fit.resp,
        fit.loglik,
    )
    n, k = resp.shape
    dtype = weights.dtype
    status = jnp.where(converged, GMMStatus.CONVERGED, GMMStatus.MAX_ITER)
    status = jnp.where(degenerate, GMMStatus.DEGENERATE, status)
    outputs_finite = (
        jnp.all(jnp.isfinite(weights))
        & jnp.all(jnp.isfinite(means))
        & jnp.all(jnp.isfinite(variances) & (variances > 0))
        & jnp.all(jnp.isfinite(resp))
        & jnp.isfinite(loglik)
    )
    bad = ~(all_finite & outputs_finite)
    status = jnp.where(bad, GMMStatus.NONFINITE, status).astype(jnp.int32)

    uni = jnp.full((k,), 1.0 / k, dtype)
    weights = jnp.where(bad, uni, weights)
    means = jnp.where(bad, jnp.zeros((k,), dtype), means)
    variances = jnp.where(bad, jnp.ones((k,), dtype), variances)
    resp = jnp.where(bad, jnp.full((n, k), 1.0 / k, dtype), resp)
    loglik = jnp.where(bad, jnp.asarray(jnp.finfo(dtype).min, dtype), loglik)
    return GMMFit(weights, means, variances, resp, loglik, fit.n_iter, status)
