"""Curriculum parameter and CGM / GMMPINN / CLPINN sample-weight formulas (paper Section
"Difficulty Quantification, Precision Modulation, and Curriculum Scheduling"; docs/reference-code.md
§5, §6, §11.1, §11.2).

Pure functions: `tau`, `cgm_weights`, `gmmpinn_weights`,
`clpinn_weights` and their building blocks.  They take a residual vector and (for the GMM
variants) a `GMMFit` and return per-point weights.  They follow the
reference code, not the paper, where the two differ:

- the normalised difficulty uses ``(d - d_min) / (d_max - d_min)`` when
  ``d_max - d_min > eps`` and ``0`` otherwise (paper Eq. difficulty_normalized has
  ``+ eps`` in the denominator instead);
- the final normalisation is ``w / (mean(w) + eps)`` (paper Eq. weight_normalize:
  ``N w / (sum(w) + eps)``; identical up to ``eps / N``);
- all ``eps`` are absolute (scale-dependent), as in the reference.

For a padded `fit_gmm_bic` fit the building blocks take a ``mask`` of
the active components, so the weights equal those of a plain fit with the chosen K.

Import them from `cgmpinn_jax.weighting`.  Validation (``ValueError`` naming the argument)
runs only on concrete Python/NumPy values, so the functions can be traced.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

from cgmpinn_jax.gmm._checks import _check_1d, _concrete_float
from cgmpinn_jax.gmm._types import GMMFit

__all__ = [
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
]

_HI = lax.Precision.HIGHEST


# ---------------------------------------------------------------------------
# validation
# ---------------------------------------------------------------------------


def _check_beta(beta):
    b = _concrete_float(beta)
    if b is not None and not b >= 0.0:
        raise ValueError(f"`beta` must be >= 0, got {beta!r}")


def _check_eps(eps):
    e = _concrete_float(eps)
    if e is not None and not e > 0.0:
        raise ValueError(f"`eps` must be > 0, got {eps!r}")


def _check_tau(tau_value):
    t = _concrete_float(tau_value)
    if t is not None and not 0.0 <= t <= 1.0:
        raise ValueError(f"`tau` must lie in [0, 1], got {tau_value!r}")


def _as_float(x):
    x = jnp.asarray(x)
    if not jnp.issubdtype(x.dtype, jnp.floating):
        x = x.astype(jax.dtypes.canonicalize_dtype(jnp.float64))
    return x


# ---------------------------------------------------------------------------
# curriculum parameter
# ---------------------------------------------------------------------------


def tau(k, k_max, c_sat=0.8):
    """Curriculum parameter ``tau(k) = min(k / (c_sat * k_max), 1)`` (paper Eq. tau).

    In the reference (docs/reference-code.md §6) ``k`` is the 1-based global step that continues
    from the Adam stage into the L-BFGS stage, and ``k_max = N_adam + N_lbfgs`` counts outer
    iterations (L-BFGS iterations, not function evaluations).

    Args:
        k: ``()`` step (int or float, may be traced).
        k_max: total number of iterations (> 0).
        c_sat: saturation fraction in ``(0, 1]`` (default 0.8).

    Returns:
        ``()`` float array in ``[0, 1]`` for ``k >= 0``.

    Raises:
        ValueError: ``c_sat`` outside ``(0, 1]`` or ``k_max <= 0`` (when concrete).

    Examples:
        >>> float(tau(6000, 15000)), float(tau(13000, 15000))
        (0.5, 1.0)
    """
    c = _concrete_float(c_sat)
    if c is not None and not 0.0 < c <= 1.0:
        raise ValueError(f"`c_sat` must lie in (0, 1], got {c_sat!r}")
    km = _concrete_float(k_max)
    if km is not None and not km > 0.0:
        raise ValueError(f"`k_max` must be > 0, got {k_max!r}")
    k = _as_float(k)
    return jnp.minimum(k / (jnp.asarray(c_sat, k.dtype) * jnp.asarray(k_max, k.dtype)), 1.0)


# ---------------------------------------------------------------------------
# building blocks
# ---------------------------------------------------------------------------


def component_difficulty(r, resp, eps=1e-6):
    """Component difficulty ``d_m = sum_i gamma_im r_i^2 / (sum_i gamma_im + eps)`` (Eq. component_difficulty).

    Args:
        r: ``(N,)`` signed residuals.
        resp: ``(N, K)`` responsibilities.
        eps: absolute guard.

    Returns:
        ``(K,)`` difficulties.

    Examples:
        >>> component_difficulty(jnp.array([1.0, 3.0]), jnp.array([[1.0, 0.0], [0.0, 1.0]]), 1e-6).round(3)
        Array([1., 9.], dtype=float32)
    """
    r = _as_float(r)
    num = jnp.dot(r * r, resp, precision=_HI)
    return num / (jnp.sum(resp, axis=0) + eps)


def normalized_difficulty(d, eps=1e-6, *, mask=None):
    """Min-max normalised difficulty (Eq. difficulty_normalized, *as coded*).

    ``(d - min d) / (max d - min d)`` if ``max d - min d > eps`` else ``0`` for every entry
    (docs/reference-code.md §5 step 4).  The paper instead writes ``+ eps`` in the denominator and
    no threshold.

    Args:
        d: ``(K,)`` (or ``(N,)`` for CLPINN) difficulties.
        eps: absolute range threshold.
        mask: optional ``(K,)`` bool, True for the active components (a padded
            `fit_gmm_bic` fit); min and max are taken over the active
            entries only and inactive entries are 0.  ``None``: all active.

    Returns:
        Same shape, values in ``[0, 1]``.

    Examples:
        >>> normalized_difficulty(jnp.array([1.0, 2.0, 3.0]))
        Array([0. , 0.5, 1. ], dtype=float32)
    """
    if mask is None:
        lo = jnp.min(d)
        rng = jnp.max(d) - lo
    else:
        inf = jnp.asarray(jnp.inf, d.dtype)
        lo = jnp.min(jnp.where(mask, d, inf))
        rng = jnp.max(jnp.where(mask, d, -inf)) - lo
    ok = rng > eps
    out = jnp.where(ok, (d - lo) / jnp.where(ok, rng, 1.0), jnp.zeros_like(d))
    return out if mask is None else jnp.where(mask, out, jnp.zeros_like(out))


def precision_factor(variances, eps=1e-6, *, extra_eps=False, mask=None):
    """Normalised precision ``v_m = (sigma_m^2 + eps)^-1 / max_l (sigma_l^2 + eps)^-1`` (Eq. precision_factor).

    Args:
        variances: ``(K,)`` GMM variances (``reg_covar`` included).
        eps: absolute guard.
        extra_eps: add ``eps`` to the maximum in the denominator (the GMMPINN ablation's
            formula, docs/reference-code.md §11.1).
        mask: optional ``(K,)`` bool of active components; the maximum is taken over them
            only and inactive entries are 0.  ``None``: all active.

    Returns:
        ``(K,)`` values in ``(0, 1]`` (0 for inactive components).

    Examples:
        >>> precision_factor(jnp.array([1.0, 3.0]), 0.0 + 1e-12).round(4)
        Array([1.    , 0.3333], dtype=float32)
    """
    inv = 1.0 / (variances + eps)
    if mask is not None:
        inv = jnp.where(mask, inv, jnp.zeros_like(inv))
    den = jnp.max(inv) + eps if extra_eps else jnp.max(inv)
    return inv / den


def normalize_weights(w, eps=1e-6):
    """Unit-mean normalisation ``w / (mean(w) + eps)`` (Eq. weight_normalize, as coded).

    Examples:
        >>> normalize_weights(jnp.array([1.0, 3.0]), 1e-6).round(4)
        Array([0.5, 1.5], dtype=float32)
    """
    return w / (jnp.mean(w) + eps)


def cgm_component_weights(
    r, fit: GMMFit, tau, *, beta=1.0, eps=1e-6, variance_factor=True, fade_variance=True, mask=None
):
    """Component weights ``w_m^comp(tau) = w_m^CL(tau) * v~_m(tau)`` (Eqs. easy_hard_weights,
    curriculum_weight, precision_factor, effective_precision, combined_weight).

    ``w_easy = exp(-beta d~)``, ``w_hard = exp(-beta (1 - d~))``,
    ``w_CL = (1 - tau) w_easy + tau w_hard``, ``v~ = (1 - tau) v + tau``.

    Args:
        r: ``(N,)`` signed residuals the GMM was fitted on.
        fit: a `GMMFit` (uses ``resp`` and ``variances``).
        tau: ``()`` curriculum parameter in ``[0, 1]``.
        beta: discrimination strength (>= 0).
        eps: absolute guard (docs/reference-code.md §5).
        variance_factor: multiply by the precision factor (reference ``use_variance_factor``).
        fade_variance: fade the precision factor to 1 with ``tau`` (Eq. effective_precision);
            with False ``v`` is used as is (an ablation; not in the reference).
        mask: optional ``(K,)`` bool of active components (for a padded
            `fit_gmm_bic` fit, ``selection.mask``): the difficulty
            normalisation and the precision maximum use the active components only, and
            inactive components get weight 0.  ``None``: all active.

    Returns:
        ``(K,)`` component weights in ``[exp(-beta) v_min, 1]``.
    """
    d_t = normalized_difficulty(component_difficulty(r, fit.resp, eps), eps, mask=mask)
    w_easy = jnp.exp(-beta * d_t)
    w_hard = jnp.exp(-beta * (1.0 - d_t))
    w = (1.0 - tau) * w_easy + tau * w_hard
    if variance_factor:
        v = precision_factor(fit.variances, eps, mask=mask)
        if fade_variance:
            v = (1.0 - tau) * v + tau
        w = w * v
    return w if mask is None else jnp.where(mask, w, jnp.zeros_like(w))


def cgm_weights(
    r,
    fit: GMMFit,
    tau,
    *,
    beta=1.0,
    eps=1e-6,
    variance_factor=True,
    fade_variance=True,
    normalize=True,
    mask=None,
):
    """CGM sample weights (Eqs. sample_weight and weight_normalize; docs/reference-code.md §5
    steps 3-9).

    ``w_i = sum_m gamma_im w_m^comp(tau)``, then ``w_i / (mean(w) + eps)``.

    Args:
        r: ``(N,)`` signed residuals (the GMM's input).
        fit: `GMMFit` of ``r`` (``resp (N, K)``, ``variances (K,)``).
        tau: ``()`` curriculum parameter.
        beta, eps, variance_factor, fade_variance: see `cgm_component_weights`.
        normalize: if False return the raw weights ``w_i`` (in ``[exp(-beta) v_min, 1]``,
            the bounds behind the paper's Theorem main_equiv).
        mask: optional ``(K,)`` bool of active components of a padded fit (see
            `cgm_component_weights`).

    Returns:
        ``(N,)`` weights (unit mean when ``normalize``).

    Raises:
        ValueError: ``r`` not 1-D, ``beta < 0``, ``eps <= 0``, ``tau`` outside ``[0, 1]``
            (when concrete).

    Examples:
        >>> from cgmpinn_jax.gmm import fit_gmm
        >>> r = jnp.concatenate([jnp.linspace(-0.1, 0.1, 20), jnp.linspace(4.0, 6.0, 20)])
        >>> w = cgm_weights(r, fit_gmm(r, 2), 0.0)
        >>> bool(w[0] > w[-1]), round(float(w.mean()), 4)   # tau = 0 favours the easy cluster
        (True, 1.0)
    """
    _check_1d("r", r)
    _check_beta(beta)
    _check_eps(eps)
    _check_tau(tau)
    w_comp = cgm_component_weights(
        r, fit, tau, beta=beta, eps=eps, variance_factor=variance_factor, fade_variance=fade_variance, mask=mask
    )
    w = jnp.dot(fit.resp, w_comp, precision=_HI)
    return normalize_weights(w, eps) if normalize else w


def gmmpinn_component_weights(r, fit: GMMFit, *, beta=1.0, eps=1e-6, mask=None):
    """GMMPINN ablation component weights ``exp(+beta d~_m) * v_m`` (docs/reference-code.md §11.1).

    No curriculum: hard components are up-weighted at all times, the precision factor has the
    extra ``eps`` in its denominator and is never faded.  ``mask``: as
    `cgm_component_weights`.
    """
    d_t = normalized_difficulty(component_difficulty(r, fit.resp, eps), eps, mask=mask)
    w = jnp.exp(beta * d_t) * precision_factor(fit.variances, eps, extra_eps=True, mask=mask)
    return w if mask is None else jnp.where(mask, w, jnp.zeros_like(w))


def gmmpinn_weights(r, fit: GMMFit, *, beta=1.0, eps=1e-6, normalize=True, mask=None):
    """GMMPINN (GMM-only ablation) sample weights (docs/reference-code.md §11.1).

    ``w_i = sum_m gamma_im exp(beta d~_m) v_m`` with
    ``v_m = (sigma_m^2 + eps)^-1 / (max_l (sigma_l^2 + eps)^-1 + eps)``, then
    ``w / (mean(w) + eps)``.  Not an equation of the paper (ablation only).

    Args / Returns: as `cgm_weights` without ``tau`` (``mask`` included).

    Examples:
        >>> from cgmpinn_jax.gmm import fit_gmm
        >>> r = jnp.concatenate([jnp.linspace(-0.1, 0.1, 20), jnp.linspace(4.0, 4.2, 20)])
        >>> w = gmmpinn_weights(r, fit_gmm(r, 2))
        >>> bool(w[-1] > w[0])   # the hard cluster is up-weighted
        True
    """
    _check_1d("r", r)
    _check_beta(beta)
    _check_eps(eps)
    w = jnp.dot(fit.resp, gmmpinn_component_weights(r, fit, beta=beta, eps=eps, mask=mask), precision=_HI)
    return normalize_weights(w, eps) if normalize else w


def clpinn_weights(r, tau, *, beta=1.0, eps=1e-6, normalize=True):
    """CLPINN (curriculum-only ablation) sample weights (docs/reference-code.md §11.2).

    Per-point difficulty ``p_i = r_i^2``, min-max normalised over all points with the same
    ``range > eps`` rule as `normalized_difficulty`;
    ``w_i = (1 - tau) exp(-beta p~_i) + tau exp(-beta (1 - p~_i))``; then ``w / (mean(w) + eps)``.
    No GMM, no precision factor.

    Examples:
        >>> w = clpinn_weights(jnp.array([0.0, 1.0, 2.0]), 1.0, normalize=False)
        >>> [round(float(v), 4) for v in w]
        [0.3679, 0.4724, 1.0]
    """
    _check_1d("r", r)
    _check_beta(beta)
    _check_eps(eps)
    _check_tau(tau)
    r = _as_float(r)
    p_t = normalized_difficulty(r * r, eps)
    w = (1.0 - tau) * jnp.exp(-beta * p_t) + tau * jnp.exp(-beta * (1.0 - p_t))
    return normalize_weights(w, eps) if normalize else w
