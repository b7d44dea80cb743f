"""Derivative fast path: one Taylor-mode pass yields every lane an operator reads.

A problem's operator is written for one point with `cgmpinn_jax.derivatives.partial`
(``partial(u, 1)(z) - D * partial(u, 0, 0)(z)``). Evaluated naively under ``vmap``, every
``partial`` re-runs the network (nested ``jvp``: value and tangent streams per call, 7 streams
for ``u_t + a u_x - nu u_xx``). The fast path instead

1. *records* which derivatives the operator asks for, by tracing it once (``jax.eval_shape``,
   nothing is computed) with a lane-aware field object in place of ``u``: ``u(z)`` asks for
   the value lane ``()``, ``partial(u, i)`` for the lane ``(i,)``, ``partial(u, i, j)`` for
   ``(i, j)`` (sorted: mixed partials of the smooth networks commute);
2. propagates the value and all requested lanes (plus the first-order lanes the second-order
   ones need: 4 lanes for the example) through the network for the whole batch of points in
   **one** Taylor-mode pass (`cgmpinn_jax.nn._nets.MLP.taylor_lanes`), every layer one
   ``(lanes N, width) x (width, width)`` product, or one ``(N, width)`` product per lane on CPU
   where that was measured faster (`stacking`);
3. evaluates the operator per point (``vmap``) with a field object that *reads* the lanes.

[`cgmpinn_jax.problems.Problem.pde_residuals`][cgmpinn_jax.Problem.pde_residuals] goes through
`operator_values`, so the choice is automatic and a user's operator needs no change.

Covered: derivatives of order <= 2 (value, first, pure and mixed second) of a network with a
``taylor_lanes(points, keys)`` method (`MLP`, ``LNNPINN``,
``STARPINN``, the optional affine input map included) at the operator's own point ``z``;
coefficients the operator closes over may be traced (inverse problems). Anything else --
third derivatives, ``u`` called at another point or wrapped in a function before
``partial``, ``jax.grad(u)`` inside the operator, a plain Python function as ``u``, an
operator the recorder cannot run -- is detected while recording and falls back to the
general path (``vmap`` of the operator with nested ``jvp``).

Lane rules for ``t = tanh(a)``, ``s = 1 - t^2`` (Taylor mode to second order)::

    t_i  = s a_i
    t_ij = s (a_ij - 2 t a_i a_j)

and a linear layer maps every derivative lane by ``W`` alone (the bias only enters the value).

The switch `fast_path` (a context manager, read at *trace* time) forces the general path
(and chooses stacked or per-lane products), for tests and benchmarks; it touches no JAX
configuration. JAX caches traces per function: a function jitted (or ``make_jaxpr``-ed) under
one setting keeps its path, so build a fresh function after switching.

Examples:
    >>> import jax, jax.numpy as jnp
    >>> from cgmpinn_jax.nn import _nets as nets
    >>> from cgmpinn_jax.derivatives import partial
    >>> net = nets.mlp(jax.random.key(0), in_dim=2, width=8, depth=2)
    >>> op = lambda u, z: partial(u, 1)(z) - 0.1 * partial(u, 0, 0)(z)
    >>> sorted(requested_lanes(op, 2, jnp.float32))
    [(0, 0), (1,)]
    >>> pts = jax.random.uniform(jax.random.key(1), (5, 2))
    >>> fast = operator_values(op, net, pts)
    >>> with fast_path(False):
    ...     slow = operator_values(op, net, pts)
    >>> bool(jnp.allclose(fast, slow, atol=1e-5))
    True
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
from typing import Callable, Iterable, Iterator, Optional

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

__all__ = [
    "fast_path",
    "fast_path_enabled",
    "stacking",
    "requested_lanes",
    "lane_closure",
    "operator_values",
    "supports_taylor",
    "input_jet",
    "linear",
    "tanh",
    "scale",
    "add",
    "scalar_output",
]

HIGHEST = lax.Precision.HIGHEST
Key = tuple[int, ...]
Jet = dict  # Key -> array of shape (N, width) or (1, width) (constant over points); absent = 0

_ENABLED: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "cgmpinn_jax_taylor_fast_path", default=True
)
_STACK: contextvars.ContextVar[Optional[bool]] = contextvars.ContextVar(
    "cgmpinn_jax_taylor_stack", default=None
)


# --------------------------------------------------------------------------------------
# the switch


@contextlib.contextmanager
def fast_path(enabled: bool = True, *, stack: Optional[bool] = None) -> Iterator[None]:
    """A context manager that switches the derivative fast path on (``True``) or off
    (``False``) within its block, and restores the previous setting on exit.

    The fast path evaluates a problem's operator at a batch of points in one Taylor-mode pass
    over the network: it first records which derivatives the operator asks for (by tracing
    it once, computing nothing), then propagates the value and all those derivative lanes
    through the network together, and evaluates the operator per point on the lanes.
    [`Problem.pde_residuals`][cgmpinn_jax.Problem.pde_residuals] uses it automatically, so a
    user's operator needs no change.
    It covers derivatives up to second order (value, first, pure and mixed second) of an
    [`MLP`][cgmpinn_jax.nn.MLP], [`LNNPINN`][cgmpinn_jax.nn.LNNPINN] or
    [`STARPINN`][cgmpinn_jax.nn.STARPINN] at the operator's own point; anything else (third
    derivatives, ``u`` called at another point, ``jax.grad`` inside the operator, a plain
    Python function as ``u``) falls back to the general path, ``vmap`` of the operator with
    nested ``jvp`` ([`partial`][cgmpinn_jax.derivatives.partial]).

    The switch is read when a function is traced and touches no JAX configuration: a function
    jitted under one setting keeps its path, so build a fresh function after switching.  It
    serves tests and benchmarks; results agree to rounding either way.

    Args:
        enabled: use the fast path where it applies (default True).
        stack: how a layer multiplies the lanes: ``True`` one stacked ``(lanes n, width)``
            product, ``False`` one ``(n, width)`` product per lane, ``None`` (default) the
            backend's choice (per lane on CPU, where it was measured faster; stacked
            elsewhere).

    Examples:
        >>> with fast_path(False):
        ...     fast_path_enabled()
        False
    """
    t1 = _ENABLED.set(bool(enabled))
    t2 = _STACK.set(None if stack is None else bool(stack))
    try:
        yield
    finally:
        _STACK.reset(t2)
        _ENABLED.reset(t1)


def fast_path_enabled() -> bool:
    """Whether operators are evaluated through the derivative fast path at this point (``True``
    unless switched off by [`fast_path`][cgmpinn_jax.nn.fast_path]).

    Examples:
        >>> fast_path_enabled()
        True
    """
    return _ENABLED.get()


def stacking() -> bool:
    """Whether a layer multiplies all lanes in one stacked product.

    Default: not on CPU, yes elsewhere. On XLA:CPU one product per lane was measured faster
    (docs/decisions.md); on accelerators stacking saves kernel launches.
    """
    s = _STACK.get()
    return jax.default_backend() != "cpu" if s is None else s


# --------------------------------------------------------------------------------------
# lane-aware field


class _Uncovered(Exception):
    """The operator asked for something the fast path does not provide."""


class LaneField:
    """Stands in for the network ``u`` inside ``operator(u, z)``.

    Recording mode (``lanes is None``): every request is noted in `keys` and answered
    with a zero; a request the fast path cannot serve sets `uncovered`. Reading mode:
    requests are answered from ``lanes`` (one point's lane values).
    """

    __slots__ = ("_z", "_lanes", "_dtype", "keys", "uncovered")

    def __init__(self, z, lanes: Optional[dict] = None, dtype=None):
        self._z = z
        self._lanes = lanes
        self._dtype = dtype
        self.keys: set = set()
        self.uncovered = False

    def _get(self, key: Key, q):
        if q is not self._z or len(key) > 2:
            if self._lanes is None:
                self.uncovered = True
                return jnp.zeros(jnp.shape(q)[:-1], self._dtype)
            raise _Uncovered(f"lane {key} at another point than the operator's")
        if self._lanes is None:
            self.keys.add(key)
            return jnp.zeros((), self._dtype)
        return self._lanes[key]

    def __call__(self, q):
        return self._get((), q)

    def _lane_partial(self, axes: tuple[int, ...]) -> Callable:
        """What `cgmpinn_jax.derivatives.partial` returns for this field."""
        key = tuple(sorted(int(a) for a in axes))
        dim = jnp.shape(self._z)[-1]
        if any(a >= dim for a in key):
            key = key + (-1, -1, -1)  # out of range: uncovered (general path decides)
        return lambda q: self._get(key, q)


def requested_lanes(operator: Callable, dim: int, dtype) -> Optional[frozenset]:
    """The lanes ``operator(u, z)`` reads, or ``None`` when the fast path does not cover it.

    Traces the operator once with ``jax.eval_shape`` (nothing is computed).
    """
    field = LaneField(None, None, dtype)

    def run(z):
        field._z = z
        return operator(field, z)

    try:
        out = jax.eval_shape(run, jax.ShapeDtypeStruct((dim,), dtype))
    except Exception:  # an operator the recorder cannot run: the general path decides
        return None
    if field.uncovered or getattr(out, "shape", None) != ():
        return None
    return frozenset(field.keys)


def lane_closure(keys: Iterable[Key]) -> tuple[Key, ...]:
    """The lanes a Taylor pass must carry to deliver ``keys``: the value, the first-order
    lane of every axis in a requested lane, and the requested second-order lanes, in a fixed
    order (value, first by axis, second sorted)."""
    keys = set(keys)
    firsts = {(a,) for k in keys for a in k}
    seconds = {k for k in keys if len(k) == 2}
    return ((),) + tuple(sorted(firsts)) + tuple(sorted(seconds))


def supports_taylor(u) -> bool:
    """Whether ``u`` offers the batched Taylor pass ``u.taylor_lanes(points, keys)``."""
    return callable(getattr(u, "taylor_lanes", None))


def operator_values(operator: Callable, u, points: jax.Array) -> jax.Array:
    """``N[u]`` at ``points`` (N, d) -> (N,): ``vmap`` of ``operator(u, z)``, through the
    fast path when it is enabled and covers ``operator`` and ``u``."""
    if fast_path_enabled() and supports_taylor(u) and jnp.issubdtype(points.dtype, jnp.floating):
        keys = requested_lanes(operator, points.shape[-1], points.dtype)
        if keys is not None:
            lanes = u.taylor_lanes(points, lane_closure(keys))
            lanes = {k: lanes[k] for k in keys}
            return jax.vmap(lambda z, ln: operator(LaneField(z, ln), z))(points, lanes)
    return jax.vmap(lambda z: operator(u, z))(points)


# --------------------------------------------------------------------------------------
# jet primitives (used by the networks' ``taylor`` methods)


def input_jet(points: jax.Array, keys: tuple[Key, ...], input_map=None) -> Jet:
    """The coordinates as a jet: value ``scale * z + shift`` (N, d), first-order lane ``i``
    the constant ``scale_i e_i`` (1, d), second-order lanes zero (absent)."""
    d = points.shape[-1]
    dtype = points.dtype
    scale = jnp.ones((d,), dtype) if input_map is None else jnp.asarray(input_map[0], dtype)
    value = points if input_map is None else points * scale + jnp.asarray(input_map[1], dtype)
    jet: Jet = {(): value}
    for k in keys:
        if len(k) == 1:
            jet[k] = (jnp.zeros((1, d), dtype).at[0, k[0]].set(1.0)) * scale
    return jet


def _dot(x: jax.Array, weight: jax.Array) -> jax.Array:
    """``x @ weight.T`` for x (M, in), weight (out, in)."""
    return lax.dot_general(x, weight, (((1,), (1,)), ((), ())), precision=HIGHEST)


def _stacked_dot(parts: list, weight: jax.Array) -> list:
    if len(parts) == 1:
        return [_dot(parts[0], weight)]
    y = _dot(jnp.concatenate(parts, axis=0), weight)
    # split (its transpose is a concatenate), not slices (whose transposes are pads)
    return jnp.split(y, np.cumsum([p.shape[0] for p in parts[:-1]]).tolist(), axis=0)


def linear(layer, jet: Jet) -> Jet:
    """``W h + b`` on every lane (the bias enters the value lane only); zero lanes stay
    absent. Lanes with one row per point go through one stacked ``(lanes N, in)`` product
    when `stacking` says so, else one ``(N, in)`` product each; constant lanes (one
    row, the first layer's) through one small product."""
    n = jet[()].shape[0]
    full = [k for k, v in jet.items() if v.shape[0] == n]
    const = [k for k, v in jet.items() if v.shape[0] != n]
    out: Jet = {}
    if stacking():
        out.update(zip(full, _stacked_dot([jet[k] for k in full], layer.weight)))
    else:
        out.update((k, _dot(jet[k], layer.weight)) for k in full)
    if const:
        out.update(zip(const, _stacked_dot([jet[k] for k in const], layer.weight)))
    out[()] = out[()] + layer.bias
    return out


def tanh(jet: Jet, keys: tuple[Key, ...]) -> Jet:
    """``tanh`` of a jet: ``t_i = s a_i``, ``t_ij = s (a_ij - 2 t a_i a_j)``, ``s = 1 - t^2``.
    ``keys``: the lanes to produce (absent inputs are zero)."""
    firsts = tuple(k for k in keys if len(k) == 1)
    seconds = tuple(k for k in keys if len(k) == 2)
    pairs = tuple((firsts.index(k[:1]), firsts.index(k[1:])) for k in seconds)
    present = tuple(k in jet for k in seconds)
    t, f_out, s_out = _tanh_lanes(
        pairs,
        present,
        jet[()],
        tuple(jet[k] for k in firsts),
        tuple(jet[k] for k, p in zip(seconds, present) if p),
    )
    out: Jet = {(): t}
    out.update(zip(firsts, f_out))
    out.update(zip(seconds, s_out))
    return out


def _tanh_lanes_fwd_only(pairs, present, a0, a1, a2):
    t = jnp.tanh(a0)
    s = 1.0 - t * t
    f_out = tuple(s * x for x in a1)
    it = iter(a2)
    s_out = []
    for (i, j), p in zip(pairs, present):
        cross = (-2.0 * t) * a1[i] * a1[j]
        s_out.append(s * (next(it) + cross if p else cross))
    return t, f_out, tuple(s_out)


@functools.partial(jax.custom_vjp, nondiff_argnums=(0, 1))
def _tanh_lanes(pairs, present, a0, a1, a2):
    return _tanh_lanes_fwd_only(pairs, present, a0, a1, a2)


def _tanh_lanes_fwd(pairs, present, a0, a1, a2):
    out = _tanh_lanes_fwd_only(pairs, present, a0, a1, a2)
    return out, (out[0], a1, a2)


def _unbroadcast(ct, shape):
    return ct if ct.shape == shape else jnp.sum(ct, axis=0, keepdims=True)


def _tanh_lanes_bwd(pairs, present, res, cts):
    t, a1, a2 = res
    g0, g1, g2 = cts
    s = 1.0 - t * t
    # d t / d a0 = s, d s / d a0 = -2 t s
    q = sum((g * x for g, x in zip(g1, a1)), jnp.zeros_like(t))  # sum_i g_i a_i
    extra = jnp.zeros_like(t)  # sum_p g_p a_i a_j
    d1 = [s * g for g in g1]
    it = iter(a2)
    for (i, j), p, g in zip(pairs, present, g2):
        prod = a1[i] * a1[j]
        inner = (next(it) if p else 0.0) - 2.0 * t * prod
        q = q + g * inner
        extra = extra + g * prod
        d1[i] = d1[i] - 2.0 * t * s * a1[j] * g
        d1[j] = d1[j] - 2.0 * t * s * a1[i] * g
    d0 = s * (g0 - 2.0 * t * q - 2.0 * s * extra)
    d2 = tuple(s * g for g, p in zip(g2, present) if p)
    d1 = tuple(_unbroadcast(d, x.shape) for d, x in zip(d1, a1))
    return d0, d1, d2


_tanh_lanes.defvjp(_tanh_lanes_fwd, _tanh_lanes_bwd)


def scale(jet: Jet, c) -> Jet:
    """``c * h`` on every lane (``c`` a scalar or per-feature vector)."""
    return {k: c * v for k, v in jet.items()}


def add(a: Jet, b: Jet) -> Jet:
    """Lane-wise sum (absent lanes are zero)."""
    out = dict(a)
    for k, v in b.items():
        out[k] = out[k] + v if k in out else v
    return out


def outputs(jet: Jet, keys: tuple[Key, ...], fields: bool = False) -> dict:
    """The network's output lanes: the first output's ``{key: (N,)}`` (`scalar_output`) or,
    with ``fields``, every output's ``{key: (N, F)}`` (`field_output`)."""
    return field_output(jet, keys) if fields else scalar_output(jet, keys)


def field_output(jet: Jet, keys: tuple[Key, ...]) -> dict:
    """``{key: (N, F)}`` from a jet of width F, with zeros for absent lanes."""
    n, f = jet[()].shape
    return {
        k: jnp.broadcast_to(jet[k], (n, f)) if k in jet else jnp.zeros((n, f), jet[()].dtype)
        for k in keys
    }


def scalar_output(jet: Jet, keys: tuple[Key, ...]) -> dict:
    """``{key: (N,)}`` from a jet of width 1, with zeros for absent lanes."""
    n = jet[()].shape[0]
    out = {}
    for k in keys:
        if k in jet:
            out[k] = jnp.broadcast_to(jet[k][:, 0], (n,))
        else:
            out[k] = jnp.zeros((n,), jet[()].dtype)
    return out
