"""Strong-Wolfe line search for `cgmpinn_jax.stages._ssbfgs` (jittable, one ``lax.while_loop``).

Line search: Nocedal & Wright (2006) Algorithms 3.5 (bracketing) and 3.6
(zoom) for the strong Wolfe conditions ``f(a) <= f(0) + c1 a f'(0)`` and
``|f'(a)| <= c2 |f'(0)|``, one evaluation of ``value_and_grad_fn`` per
iteration of a single ``lax.while_loop``.  The zoom trial is the cubic
interpolant's minimiser (N&W Eq. 3.59) clipped to the inner 80 % of the
bracket (bisection when the cubic is undefined); extrapolation takes the cubic
minimiser clipped to ``[2 alpha, 10 alpha]`` (doubling when undefined).
Rounding regime (Hager & Zhang 2005, SIAM J. Optim. 16, 170-192; CG_DESCENT):
where the demanded decrease ``c1 a |f'(0)|`` is below ``approx_eps |f(0)|``
(default ``approx_eps = finfo.eps ** (2/3)``), sufficient decrease may also
be met by the approximate Wolfe test ``f(a) <= f(0) + approx_eps |f(0)|`` and
``f'(a) <= (2 c1 - 1) f'(0)``; values within ``approx_eps |f(0)|`` count as
ties (the slopes decide) and tied brackets are split by the slope secant.
Without this the search fails on rounding noise once the decrease drops below
the precision of ``f`` (near any minimum with ``f* != 0``).  Final accepted
points therefore satisfy the strong Wolfe conditions, or their approximate
form inside the rounding regime.
"""

from __future__ import annotations

import functools

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
from jax import lax
from jax.typing import DTypeLike

__all__ = ["LineSearchResult", "line_search"]

_HI = lax.Precision.HIGHEST

ValueAndGrad = Callable[[jax.Array], tuple[jax.Array, jax.Array]]


def _dot(a, b):
    return jnp.dot(a, b, precision=_HI)


class LineSearchResult(NamedTuple):
    """The outcome of `line_search`.

    When ``success`` is true, ``alpha``, ``value`` and ``grad`` are a point satisfying the
    strong Wolfe conditions (or their approximate form in the rounding regime). Otherwise they
    are the best (lowest-value) point tried, or ``alpha = 0`` with the starting value and
    gradient when no trial decreased the value.

    Attributes:
        alpha: () array: the step length along ``p``.
        value: () array: the objective at ``x + alpha p``.
        grad: (n,) array: the gradient at ``x + alpha p``.
        n_evals: () int32 array: the evaluations of ``value_and_grad_fn`` the search used.
        success: () bool array: whether a (strong or approximate) Wolfe point was found.
    """

    alpha: jax.Array
    value: jax.Array
    grad: jax.Array
    n_evals: jax.Array
    success: jax.Array


class _LS(NamedTuple):
    # points are packed as (alpha, value, slope) 3-vectors to keep the loop
    # body small (fewer scalar ops -> faster XLA compiles)
    i: jax.Array
    done: jax.Array
    zoom: jax.Array
    a_trial: jax.Array
    prev: jax.Array  # last bracketing-stage point (alpha_{i-1})
    lo: jax.Array  # zoom bracket end with the lower value
    hi: jax.Array
    star: jax.Array  # accepted strong-Wolfe point
    g_star: jax.Array
    best: jax.Array  # lowest finite value seen
    g_best: jax.Array


def _cubic_min(a0, f0, d0, a1, f1, d1):
    """Minimiser of the cubic through (a0, f0, d0), (a1, f1, d1) (N&W Eq. 3.59)."""
    e1 = d0 + d1 - 3.0 * (f0 - f1) / (a0 - a1)
    disc = e1 * e1 - d0 * d1
    e2 = jnp.sign(a1 - a0) * jnp.sqrt(jnp.maximum(disc, 0.0))
    den = d1 - d0 + 2.0 * e2
    a = a1 - (a1 - a0) * (d1 + e2 - e1) / den
    ok = (disc >= 0) & (den != 0) & jnp.isfinite(a)
    return a, ok


class _Ctx(NamedTuple):
    x: jax.Array
    p: jax.Array
    f0: jax.Array
    d0: jax.Array
    c1: jax.Array
    c2: jax.Array
    f_tol: jax.Array
    dtype: DTypeLike


