"""Argument validation for the GMM (`cgmpinn_jax.gmm`), shared with
`cgmpinn_jax.weighting` and `cgmpinn_jax.weighting._balancing`.

The checks raise ``ValueError`` naming the argument, and only look at concrete Python/NumPy
values, so the checked functions can still be traced.
"""

from __future__ import annotations

import numbers

import jax
import jax.numpy as jnp
import numpy as np

_INITS = ("kmeans", "quantile")


def _concrete_float(x):
    """Return ``float(x)`` if ``x`` is a concrete scalar, else None (tracers, arrays)."""
    if isinstance(x, jax.core.Tracer):
        return None
    if isinstance(x, numbers.Real):
        return float(x)
    if isinstance(x, (np.ndarray, np.generic, jax.Array)) and np.ndim(x) == 0:
        try:
            return float(x)
        except Exception:  # pragma: no cover - tracer-like objects
            return None
    return None


def _check_static_int(name, value, minimum):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"`{name}` must be a Python int, got {value!r}")
    if value < minimum:
        raise ValueError(f"`{name}` must be >= {minimum}, got {value}")
    return int(value)


def _check_1d(name, r):
    shape = np.shape(r)
    if len(shape) != 1:
        raise ValueError(f"`{name}` must be a 1-D array of residuals, got shape {shape}")
    if shape[0] < 1:
        raise ValueError(f"`{name}` must not be empty")


def _check_em_args(max_iter, kmeans_max_iter, tol, reg_covar, init):
    """Validate the EM options shared by `fit_gmm` and `fit_gmm_bic`."""
    max_iter = _check_static_int("max_iter", max_iter, 1)
    kmeans_max_iter = _check_static_int("kmeans_max_iter", kmeans_max_iter, 0)
    t = _concrete_float(tol)
    if t is not None and not t >= 0.0:
        raise ValueError(f"`tol` must be >= 0, got {tol!r}")
    rc = _concrete_float(reg_covar)
    if rc is not None and not rc >= 0.0:
        raise ValueError(f"`reg_covar` must be >= 0, got {reg_covar!r}")
    if init not in _INITS:
        raise ValueError(f"`init` must be one of {_INITS}, got {init!r}")
    return max_iter, kmeans_max_iter


def _float_dtype(x):
    dtype = jnp.result_type(x)
    if jnp.issubdtype(dtype, jnp.floating) and jnp.finfo(dtype).bits >= 32:
        return dtype
    return jax.dtypes.canonicalize_dtype(jnp.float64)  # float32 unless x64 is on
