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

from cgmpinn_jax._checks import check_1d as _check_1d
from cgmpinn_jax._checks import concrete_float as _concrete_float
from cgmpinn_jax.gmm import GMMFit

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
    r"""The curriculum parameter (the paper's Eq. tau):

    $$
    \tau(k) = \min\left(\frac{k}{c_{\mathrm{sat}}\, k_{\max}},\ 1\right).
    $$

    $\tau$ rises linearly from 0 to 1, which it reaches after the fraction ``c_sat`` of the
    run, and stays there; it moves the CGM weights from the easy components to the hard ones.
    As in the reference code, ``k`` is the 1-based global step that continues from the Adam
    stage into the second stage, and ``k_max = N_adam + N_second`` counts outer iterations
    (L-BFGS iterations, not function evaluations).

    Args:
        k: the step, a ``()`` int or float (may be traced).
        k_max: the total number of iterations (> 0).
        c_sat: the saturation fraction in ``(0, 1]`` (default 0.8).

    Returns:
        ``()`` float array, in ``[0, 1]`` for ``k >= 0``.

    Raises:
        ValueError: ``c_sat`` outside ``(0, 1]`` or ``k_max <= 0`` (checked when concrete).

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
    r"""The difficulty of each mixture component, its responsibility-weighted mean squared residual
    (the paper's Eq. component_difficulty):

    $$
    d_m = \frac{\sum_{i=1}^{n} \gamma_{im}\, r_i^2}{\sum_{i=1}^{n} \gamma_{im} + \varepsilon},
    \qquad m = 1, \dots, K.
    $$

    Args:
        r: ``(n,)`` float array, the signed residuals ``r_i``.
        resp: ``(n, K)`` float array, the responsibilities ``gamma_im`` of a
            [`GMMFit`][cgmpinn_jax.gmm.GMMFit] (rows sum to 1).
        eps: the absolute guard of the denominator (default 1e-6).

    Returns:
        ``(K,)`` float array of difficulties ``d_m >= 0``.

    Examples:
        >>> component_difficulty(
        ...     jnp.array([1.0, 3.0]), jnp.array([[1.0, 0.0], [0.0, 1.0]]), 1e-6
        ... ).round(3)
        Array([1., 9.], dtype=float32)
    """
    r = _as_float(r)
    num = jnp.dot(r * r, resp, precision=_HI)
    return num / (jnp.sum(resp, axis=0) + eps)


def normalized_difficulty(d, eps=1e-6, *, mask=None):
    r"""The difficulties min-max normalised to $[0, 1]$ (the paper's Eq. difficulty_normalized,
    as the reference code computes it):

    $$
    \tilde d_m = \frac{d_m - \min_l d_l}{\max_l d_l - \min_l d_l}
    \quad \text{if } \max_l d_l - \min_l d_l > \varepsilon, \qquad \tilde d_m = 0 \text{ otherwise}.
    $$

    The paper writes $+\,\varepsilon$ in the denominator instead, with no threshold.

    Args:
        d: ``(K,)`` float array of component difficulties (``(n,)`` per-point difficulties for
            CLPINN).
        eps: the absolute threshold on the range ``max d - min d`` (default 1e-6).
        mask: ``(K,)`` bool array, True for the active components (those of a padded
            [`fit_gmm_bic`][cgmpinn_jax.gmm.fit_gmm_bic] fit, ``selection.mask``): the minimum
            and maximum run over the active entries only and the inactive entries are 0.
            ``None`` (default): all are active.

    Returns:
        Float array of the shape of ``d``, values in ``[0, 1]``.

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
    r"""The normalised precision factor of each component (the paper's Eq. precision_factor):

    $$
    v_m = \frac{(\sigma_m^2 + \varepsilon)^{-1}}{\max_l\, (\sigma_l^2 + \varepsilon)^{-1}},
    $$

    1 for the tightest component, small for widely spread ones.  With ``extra_eps`` the
    denominator is $\max_l (\sigma_l^2 + \varepsilon)^{-1} + \varepsilon$ (the GMMPINN
    ablation's formula).

    Args:
        variances: ``(K,)`` float array, the component variances ``sigma_m^2`` of a
            [`GMMFit`][cgmpinn_jax.gmm.GMMFit] (``reg_covar`` included).
        eps: the absolute guard (default 1e-6).
        extra_eps: add ``eps`` to the maximum in the denominator (default False).
        mask: ``(K,)`` bool array of the active components: the maximum runs over them only
            and the inactive entries are 0.  ``None`` (default): all are active.

    Returns:
        ``(K,)`` float array, values in ``(0, 1]`` (0 for inactive components).

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
    r"""The weights scaled to unit mean (the paper's Eq. weight_normalize, as the reference code
    computes it):

    $$
    w_i \leftarrow \frac{w_i}{\frac{1}{n} \sum_{j=1}^{n} w_j + \varepsilon}.
    $$

    The paper writes $n\, w_i / (\sum_j w_j + \varepsilon)$, the same up to $\varepsilon / n$.

    Args:
        w: ``(n,)`` float array of non-negative weights.
        eps: the absolute guard (default 1e-6).

    Returns:
        ``(n,)`` float array with mean (nearly) 1.

    Examples:
        >>> normalize_weights(jnp.array([1.0, 3.0]), 1e-6).round(4)
        Array([0.5, 1.5], dtype=float32)
    """
    return w / (jnp.mean(w) + eps)


def cgm_component_weights(
    r, fit: GMMFit, tau, *, beta=1.0, eps=1e-6, variance_factor=True, fade_variance=True, mask=None
):
    r"""The CGM weight of each mixture component at curriculum parameter $\tau$.

    With $\tilde d_m$ the normalised difficulty
    ([`component_difficulty`][cgmpinn_jax.weighting.component_difficulty] then
    [`normalized_difficulty`][cgmpinn_jax.weighting.normalized_difficulty]) and $v_m$ the
    precision factor ([`precision_factor`][cgmpinn_jax.weighting.precision_factor]), the
    paper's Eqs. easy_hard_weights to combined_weight:

    $$
    w_m^{\mathrm{comp}}(\tau) = \underbrace{\left[(1 - \tau)\, e^{-\beta \tilde d_m}
    + \tau\, e^{-\beta (1 - \tilde d_m)}\right]}_{w_m^{\mathrm{CL}}(\tau)}
    \, \underbrace{\left[(1 - \tau)\, v_m + \tau\right]}_{\tilde v_m(\tau)}.
    $$

    At ``tau = 0`` the easy, tightly clustered components weigh most; at ``tau = 1`` the hard
    ones, and the precision factor has faded to 1.

    Args:
        r: ``(n,)`` float array, the signed residuals the mixture was fitted on.
        fit: the [`GMMFit`][cgmpinn_jax.gmm.GMMFit] of ``r`` (its ``resp`` ``(n, K)`` and
            ``variances`` ``(K,)`` are used).
        tau: ``()`` curriculum parameter in ``[0, 1]`` (see [`tau`][cgmpinn_jax.weighting.tau]).
        beta: the discrimination strength between easy and hard components (>= 0, default 1).
        eps: the absolute guard of every division (default 1e-6).
        variance_factor: multiply by the precision factor (default True; the reference's
            ``use_variance_factor``).
        fade_variance: fade the precision factor to 1 with ``tau`` (the paper's Eq.
            effective_precision; default True); False uses ``v_m`` as is at every ``tau``
            (an ablation that is not in the reference).
        mask: ``(K,)`` bool array of the active components of a padded
            [`fit_gmm_bic`][cgmpinn_jax.gmm.fit_gmm_bic] fit (``selection.mask``): the
            difficulty normalisation and the precision maximum use the active components only,
            and the inactive ones get weight 0.  ``None`` (default): all are active.

    Returns:
        ``(K,)`` float array of component weights in ``[exp(-beta) min_m v_m, 1]``.
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
    r"""The CGM weight of each collocation point (the paper's Eqs. sample_weight and
    weight_normalize):

    $$
    w_i = \sum_{m=1}^{K} \gamma_{im}\, w_m^{\mathrm{comp}}(\tau), \qquad
    w_i \leftarrow \frac{w_i}{\frac{1}{n} \sum_{j=1}^{n} w_j + \varepsilon},
    $$

    the component weights of
    [`cgm_component_weights`][cgmpinn_jax.weighting.cgm_component_weights] mixed by the
    responsibilities $\gamma_{im}$ of the $n$ points, then scaled to unit mean
    ([`normalize_weights`][cgmpinn_jax.weighting.normalize_weights]).  The PDE loss is
    $\frac{1}{n} \sum_i w_i\, r_i^2$.

    Args:
        r: ``(n,)`` float array, the signed PDE residuals (the mixture's data).
        fit: the [`GMMFit`][cgmpinn_jax.gmm.GMMFit] of ``r`` (``resp`` ``(n, K)``,
            ``variances`` ``(K,)``), e.g. from [`fit_gmm`][cgmpinn_jax.gmm.fit_gmm].
        tau: ``()`` curriculum parameter in ``[0, 1]``.
        beta: the discrimination strength (>= 0, default 1).
        eps: the absolute guard of every division (> 0, default 1e-6).
        variance_factor: multiply by the precision factor (default True).
        fade_variance: fade the precision factor to 1 with ``tau`` (default True).
        normalize: scale to unit mean (default True); False returns the raw ``w_i``, which lie
            in ``[exp(-beta) min_m v_m, 1]`` (the bounds behind the paper's Theorem main_equiv).
        mask: ``(K,)`` bool array of the active components of a padded fit (see
            [`cgm_component_weights`][cgmpinn_jax.weighting.cgm_component_weights]).

    Returns:
        ``(n,)`` float array of point weights (unit mean when ``normalize``).

    Raises:
        ValueError: ``r`` not 1-D, ``beta < 0``, ``eps <= 0``, or ``tau`` outside ``[0, 1]``
            (checked when concrete).

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
        r,
        fit,
        tau,
        beta=beta,
        eps=eps,
        variance_factor=variance_factor,
        fade_variance=fade_variance,
        mask=mask,
    )
    w = jnp.dot(fit.resp, w_comp, precision=_HI)
    return normalize_weights(w, eps) if normalize else w


def gmmpinn_component_weights(r, fit: GMMFit, *, beta=1.0, eps=1e-6, mask=None):
    r"""The component weights of the GMMPINN ablation (GMM weights, no curriculum):

    $$
    w_m = e^{+\beta \tilde d_m}\, v_m, \qquad
    v_m = \frac{(\sigma_m^2 + \varepsilon)^{-1}}
    {\max_l\, (\sigma_l^2 + \varepsilon)^{-1} + \varepsilon}:
    $$

    hard components are up-weighted at all times, and the precision factor (with the extra
    ``eps`` in its denominator) never fades.  Not an equation of the paper: the reference's
    ablation script.

    Args:
        r: ``(n,)`` float array, the signed residuals the mixture was fitted on.
        fit: the [`GMMFit`][cgmpinn_jax.gmm.GMMFit] of ``r``.
        beta: the strength of the up-weighting (>= 0, default 1).
        eps: the absolute guard (default 1e-6).
        mask: ``(K,)`` bool array of the active components of a padded fit, as in
            [`cgm_component_weights`][cgmpinn_jax.weighting.cgm_component_weights].

    Returns:
        ``(K,)`` float array of component weights.
    """
    d_t = normalized_difficulty(component_difficulty(r, fit.resp, eps), eps, mask=mask)
    w = jnp.exp(beta * d_t) * precision_factor(fit.variances, eps, extra_eps=True, mask=mask)
    return w if mask is None else jnp.where(mask, w, jnp.zeros_like(w))


def gmmpinn_weights(r, fit: GMMFit, *, beta=1.0, eps=1e-6, normalize=True, mask=None):
    r"""The point weights of the GMMPINN ablation (GMM weights, no curriculum):

    $$
    w_i = \sum_{m=1}^{K} \gamma_{im}\, e^{+\beta \tilde d_m}\, v_m
    $$

    (see [`gmmpinn_component_weights`][cgmpinn_jax.weighting.gmmpinn_component_weights]), then
    scaled to unit mean, $w_i / (\frac{1}{n} \sum_j w_j + \varepsilon)$.  Not an equation of
    the paper: the reference's ablation script.

    Args:
        r: ``(n,)`` float array, the signed PDE residuals.
        fit: the [`GMMFit`][cgmpinn_jax.gmm.GMMFit] of ``r``.
        beta: the strength of the up-weighting of hard components (>= 0, default 1).
        eps: the absolute guard (> 0, default 1e-6).
        normalize: scale to unit mean (default True).
        mask: ``(K,)`` bool array of the active components of a padded fit.

    Returns:
        ``(n,)`` float array of point weights (unit mean when ``normalize``).

    Raises:
        ValueError: ``r`` not 1-D, ``beta < 0`` or ``eps <= 0`` (checked when concrete).

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
    w = jnp.dot(
        fit.resp, gmmpinn_component_weights(r, fit, beta=beta, eps=eps, mask=mask), precision=_HI
    )
    return normalize_weights(w, eps) if normalize else w


def clpinn_weights(r, tau, *, beta=1.0, eps=1e-6, normalize=True):
    r"""The point weights of the CLPINN ablation (curriculum weights, no GMM).

    Each point is its own component: the difficulty $p_i = r_i^2$ is min-max normalised over
    the $n$ points to $\tilde p_i$ (the rule of
    [`normalized_difficulty`][cgmpinn_jax.weighting.normalized_difficulty]), then

    $$
    w_i = (1 - \tau)\, e^{-\beta \tilde p_i} + \tau\, e^{-\beta (1 - \tilde p_i)},
    $$

    scaled to unit mean, $w_i / (\frac{1}{n} \sum_j w_j + \varepsilon)$.  No mixture and no
    precision factor.  Not an equation of the paper: the reference's ablation script.

    Args:
        r: ``(n,)`` float array, the signed PDE residuals.
        tau: ``()`` curriculum parameter in ``[0, 1]``.
        beta: the discrimination strength (>= 0, default 1).
        eps: the absolute guard and range threshold (> 0, default 1e-6).
        normalize: scale to unit mean (default True).

    Returns:
        ``(n,)`` float array of point weights (unit mean when ``normalize``).

    Raises:
        ValueError: ``r`` not 1-D, ``beta < 0``, ``eps <= 0`` or ``tau`` outside ``[0, 1]``
            (checked when concrete).

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