def _trials(lo, hi, prev, cur, a, f_tol):
    """The next trial steps: ``(inside the zoom bracket, extrapolated)``."""
    # trial points: [0] safeguarded cubic inside the bracket (bisection if
    # undefined; secant on the slopes when the two values are equal to
    # rounding, where the cubic would fit noise), [1] cubic extrapolation
    # through (prev, a) clipped to [2a, 10a]
    P0 = jnp.stack([lo, prev])
    P1 = jnp.stack([hi, cur])
    ac, okc = _cubic_min(P0[:, 0], P0[:, 1], P0[:, 2], P1[:, 0], P1[:, 1], P1[:, 2])
    w = hi[0] - lo[0]
    a_sec = lo[0] - lo[2] * w / (hi[2] - lo[2])
    flat = (f_tol > 0) & (jnp.abs(hi[1] - lo[1]) <= f_tol) & (lo[2] * hi[2] < 0)
    ac0 = jnp.where(flat, a_sec, ac[0])
    ok0 = jnp.where(flat, jnp.isfinite(a_sec), okc[0])
    in_lo = jnp.minimum(lo[0] + 0.1 * w, hi[0] - 0.1 * w)
    in_hi = jnp.maximum(lo[0] + 0.1 * w, hi[0] - 0.1 * w)
    a_zoom = jnp.where(ok0, jnp.clip(ac0, in_lo, in_hi), 0.5 * (lo[0] + hi[0]))
    a_ext = jnp.where(okc[1], jnp.clip(ac[1], 2.0 * a, 10.0 * a), 2.0 * a)

    return a_zoom, a_ext


def _ls_body(ctx: "_Ctx", value_and_grad_fn, st: _LS) -> _LS:
    """One evaluation of the search: classify the trial point, update the bracket, pick the next
    trial."""
    x, p, f0, d0, c1, c2, f_tol, dtype = ctx
    a = st.a_trial
    f, g = value_and_grad_fn(x + a * p)
    f = jnp.asarray(f, dtype)
    g = jnp.asarray(g, dtype)
    d = _dot(g, p)
    cur = jnp.stack([a, f, d])
    i = st.i + 1
    finite = jnp.isfinite(f) & jnp.isfinite(d)
    # sufficient decrease; approximate-Wolfe form only where the demanded
    # decrease c1 a |f'(0)| is below the value tolerance (rounding regime)
    armijo = finite & (
        (f <= f0 + c1 * a * d0)
        | ((-c1 * a * d0 <= f_tol) & (f <= f0 + f_tol) & (d <= (2.0 * c1 - 1.0) * d0))
    )
    curv = finite & (jnp.abs(d) <= -c2 * d0)
    better = finite & (f < st.best[1])
    zoom = st.zoom

    # "f is higher than fref" beyond rounding (ties decided by slopes)
    def higher(fref):
        return jnp.where(f_tol > 0, f > fref + f_tol, f >= fref)

    # bracketing stage (Alg. 3.5): b_hi -> zoom(prev, a); b_lo -> zoom(a, prev)
    b_hi = ~armijo | (higher(st.prev[1]) & (i > 1))
    b_acc = ~b_hi & curv
    extrap = ~zoom & ~b_hi & ~b_acc & (d < 0)
    # zoom stage (Alg. 3.6): z_hi -> hi = a; else lo = a (and hi = old lo on flip)
    z_hi = ~armijo | higher(st.lo[1])
    z_acc = ~z_hi & curv
    z_flip = ~z_hi & ~z_acc & (d * (st.hi[0] - st.lo[0]) >= 0)

    lo = jnp.where(zoom, jnp.where(z_hi, st.lo, cur), jnp.where(b_hi, st.prev, cur))
    hi = jnp.where(
        zoom,
        jnp.where(z_hi, cur, jnp.where(z_flip, st.lo, st.hi)),
        jnp.where(b_hi, cur, st.prev),
    )
    accept = jnp.where(zoom, z_acc, b_acc)

    a_zoom, a_ext = _trials(lo, hi, st.prev, cur, a, f_tol)

    return _LS(
        i=i,
        done=accept,
        zoom=~extrap,  # once bracketed, stay in zoom
        a_trial=jnp.where(extrap, a_ext, a_zoom),
        prev=jnp.where(extrap, cur, st.prev),
        lo=lo,
        hi=hi,
        star=jnp.where(accept, cur, st.star),
        g_star=jnp.where(accept, g, st.g_star),
        best=jnp.where(better, cur, st.best),
        g_best=jnp.where(better, g, st.g_best),
    )


