"""Argument validation for the GMM (`cgmpinn_jax.gmm`); the checks the weightings share with it
live in `cgmpinn_jax._checks`.

The checks raise ``ValueError`` naming the argument, and only look at concrete Python/NumPy
values, so the checked functions can still be traced.
"""

from __future__ import annotations


import jax
import jax.numpy as jnp

from .._checks import check_1d as _check_1d  # noqa: F401
from .._checks import check_static_int as _check_static_int  # noqa: F401
from .._checks import concrete_float as _concrete_float  # noqa: F401

_INITS = ("kmeans", "quantile")


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
