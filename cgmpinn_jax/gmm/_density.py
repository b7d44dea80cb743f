"""Density and posterior of a fitted 1-D Gaussian mixture (raw units).

.. math::

    p(r) = \\sum_{m=1}^{K} \\pi_m\\, \\mathcal{N}(r \\mid \\mu_m, \\sigma_m^2)
    \\qquad \\text{(Eq. gmm\\_pdf)}

    \\gamma_{im} = \\frac{\\pi_m \\mathcal{N}(r_i\\mid\\mu_m,\\sigma_m^2)}
                        {\\sum_l \\pi_l \\mathcal{N}(r_i\\mid\\mu_l,\\sigma_l^2)}
    \\qquad \\text{(Eq. gmm\\_posterior)}

The public helpers take ``(N,)`` samples and ``(K,)`` parameters and return ``(N, K)`` /
``()`` arrays; ``_resp_kn`` is the EM's fused E-step in the ``(K, N)`` layout.

Examples:
    >>> import jax.numpy as jnp
    >>> round(float(mean_log_likelihood(jnp.zeros(2), jnp.ones(1), jnp.zeros(1), jnp.ones(1))), 4)
    -0.9189
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

__all__ = ["log_prob", "responsibilities", "mean_log_likelihood"]

_LOG_2PI = math.log(2.0 * math.pi)


def log_prob(r, weights, means, variances):
    r"""The log-density of each sample under each weighted component,
    $\log\left(\pi_m\, \mathcal{N}(r_i \mid \mu_m, \sigma_m^2)\right)$.

    Args:
        r: ``(n,)`` float array of samples.
        weights: ``(K,)`` float array, the mixing coefficients ``pi_m``.
        means: ``(K,)`` float array, the component means ``mu_m``.
        variances: ``(K,)`` float array, the component variances ``sigma_m^2``.

    Returns:
        ``(n, K)`` float array.

    Examples:
        >>> float(
        ...     log_prob(jnp.zeros(1), jnp.ones(1), jnp.zeros(1), jnp.ones(1))[0, 0]
        ... )  # doctest: +ELLIPSIS
        -0.918...
    """
    r = jnp.asarray(r)
    d = r[:, None] - means[None, :]
    return (
        jnp.log(weights)[None, :]
        - 0.5 * (_LOG_2PI + jnp.log(variances))[None, :]
        - 0.5 * d * d / variances[None, :]
    )


def responsibilities(r, weights, means, variances):
    r"""The posterior responsibilities of the components for each sample (the paper's Eq.
    gmm_posterior):

    $$
    \gamma_{im} = \frac{\pi_m\, \mathcal{N}(r_i \mid \mu_m, \sigma_m^2)}
    {\sum_{l=1}^{K} \pi_l\, \mathcal{N}(r_i \mid \mu_l, \sigma_l^2)}.
    $$

    Args:
        r: ``(n,)`` float array of samples.
        weights: ``(K,)`` float array, the mixing coefficients ``pi_m``.
        means: ``(K,)`` float array, the component means ``mu_m``.
        variances: ``(K,)`` float array, the component variances ``sigma_m^2``.

    Returns:
        ``(n, K)`` float array; every row sums to 1.

    Examples:
        >>> g = responsibilities(jnp.array([-5.0, 5.0]), jnp.array([0.5, 0.5]),
        ...                      jnp.array([-5.0, 5.0]), jnp.ones(2))
        >>> [round(float(v), 3) for v in g[0]]
        [1.0, 0.0]
    """
    return jax.nn.softmax(log_prob(r, weights, means, variances), axis=-1)


def mean_log_likelihood(r, weights, means, variances):
    r"""The mean log-likelihood of the samples under the mixture (the paper's Eq. gmm_pdf):

    $$
    \frac{1}{n} \sum_{i=1}^{n} \log p(r_i), \qquad
    p(r) = \sum_{m=1}^{K} \pi_m\, \mathcal{N}(r \mid \mu_m, \sigma_m^2).
    $$

    Args:
        r: ``(n,)`` float array of samples.
        weights: ``(K,)`` float array, the mixing coefficients ``pi_m``.
        means: ``(K,)`` float array, the component means ``mu_m``.
        variances: ``(K,)`` float array, the component variances ``sigma_m^2``.

    Returns:
        ``()`` float array.

    Examples:
        >>> round(
        ...     float(mean_log_likelihood(jnp.zeros(3), jnp.ones(1), jnp.zeros(1), jnp.ones(1))), 4
        ... )
        -0.9189
    """
    return jnp.mean(jax.nn.logsumexp(log_prob(r, weights, means, variances), axis=-1))


def _resp_kn(d, logw, var):
    """Responsibilities ``(K, N)`` and per-sample log-likelihood ``(N,)`` from deviations
    ``d = x - mu`` of shape ``(K, N)`` (log-sum-exp over the short, major axis; one exp)."""
    lp = (logw - 0.5 * (_LOG_2PI + jnp.log(var)))[:, None] - 0.5 * d * d / var[:, None]
    mx = jnp.max(lp, axis=0, keepdims=True)
    e = jnp.exp(lp - mx)
    se = jnp.sum(e, axis=0, keepdims=True)
    return e / se, mx[0] + jnp.log(se[0])
