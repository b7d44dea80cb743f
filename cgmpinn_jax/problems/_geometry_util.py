"""Helpers of the geometries: argument checks, the random draws (jax, or numpy for the
host-side estimates) and the fixed-count selection of valid candidates."""

from __future__ import annotations

import math
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

__all__: list[str] = []  # private: the _geometry_* modules use these


# a set operation draws ceil((2 n + _MARGIN) / acceptance) candidates to keep n valid ones
_MARGIN = 32


def _float_dtype() -> Any:
    """The float dtype jnp uses now: float32, or float64 under ``jax.enable_x64(True)``."""
    return jnp.zeros(()).dtype


def _float_tuple(value: Any, owner: str, arg: str) -> tuple[float, ...]:
    """``value`` as a tuple of finite Python floats, or a ValueError naming ``owner`` and ``arg``."""
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{owner}: {arg} must be a sequence of numbers, got {value!r}") from None
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{owner}: {arg} must be a non-empty 1-D sequence of numbers, got {value!r}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{owner}: {arg} must be finite, got {value!r}")
    return tuple(float(v) for v in arr)


def _check_name(owner: str, name: Any) -> None:
    if not isinstance(name, str) or not name:
        raise ValueError(f"{owner}: name must be a non-empty string (the boundary part's name), got {name!r}")


def _check_count(where: str, n: Any) -> int:
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"{where}: n must be a non-negative Python int (a static count under jax.jit), got {n!r}")
    return int(n)


def _n_candidates(n: int, acceptance: float) -> int:
    """How many candidates to draw so that ``n`` of them are valid with overwhelming probability."""
    return int(math.ceil((2 * n + _MARGIN) / acceptance))


def _xp(x: Any) -> Any:
    """The array namespace of ``x``: numpy for host-side estimates, jax.numpy otherwise."""
    return np if isinstance(x, np.ndarray) else jnp


def _all_valid(valid: Any, m: int, xp: Any = jnp) -> Any:
    return xp.ones((m,), dtype=bool) if valid is None else valid


class Draw:
    """Uniform random numbers on ``[0, 1)``, handed out column by column to the candidates of
    ``m`` points: a geometry takes what it needs in a fixed order, so one block of uniforms
    (one call of the generator, cheap to compile) serves a whole expression."""

    xp: Any = np
    dtype: Any = np.dtype(np.float64)

    def _take(self, m: int, k: int) -> Any:
        raise NotImplementedError

    def uniform(self, shape: tuple[int, ...], lo: Any = 0.0, hi: Any = 1.0) -> Any:
        """Uniform on ``[lo, hi)``, shape ``(m, ...)``."""
        return lo + (hi - lo) * self._take(shape[0], math.prod(shape[1:])).reshape(shape)

    def normal(self, shape: tuple[int, int]) -> Any:
        """Standard normal, shape ``(m, k)`` (Box-Muller)."""
        m, k = shape
        h = (k + 1) // 2
        u = self._take(m, 2 * h)
        xp = self.xp
        r = xp.sqrt(-2.0 * xp.log(1.0 - u[:, :h]))
        angle = (2.0 * math.pi) * u[:, h:]
        return xp.concatenate([r * xp.cos(angle), r * xp.sin(angle)], axis=1)[:, :k]

    def choice(self, k: int, m: int, weights: Any) -> Any:
        """Indices ``0 .. k - 1`` with probabilities proportional to ``weights``, shape ``(m,)``."""
        cum = np.cumsum(np.asarray(weights, dtype=np.float64))
        edges = self.xp.asarray(cum[:-1] / cum[-1], dtype=self.dtype)
        return self.xp.searchsorted(edges, self._take(m, 1)[:, 0], side="right")


class _BlockDraw(Draw):
    """Columns of one block of uniforms drawn with jax (under jit and vmap)."""

    xp = jnp

    def __init__(self, block: jax.Array):
        self.block, self.dtype, self.used = block, block.dtype, 0

    def _take(self, m: int, k: int) -> jax.Array:
        self.used += k
        return self.block[:, self.used - k : self.used]


class _CountDraw(Draw):
    """Counts the columns a candidate function takes (run on one point, in numpy)."""

    def __init__(self) -> None:
        self.used = 0

    def _take(self, m: int, k: int) -> np.ndarray:
        self.used += k
        return np.full((m, k), 0.5)


class _NumpyDraw(Draw):
    """Columns from a numpy Generator, float64: the host-side acceptance estimates."""

    def __init__(self, rng: np.random.Generator):
        self.rng = rng

    def _take(self, m: int, k: int) -> np.ndarray:
        return self.rng.random((m, k))


def _jax_candidates(key: jax.Array, m: int, fn: Callable[[Draw, int], Any]) -> Any:
    """``fn(draw, m)`` with one block of uniforms from ``key``, its width counted beforehand."""
    counter = _CountDraw()
    fn(counter, 1)
    return fn(_BlockDraw(jax.random.uniform(key, (m, max(counter.used, 1)), _float_dtype())), m)


def _first_valid(valid: jax.Array, n: int, *arrays: jax.Array) -> tuple[jax.Array, ...]:
    """The first ``n`` rows of each array whose ``valid`` entry is true (fixed shapes under jit).

    With fewer than ``n`` valid rows the valid ones repeat cyclically; with none, the rows are NaN.
    """
    order = jnp.argsort(~valid, stable=True)
    count = jnp.sum(valid)
    i = jnp.arange(n)
    idx = order[jnp.where(i < count, i, i % jnp.maximum(count, 1))]
    return tuple(jnp.where(count > 0, a[idx], jnp.nan) for a in arrays)
