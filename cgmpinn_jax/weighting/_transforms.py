"""optax-style ``(init, update)`` sample-weighting transformations (docs/reference-code.md §5,
§11.1, §11.2): `cgm_weighting`, `gmmpinn_weighting`, `clpinn_weighting`,
`uniform_weighting` return a `Weighting` pair with a `WeightingState`.

``update(r, tau, state)`` refits the GMM on the signed residuals and recomputes the weights
(one *refresh*, with the formulas of `cgmpinn_jax.weighting._formulas`); the training
engine calls it every ``k_upd`` steps and holds the weights fixed in between.  A fit that is
not usable (``DEGENERATE`` / ``NONFINITE``) or non-finite weights keep the previous valid
weights (docs/reference-code.md §5 step 8).

``n_components="bic"`` (an extension; the paper names it future work) chooses K in
``1..max_components`` at every refresh by BIC (`fit_gmm_bic`).

Import them from `cgmpinn_jax.weighting`.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from cgmpinn_jax._checks import check_1d as _check_1d
from cgmpinn_jax._checks import check_static_int as _check_static_int
from cgmpinn_jax.gmm import GMMStatus, fit_gmm, fit_gmm_bic
from cgmpinn_jax.weighting._formulas import (
    _as_float,
    _check_beta,
    _check_eps,
    _check_tau,
    cgm_weights,
    clpinn_weights,
    gmmpinn_weights,
    normalize_weights,
)

__all__ = [
    "WeightingState",
    "Weighting",
    "cgm_weighting",
    "gmmpinn_weighting",
    "clpinn_weighting",
    "uniform_weighting",
]


# ---------------------------------------------------------------------------
# optax-style (init, update) transformations
# ---------------------------------------------------------------------------


class WeightingState(NamedTuple):
    """The state of a [`Weighting`][cgmpinn_jax.weighting.Weighting] (a pytree of arrays), for
    ``n`` collocation points.

    Attributes:
        weights: ``(n,)`` float array, the current point weights, unit mean (ones before the
            first refresh).
        last_valid: ``(n,)`` float array, the last valid weights before normalisation (ones
            initially): the reference code's cache, re-normalised and used again when a
            refresh fails.
        last_status: ``()`` int32, the [`GMMStatus`][cgmpinn_jax.gmm.GMMStatus] of the last
            refresh (``NONFINITE`` also when the fit was fine but the weights were not finite).
        n_refresh: ``()`` int32, the number of ``update`` calls so far.
        n_fallback: ``()`` int32, the number of refreshes that kept the previous weights.
        spread: ``()`` float, ``max(weights) / min(weights)`` (for logging; 1 initially).
        n_components: ``()`` int32, the number of mixture components of the last refresh's fit
            (the BIC choice for ``n_components="bic"``); 0 before the first refresh and for the
            weightings without a mixture.
    """

    weights: jax.Array
    last_valid: jax.Array
    last_status: jax.Array
    n_refresh: jax.Array
    n_fallback: jax.Array
    spread: jax.Array
    n_components: jax.Array


class Weighting(NamedTuple):
    """A point weighting as an ``(init, update)`` pair of pure functions, in the style of optax.

    One ``update`` is one *refresh*: the training engine calls it every ``k_upd`` steps with
    the current residuals and holds the weights fixed in between.  Both functions can be
    traced (jit, vmap).

    Attributes:
        init: ``init(n_points, dtype=None) -> state``, the initial
            [`WeightingState`][cgmpinn_jax.weighting.WeightingState] for ``n_points``
            collocation points (weights all ones; ``dtype`` defaults to JAX's default float).
        update: ``update(r, tau, state) -> (weights, new_state)`` with ``r`` the ``(n,)``
            signed PDE residuals at the current parameters (treated as constants), ``tau`` the
            ``()`` curriculum parameter (ignored by the GMMPINN and uniform weightings) and
            ``weights`` the ``(n,)`` new point weights.
    """

    init: Callable
    update: Callable


def _init_fn(n_points, dtype=None):
    n_points = _check_static_int("n_points", n_points, 1)
    dtype = jax.dtypes.canonicalize_dtype(jnp.float64) if dtype is None else dtype
    ones = jnp.ones((n_points,), dtype)
    z = jnp.zeros((), jnp.int32)
    return WeightingState(
        ones, ones, jnp.asarray(GMMStatus.CONVERGED, jnp.int32), z, z, jnp.ones((), dtype), z
    )


def _check_update_args(r, state):
    _check_1d("r", r)
    if r.shape != state.weights.shape:
        raise ValueError(
            f"`r` has shape {r.shape} but the weighting state holds {state.weights.shape[0]} points"
        )


def _finish(w_raw, status, usable, state, eps, n_components=None):
    """Fallback (docs/reference-code.md §5 step 8) + normalisation (step 9) + bookkeeping."""
    w_raw = w_raw.astype(state.weights.dtype)
    ok = usable & jnp.all(jnp.isfinite(w_raw))
    raw = jnp.where(ok, w_raw, state.last_valid)
    w = normalize_weights(raw, eps)
    status = jnp.where(usable & ~ok, GMMStatus.NONFINITE, status).astype(jnp.int32)
    tiny = jnp.finfo(w.dtype).tiny
    spread = jnp.max(w) / jnp.maximum(jnp.min(w), tiny)
    new_state = WeightingState(
        weights=w,
        last_valid=raw,
        last_status=status,
        n_refresh=state.n_refresh + 1,
        n_fallback=state.n_fallback + (~ok).astype(jnp.int32),
        spread=spread,
        n_components=state.n_components
        if n_components is None
        else jnp.asarray(n_components, jnp.int32),
    )
    return w, new_state


_BIC = "bic"


def _check_n_components(n_components, max_components):
    """Validate ``n_components`` (int >= 1 or ``"bic"``) and ``max_components``."""
    max_components = _check_static_int("max_components", max_components, 1)
    if isinstance(n_components, str):
        if n_components != _BIC:
            raise ValueError(
                f"`n_components` must be a Python int >= 1 or 'bic', got {n_components!r}"
            )
        return n_components, max_components
    return _check_static_int("n_components", n_components, 1), max_components


def _fit(r, n_components, max_components, gmm_kwargs):
    """``(fit, mask, K)``: a plain K-component fit (mask None) or the BIC choice, padded."""
    if n_components == _BIC:
        sel = fit_gmm_bic(r, max_components, **gmm_kwargs)
        return sel.fit, sel.mask, sel.n_components
    return fit_gmm(r, n_components, **gmm_kwargs), None, n_components


def cgm_weighting(
    *,
    n_components: int | str = 4,
    max_components: int = 6,
    beta=1.0,
    eps=1e-6,
    variance_factor: bool = True,
    fade_variance: bool = True,
    **gmm_kwargs,
) -> Weighting:
    """The CGM weighting of CGMPINN as a [`Weighting`][cgmpinn_jax.weighting.Weighting].

    ``update(r, tau, state)`` fits a K-component Gaussian mixture to the signed residuals
    ([`fit_gmm`][cgmpinn_jax.gmm.fit_gmm]) and computes
    [`cgm_weights`][cgmpinn_jax.weighting.cgm_weights] at ``tau``.  A fit that converged or
    hit ``max_iter`` is used (scikit-learn uses the latter too).  A ``DEGENERATE`` or
    ``NONFINITE`` fit, or any non-finite weight, keeps the previous valid weights (ones
    initially), re-normalised, as the reference code's exception fallback does.  Unlike the
    reference, whose scikit-learn fit only warns when there are fewer distinct residual values
    than components, that case (``DEGENERATE``) falls back too.

    ``n_components="bic"`` (an extension; the paper names automatic K as future work) fits
    K = 1 .. ``max_components`` at every refresh with
    [`fit_gmm_bic`][cgmpinn_jax.gmm.fit_gmm_bic] and keeps the fit of lowest BIC; the
    difficulty normalisation and the precision maximum then run over the chosen components
    only, so the weights equal those of a plain fit with that K.  The chosen K is in
    ``state.n_components``.

    Args:
        n_components: K, a Python int >= 1 (default 4, as the reference), or ``"bic"``.
        max_components: the largest K tried when ``n_components="bic"`` (default 6; ignored
            otherwise).
        beta: the discrimination strength, >= 0 (default 1.0); may be traced.
        eps: the absolute guard, > 0 (default 1e-6); may be traced.
        variance_factor: multiply by the precision factor (default True; see
            [`cgm_component_weights`][cgmpinn_jax.weighting.cgm_component_weights]).
        fade_variance: fade the precision factor to 1 with ``tau`` (default True).
        **gmm_kwargs: ``max_iter``, ``tol``, ``reg_covar``, ``init`` or ``kmeans_max_iter``,
            passed to [`fit_gmm`][cgmpinn_jax.gmm.fit_gmm] (its defaults, scikit-learn's,
            otherwise).

    Returns:
        The [`Weighting`][cgmpinn_jax.weighting.Weighting].

    Raises:
        ValueError: a bad ``n_components`` or ``max_components``, ``beta < 0`` or
            ``eps <= 0`` (checked when concrete).

    Examples:
        >>> r = jnp.concatenate([jnp.linspace(-0.1, 0.1, 20), jnp.linspace(4.0, 6.0, 20)])
        >>> wt = cgm_weighting(n_components=2)
        >>> state = wt.init(r.shape[0])
        >>> w, state = wt.update(r, 0.0, state)
        >>> int(state.last_status), int(state.n_refresh), bool(w[0] > w[-1])
        (0, 1, True)
    """
    n_components, max_components = _check_n_components(n_components, max_components)
    _check_beta(beta)
    _check_eps(eps)

    def update(r, tau, state):
        r = lax.stop_gradient(_as_float(r))
        _check_update_args(r, state)
        _check_tau(tau)
        fit, mask, k = _fit(r, n_components, max_components, gmm_kwargs)
        w_raw = cgm_weights(
            r,
            fit,
            tau,
            beta=beta,
            eps=eps,
            variance_factor=variance_factor,
            fade_variance=fade_variance,
            normalize=False,
            mask=mask,
        )
        return _finish(w_raw, fit.status, fit.usable, state, eps, k)

    return Weighting(_init_fn, update)


def gmmpinn_weighting(
    *, n_components: int | str = 4, max_components: int = 6, beta=1.0, eps=1e-6, **gmm_kwargs
) -> Weighting:
    """The weighting of the GMMPINN ablation (GMM weights, no curriculum) as a
    [`Weighting`][cgmpinn_jax.weighting.Weighting].

    The same mixture fit (``n_components="bic"`` included), status handling and fallback as
    [`cgm_weighting`][cgmpinn_jax.weighting.cgm_weighting]; the weights are
    [`gmmpinn_weights`][cgmpinn_jax.weighting.gmmpinn_weights].  ``update(r, tau, state)``
    ignores ``tau``.

    Args:
        n_components: K, a Python int >= 1 (default 4), or ``"bic"``.
        max_components: the largest K tried when ``n_components="bic"`` (default 6).
        beta: the strength of the up-weighting of hard components, >= 0 (default 1.0).
        eps: the absolute guard, > 0 (default 1e-6).
        **gmm_kwargs: options of [`fit_gmm`][cgmpinn_jax.gmm.fit_gmm], as for
            [`cgm_weighting`][cgmpinn_jax.weighting.cgm_weighting].

    Returns:
        The [`Weighting`][cgmpinn_jax.weighting.Weighting].
    """
    n_components, max_components = _check_n_components(n_components, max_components)
    _check_beta(beta)
    _check_eps(eps)

    def update(r, tau, state):
        del tau
        r = lax.stop_gradient(_as_float(r))
        _check_update_args(r, state)
        fit, mask, k = _fit(r, n_components, max_components, gmm_kwargs)
        w_raw = gmmpinn_weights(r, fit, beta=beta, eps=eps, normalize=False, mask=mask)
        return _finish(w_raw, fit.status, fit.usable, state, eps, k)

    return Weighting(_init_fn, update)


def clpinn_weighting(*, beta=1.0, eps=1e-6) -> Weighting:
    """The weighting of the CLPINN ablation (curriculum weights per point, no GMM) as a
    [`Weighting`][cgmpinn_jax.weighting.Weighting]; the weights are
    [`clpinn_weights`][cgmpinn_jax.weighting.clpinn_weights].

    The state's status is ``CONVERGED``, or ``NONFINITE`` (the previous weights kept) when the
    residuals or the weights are not finite.

    Args:
        beta: the discrimination strength, >= 0 (default 1.0).
        eps: the absolute guard and range threshold, > 0 (default 1e-6).

    Returns:
        The [`Weighting`][cgmpinn_jax.weighting.Weighting].

    Examples:
        >>> wt = clpinn_weighting()
        >>> w, s = wt.update(jnp.array([0.0, 1.0, 2.0]), 0.0, wt.init(3))
        >>> bool(w[0] > w[2]), round(float(w.mean()), 4)   # tau = 0 favours the small residuals
        (True, 1.0)
    """
    _check_beta(beta)
    _check_eps(eps)

    def update(r, tau, state):
        r = lax.stop_gradient(_as_float(r))
        _check_update_args(r, state)
        _check_tau(tau)
        w_raw = clpinn_weights(r, tau, beta=beta, eps=eps, normalize=False)
        finite = jnp.all(jnp.isfinite(r))
        status = jnp.where(finite, GMMStatus.CONVERGED, GMMStatus.NONFINITE)
        return _finish(w_raw, status, finite, state, eps)

    return Weighting(_init_fn, update)


def uniform_weighting() -> Weighting:
    """The weighting of PINN and the other baselines as a
    [`Weighting`][cgmpinn_jax.weighting.Weighting]: every weight is 1, always (the weights are
    not normalised; ``update`` only counts the calls).

    Examples:
        >>> wt = uniform_weighting()
        >>> w, s = wt.update(jnp.arange(3.0), 0.5, wt.init(3))
        >>> w.tolist(), int(s.n_refresh)
        ([1.0, 1.0, 1.0], 1)
    """

    def update(r, tau, state):
        del tau
        _check_update_args(jnp.asarray(r), state)
        return state.weights, state._replace(n_refresh=state.n_refresh + 1)

    return Weighting(_init_fn, update)