def line_search(
    value_and_grad_fn: ValueAndGrad,
    x: jax.Array,
    p: jax.Array,
    value: jax.Array,
    grad: jax.Array,
    *,
    alpha0=1.0,
    c1: float = 1e-4,
    c2: float = 0.9,
    max_evals: int = 20,
    approx_eps=None,
) -> LineSearchResult:
    """Strong-Wolfe line search along ``p`` from ``x`` (jittable).

    Finds ``alpha`` with ``f(x + alpha p) <= f(x) + c1 alpha g^T p`` and
    ``|g(x + alpha p)^T p| <= c2 |g^T p|`` using at most ``max_evals`` calls of
    ``value_and_grad_fn``, starting with ``alpha0``: Nocedal & Wright (2006) Algorithms 3.5
    (bracketing) and 3.6 (zoom), one evaluation per iteration of a single
    ``lax.while_loop``. Zoom trials are the cubic interpolant's minimiser clipped to the inner
    80 % of the bracket (bisection where the cubic is undefined); extrapolation takes the cubic
    minimiser clipped to ``[2 alpha, 10 alpha]``. A non-finite value or slope fails the
    sufficient-decrease test, so the search backtracks. The search stops at an acceptable
    point, after ``max_evals`` evaluations, or when the bracket has shrunk to rounding level.

    ``approx_eps`` (default ``finfo(dtype).eps ** (2/3)``: 3.7e-11 in float64,
    2.4e-5 in float32; Hager & Zhang use 1e-6; 0 disables): in the
    rounding regime, where the demanded decrease ``c1 alpha |g^T p|`` is below
    ``approx_eps |f(0)|``, the sufficient-decrease test may also pass by Hager &
    Zhang's approximate Wolfe test ``f <= f(0) + approx_eps |f(0)|`` and
    ``g(alpha)^T p <= (2 c1 - 1) g^T p`` (the latter is Armijo exactly for a
    quadratic; SIAM J. Optim. 16 (2005) 170-192, CG_DESCENT).  In
    the same spirit, values within ``approx_eps |f(0)|`` of each other count as
    ties in the bracketing/zoom comparisons (the slopes decide), and a zoom
    bracket whose two values tie is split by the secant of the slopes.

    Args:
        value_and_grad_fn: ``f(x) -> (value, grad)`` on flat vectors: a () value and an
            ``(n,)`` gradient.
        x: (n,) float array: the starting point; its dtype is the search's.
        p: (n,) array: the search direction, a descent direction (``grad^T p < 0``).
        value: () array: ``f(x)``.
        grad: (n,) array: the gradient of ``f`` at ``x``.
        alpha0: the first trial step (a float or a () array).
        c1: the sufficient-decrease constant, ``0 < c1 < c2``.
        c2: the curvature constant, ``c1 < c2 < 1``.
        max_evals: the evaluations of ``value_and_grad_fn`` allowed (a Python int).
        approx_eps: the relative value tolerance of the rounding regime (above); ``None``
            for the default, 0 to disable it.

    Returns:
        A `LineSearchResult`: the accepted point, or
            the best point tried when ``success`` is false.

    Examples:
        Along the steepest-descent direction of ``|x - 1|^2`` from 0, the exact minimiser is
        ``alpha = 1/2``:

        >>> import jax.numpy as jnp
        >>> from cgmpinn_jax.stages._linesearch import line_search
        >>> f = lambda x: (jnp.sum((x - 1.0) ** 2), 2.0 * (x - 1.0))
        >>> x = jnp.zeros(2)
        >>> value, grad = f(x)
        >>> res = line_search(f, x, -grad, value, grad)
        >>> float(res.alpha), float(res.value), bool(res.success), int(res.n_evals)
        (0.5, 0.0, True, 2)
    """
    dtype = x.dtype
    f0 = jnp.asarray(value, dtype)
    g0 = jnp.asarray(grad, dtype)
    d0 = _dot(g0, p)
    c1_arr = jnp.asarray(c1, dtype)
    c2_arr = jnp.asarray(c2, dtype)
    tiny_rel = 10.0 * jnp.finfo(dtype).eps
    if approx_eps is None:
        approx_eps = float(jnp.finfo(dtype).eps) ** (2.0 / 3.0)
    f_tol = jnp.asarray(approx_eps, dtype) * jnp.abs(f0)
    origin = jnp.stack([jnp.zeros((), dtype), f0, d0])

    def cond(st: _LS):
        # stop on success, budget, or a bracket collapsed to rounding level
        collapsed = st.zoom & (
            jnp.abs(st.hi[0] - st.lo[0])
            <= tiny_rel * jnp.maximum(jnp.abs(st.lo[0]), jnp.abs(st.hi[0]))
        )
        return (~st.done) & (~collapsed) & (st.i < max_evals)

    init = _LS(
        i=jnp.zeros((), jnp.int32),
        done=jnp.zeros((), bool),
        zoom=jnp.zeros((), bool),
        a_trial=jnp.asarray(alpha0, dtype),
        prev=origin,
        lo=origin,
        hi=origin,
        star=origin,
        g_star=g0,
        best=origin,
        g_best=g0,
    )
    ctx = _Ctx(x, p, f0, d0, c1_arr, c2_arr, f_tol, dtype)
    st = lax.while_loop(cond, functools.partial(_ls_body, ctx, value_and_grad_fn), init)
    pt = jnp.where(st.done, st.star, st.best)
    return LineSearchResult(
        alpha=pt[0],
        value=pt[1],
        grad=jnp.where(st.done, st.g_star, st.g_best),
        n_evals=st.i,
        success=st.done,
    )
