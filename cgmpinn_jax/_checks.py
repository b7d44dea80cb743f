"""Argument checks shared by several subpackages (the GMM, the weightings, the loss balancing):
one place instead of one subpackage's private module imported by the others."""

from __future__ import annotations

import numbers

import jax
import numpy as np

__all__ = ["concrete_float", "check_static_int", "check_1d"]


def concrete_float(x):
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


def check_static_int(name, value, minimum):
    """``value`` as an int, or a ValueError naming ``name`` (not an int, or below ``minimum``)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"`{name}` must be a Python int, got {value!r}")
    if value < minimum:
        raise ValueError(f"`{name}` must be >= {minimum}, got {value}")
    return int(value)


def check_1d(name, r):
    """A ValueError naming ``name`` unless ``r`` is a non-empty 1-D array."""
    shape = np.shape(r)
    if len(shape) != 1:
        raise ValueError(f"`{name}` must be a 1-D array of residuals, got shape {shape}")
    if shape[0] < 1:
        raise ValueError(f"`{name}` must not be empty")
