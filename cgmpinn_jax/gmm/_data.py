"""The data as the EM of `cgmpinn_jax.gmm` sees them: sanitised, sorted, standardised.

EM is affine-equivariant, so the residuals are centred on their median and divided by
``s = max(std, sqrt(reg_covar))`` before the loop (``reg_covar`` is divided by ``s**2``
accordingly) and the results are mapped back.  This keeps float32 well conditioned for
residuals from ``1e-30`` up to spreads of about ``1e18``.  Non-finite samples are replaced by 0
(the fit's status then reports ``NONFINITE``).

The sort uses an order-preserving integer key (XLA sorts integers faster than floats;
``benchmarks/results/gmm_speed.md``).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax


class _Standardised(NamedTuple):
    """Sanitised and standardised samples (internal units ``(raw - center) / scale``)."""

    all_finite: jax.Array  # () bool: the input had no NaN / Inf
    n_distinct: jax.Array  # () number of distinct (sanitised) values
    x_raw: jax.Array  # (N,) input with non-finite values replaced by 0
    x: jax.Array  # (N,) standardised samples, input order
    xs: jax.Array  # (N,) standardised samples, sorted
    center: jax.Array  # () median of x_raw
    scale: jax.Array  # () standardisation scale
    reg: jax.Array  # () reg_covar in internal units (floored at var_floor)


def _var_floor(dtype):
    """Smallest variance used (keeps ``1/var`` finite if ``reg_covar / s**2`` underflows)."""
    return jnp.finfo(dtype).tiny * 1e8


def _count_eps(dtype):
    """sklearn's guard on the soft counts: ``nk = resp.sum(0) + 10 * eps``."""
    return 10.0 * jnp.finfo(dtype).eps


def _sort_floats(x):
    """Ascending sort of finite floats through an order-preserving integer key.

    XLA's CPU sort is faster on integers than with the float comparator (which
    has to order NaNs).  For IEEE floats the signed-integer view is monotone for
    non-negative values and reversed for negative ones; flipping the magnitude bits
    of negative values makes it monotone everywhere (the map is an involution).
    """
    itype = {4: jnp.int32, 8: jnp.int64}[x.dtype.itemsize]
    mag = jnp.array(np.iinfo(itype).max, itype)
    i = lax.bitcast_convert_type(x, itype)
    key = jnp.where(i < 0, i ^ mag, i)
    key = jnp.sort(key)
    return lax.bitcast_convert_type(jnp.where(key < 0, key ^ mag, key), x.dtype)


def _standardise(r, reg_covar) -> _Standardised:
    """Sanitise ``r`` (non-finite -> 0), sort it, centre on the median, divide by the scale."""
    dtype = r.dtype
    n = r.shape[0]
    finite = jnp.isfinite(r)
    all_finite = jnp.all(finite)
    x_raw = jnp.where(finite, r, jnp.zeros((), dtype))
    xs_raw = _sort_floats(x_raw)
    n_distinct = 1 + jnp.sum(xs_raw[1:] != xs_raw[:-1])
    center = 0.5 * (xs_raw[(n - 1) // 2] + xs_raw[n // 2])  # median
    dev = x_raw - center
    amax = jnp.max(jnp.abs(dev))
    amax = jnp.where((amax > 0) & jnp.isfinite(amax), amax, jnp.ones((), dtype))
    y = dev / amax  # in [-1, 1]: no overflow in the moments below
    # Scale: the standard deviation, but never below sqrt(reg_covar) -- structure finer than
    # that is invisible to the fit anyway, and the floor keeps reg_covar / scale**2 <= 1
    # (no overflow for residuals of 1e-30).
    scale = jnp.maximum(amax * jnp.std(y), jnp.sqrt(reg_covar))
    scale = jnp.where((scale > 0) & jnp.isfinite(scale), scale, jnp.ones((), dtype))
    x = dev / scale
    xs = (xs_raw - center) / scale  # sorted standardised data
    reg = jnp.maximum(reg_covar / (scale * scale), _var_floor(dtype))
    return _Standardised(all_finite, n_distinct, x_raw, x, xs, center, scale, reg)
