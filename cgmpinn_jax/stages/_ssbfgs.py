"""Dense self-scaled quasi-Newton optimizers (BFGS, SSBFGS, SSBroyden) in pure JAX.

A small, jittable, dense inverse-Hessian quasi-Newton method with a strong-Wolfe
line search, meant as a float64 "second stage" for small networks (up to
``max_params`` parameters, default 20 000: the n x n matrix takes 8 n^2 bytes in
float64, i.e. 3.2 GB at n = 20 000).  Parameters are flat 1-D vectors (ravel a
pytree with ``jax.flatten_util.ravel_pytree``).  Everything follows ``x.dtype``
(float32 or float64); all matrix products use ``Precision.HIGHEST``; the module
never touches the global JAX configuration.

API
---
``opt = ssbfgs(method="ssbfgs", max_params=20_000, max_linesearch=20, c1=1e-4, c2=0.9)``

* ``opt.init(x, value, grad) -> SSBFGSState`` (raises ``ValueError`` naming
  ``max_params`` when ``x.size > max_params``);
* ``opt.step(value_and_grad_fn, x, state) -> (x_new, state_new)``: one
  iteration; jittable and usable inside ``lax.while_loop``;
* ``opt.set_point(state, value, grad) -> state``: replace the stored
  value/gradient (the objective changed), keeping ``H``.

The line search is also public: `line_search`.

Notation
--------
``g_k`` gradient at ``x_k``, ``H_k`` inverse-Hessian approximation,
``B_k = H_k^{-1}``, search direction ``p_k = -H_k g_k``, step
``s_k = alpha_k p_k``, ``y_k = g_{k+1} - g_k`` and::

    rho_k = 1 / (y_k^T s_k)
    h_k   = y_k^T H_k y_k / y_k^T s_k
    b_k   = s_k^T B_k s_k / y_k^T s_k = -alpha_k s_k^T g_k / y_k^T s_k
            (because B_k p_k = -g_k; no inverse is formed)
    a_k   = b_k h_k - 1  (>= 0 by Cauchy-Schwarz)
    v_k   = rho_k s_k - H_k y_k / (y_k^T H_k y_k)

Update (self-scaled Broyden family, inverse-Hessian form; Urbán, Stefanou &
Pons 2025, J. Comput. Phys. 523, 113656, arXiv:2405.04230 -- equation numbers
below are those cited in the authors' reference code; Al-Baali 1998,
J. Optim. Theory Appl. 96, 533-553; Oren & Luenberger 1974, Management Sci. 20,
845-862)::

    H_{k+1} = (1/tau_k) [ H_k - H_k y_k y_k^T H_k / (y_k^T H_k y_k)
                          + phi_k (y_k^T H_k y_k) v_k v_k^T ]
              + rho_k s_k s_k^T

``phi_k = 1`` is BFGS (Nocedal & Wright 2006, Eq. 6.17), ``phi_k = 0`` DFP.
Since the bracket is homogeneous of degree one in ``H_k`` this equals the
Broyden update of ``H_k / tau_k``; it is implemented, exactly, as the BFGS
update of ``H_k / tau_k`` plus ``(phi_k - 1) (y^T H_k y / tau_k) v_k v_k^T``
(no cancellation when ``phi_k = 1``), as one rank-3 product that is symmetric to
rounding; ``H`` is symmetrised exactly, ``(H + H^T) / 2``, every ``SYM_PERIOD``
iterations.

``method`` chooses ``tau_k`` and ``phi_k``:

* ``"bfgs"``: ``tau_k = 1``, ``phi_k = 1`` (plain BFGS).
* ``"ssbfgs"``: ``phi_k = 1``, ``tau_k = min(1, 1/b_k)`` (Al-Baali's
  self-scaling; Urbán et al. 2025 Eq. 11; the ``"SSBFGS_AB"`` variant of the
  authors' reference code, jorgeurban/self_scaled_algorithms_pinns,
  ``modified_optimize.py``).  ``tau_k = y^T s / s^T B s`` is the
  Oren-Luenberger factor; Al-Baali caps it at one so ``H`` is only ever
  scaled up (``B`` scaled down) when ``B`` over-estimates the curvature.
* ``"ssbfgs_ol"``: ``phi_k = 1``, ``tau_k = 1/b_k`` (Oren & Luenberger's
  original choice, ``"SSBFGS_OL"``; the authors do not recommend it).
* ``"ssbroyden"``: self-scaled Broyden with the ``tau_k``, ``phi_k`` of
  Urbán et al. 2025 Eqs. 13-23 (``"SSBroyden2"`` of the reference code), from
  Al-Baali's wide interval for ``theta_k``::

      rho_k^- = min(1, h_k (1 - sqrt(a_k / (1 + a_k))))
      theta_k^- = (rho_k^- - 1) / a_k,      theta_k^+ = 1 / rho_k^-
      theta_k = max(theta_k^-, min(theta_k^+, (1 - b_k) / b_k))
      sigma_k = 1 + a_k theta_k   (> 0: theta_k >= theta_k^- gives sigma_k >= rho_k^- > 0)
      tau_k = min(min(1, 1/b_k) sigma_k^{1/(1-n)}, sigma_k)       if theta_k <= 0
              min(1, 1/b_k) min(sigma_k^{1/(1-n)}, 1/theta_k)     if theta_k > 0
      phi_k = (1 - theta_k) / sigma_k

  ``theta_k`` is the Broyden parameter in Hessian (``B``) form (0 = BFGS,
  1 = DFP); ``phi_k = (1 - theta_k) / (1 + a_k theta_k)`` is the same member
  in inverse form.  ``a_k`` is floored at the dtype's machine epsilon (when
  ``a_k ~ 0``, ``H y`` is parallel to ``s`` and ``v_k ~ 0``, so the family
  collapses and ``phi_k`` is immaterial); for ``n = 1`` the exponent
  ``1/(1-n)`` is replaced by 0.

First update (``H_k`` is the identity: after ``init`` or after a reset): the
identity is first scaled as Shanno & Phua (1978, Math. Program. 14, 149-160) /
Nocedal & Wright Eq. 6.20,
``H_0 <- (y^T s / y^T y) I``, i.e. ``tau_0 = h_0 = y^T y / y^T s``, then the
method's update is applied (``phi_0 = 1`` for the BFGS variants).  For
``"ssbroyden"`` the reference code uses ``tau_0 = h_0 / sigma_0`` with the
``phi_0`` above, and so does this module.

Safeguards
----------
* Curvature: the update is skipped (``H`` kept, ``state.skipped = True``) when
  ``y^T s <= curvature_eps * |s| |y|`` (default ``curvature_eps = 100 *
  finfo(dtype).eps``), or when any scalar/vector of the update is not finite
  or ``tau_k <= 0``.  With a successful strong-Wolfe step ``y^T s >= (1 - c2)
  |s^T g_k| > 0``, so skips only happen near convergence or after a failed
  line search.
* Non-descent direction: if ``g^T p >= 0`` (with ``g != 0``) or ``g^T p`` is
  not finite (``H`` lost positive definiteness to rounding), ``H`` is reset to
  the identity and the step uses ``p = -g``.
* First trial step: with ``initial_step="unit"`` (default) ``alpha = 1``;
  with ``initial_step="interp"`` it is scipy's / Nocedal & Wright Eq. 3.60
  ``min(1, 1.01 * 2 (f_k - f_{k-1}) / g_k^T p_k)`` (what Urbán et al.'s
  scipy-based reference code effectively uses; it saves evaluations for the
  self-scaled methods, whose unit step overshoots more often).  Either way,
  when ``H`` is the (unscaled) identity the first trial is
  ``min(1, 1/|g|_2)`` (a first step of length at most one, as scipy's BFGS).
* Line search failure (no strong-Wolfe point within ``max_linesearch``
  evaluations): if the best point tried has a lower value than ``x``, the step
  is **taken** to that point (``failed = True``, ``rejected = False``; ``H`` is
  updated if the curvature test passes); otherwise the step is **rejected**
  (``x`` and value/gradient unchanged, ``failed = rejected = True``) and ``H``
  is reset to the identity, so the next step is a (Shanno-Phua scaled)
  steepest-descent restart.  Non-finite values during the search are treated
  as failures of the sufficient-decrease test (the search backtracks).

Line search: see `cgmpinn_jax.stages._linesearch` (strong Wolfe, Nocedal & Wright Alg. 3.5/3.6,
with Hager & Zhang's approximate-Wolfe test in the rounding regime).
"""

from __future__ import annotations

import functools

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from ._linesearch import LineSearchResult, ValueAndGrad, _dot, line_search
from ._qn_update import _apply_update, _scalings, update_metric  # noqa: F401  (the formulas, re-exported)

__all__ = [
    "METHODS",
    "LineSearchResult",
    "DenseQN",
    "SSBFGSState",
    "line_search",
    "ssbfgs",
]

METHODS = ("bfgs", "ssbfgs", "ssbfgs_ol", "ssbroyden")
SYM_PERIOD = 32  # iterations between exact symmetrisations of H

_HI = lax.Precision.HIGHEST


# ----------------------------------------------------------------------------
# optimizer
# ----------------------------------------------------------------------------


class SSBFGSState(NamedTuple):
    """State of the dense quasi-Newton optimizer (see `DenseQN`).

    Attributes:
        H: (n, n) inverse-Hessian approximation (symmetric).
        value: () objective at x.
        grad: (n,) gradient at x.
        k: () int32: number of ``step`` calls.
        n_evals: () int32: evaluations used by the last step's line search.
        failed: () bool: the last line search found no strong-Wolfe point; then either
            the best decreasing point was taken (``rejected`` False) or the step was
            rejected and H reset to the identity (``rejected`` True).
        rejected: () bool: the last step was rejected (x, value, grad unchanged).
        fresh: () bool: H is the unscaled identity (Shanno-Phua scaling pending).
        skipped: () bool: the last H update was skipped (curvature/finite safeguard).
        alpha: () step length of the last step (0 when rejected).
        total_evals: () int32: evaluations over all steps.
        prev_value: () value before the last accepted step (``inf`` after init or
            set_point); used by ``initial_step="interp"``.
    """

    H: jax.Array
    value: jax.Array
    grad: jax.Array
    k: jax.Array
    n_evals: jax.Array
    failed: jax.Array
    rejected: jax.Array
    fresh: jax.Array
    skipped: jax.Array
    alpha: jax.Array
    total_evals: jax.Array
    prev_value: jax.Array


class DenseQN(NamedTuple):
    """A dense (self-scaled) quasi-Newton optimizer, as built by
    `ssbfgs`: three pure functions and the options they were
    built with.

    It works on a flat ``(n,)`` floating-point vector ``x`` (ravel a pytree with
    ``jax.flatten_util.ravel_pytree``); everything follows ``x.dtype``. The state is a named
    tuple with the fields ``H`` (the ``(n, n)`` inverse-Hessian approximation), ``value`` and
    ``grad`` (the objective and its ``(n,)`` gradient at ``x``), ``k`` (steps taken),
    ``n_evals`` and ``total_evals`` (line-search evaluations of the last step and of all),
    ``alpha`` (the last step length, 0 when rejected), the flags ``failed`` (the last line
    search found no strong-Wolfe point), ``rejected`` (the last step was rejected: ``x``
    unchanged and ``H`` reset to the identity), ``skipped`` (the last update of ``H`` was
    skipped by the curvature safeguard) and ``fresh`` (``H`` is the unscaled identity), and
    ``prev_value`` (the value before the last accepted step).

    Attributes:
        init: ``init(x, value, grad) -> state``: the state at ``x`` with its objective value
            (a () array) and gradient (an ``(n,)`` array), ``H`` the identity. Raises
            ``ValueError`` when ``x`` is not a flat floating-point vector or has more than
            ``max_params`` entries.
        step: ``step(value_and_grad_fn, x, state) -> (x_new, state_new)``: one iteration
            (direction ``-H g``, strong-Wolfe line search, update of ``H``), with
            ``value_and_grad_fn(x) -> (value, grad)``. Jittable, and usable inside
            ``lax.while_loop``.
        set_point: ``set_point(state, value, grad) -> state``: replace the stored value and
            gradient (after the objective changed), keeping ``H``.
        method: the update: ``"bfgs"``, ``"ssbfgs"``, ``"ssbfgs_ol"`` or ``"ssbroyden"``.
        max_params: the largest ``x.size`` ``init`` and ``step`` accept.
    """

    init: Callable[..., SSBFGSState]
    step: Callable[..., tuple[jax.Array, SSBFGSState]]
    set_point: Callable[..., SSBFGSState]
    method: str
    max_params: int


def _check_x(x, max_params):
    if x.ndim != 1:
        raise ValueError(
            f"ssbfgs works on flat 1-D parameter vectors, got shape {x.shape}; "
            "ravel the pytree with jax.flatten_util.ravel_pytree"
        )
    n = x.size
    if n > max_params:
        raise ValueError(
            f"dense quasi-Newton stores an n x n matrix: n={n}, "
            f"max_params={max_params}; use L-BFGS or raise max_params"
        )
    if not jnp.issubdtype(x.dtype, jnp.floating):
        raise ValueError(f"x must be a floating-point vector, got dtype {x.dtype}")


def ssbfgs(
    *,
    method: str = "ssbfgs",
    max_params: int = 20_000,
    max_linesearch: int = 20,
    c1: float = 1e-4,
    c2: float = 0.9,
    curvature_eps: float | None = None,
    initial_step: str = "unit",
    approx_eps: float | None = None,
) -> DenseQN:
    """Build a dense (self-scaled) quasi-Newton optimizer: BFGS, self-scaled BFGS or
    self-scaled Broyden, with a strong-Wolfe line search.

    The optimizer keeps a dense inverse-Hessian approximation ``H`` (``n x n``, ``8 n^2``
    bytes in float64) and updates it after every step by a member of the self-scaled
    Broyden family, ``H <- (1/tau) [H - H y y^T H / (y^T H y) + phi (y^T H y) v v^T]
    + s s^T / (y^T s)``, whose factors ``tau`` and ``phi`` ``method`` chooses (Urbán,
    Stefanou & Pons 2025, J. Comput. Phys. 523, 113656; Al-Baali 1998). The first update
    from the identity is scaled as Shanno & Phua. Safeguards: the update is skipped when
    ``y^T s <= curvature_eps |s| |y|``; a non-descent direction resets ``H`` to the identity
    and steps along ``-g``; a failed line search takes its best decreasing point, or rejects
    the step and resets ``H``.

    A minimisation loop, with ``value_and_grad(x) -> (value, grad)`` on a flat ``(n,)``
    vector ``x`` (jit the step once, then call it):

    ```python
    opt = ssbfgs(method="ssbroyden")
    state = opt.init(x, *value_and_grad(x))
    step = jax.jit(lambda x, state: opt.step(value_and_grad, x, state))
    for _ in range(100):
        x, state = step(x, state)
    ```

    Args:
        method: ``"bfgs"`` (``tau = phi = 1``), ``"ssbfgs"`` (Al-Baali's self-scaled BFGS,
            ``tau = min(1, 1/b)``), ``"ssbfgs_ol"`` (Oren-Luenberger's ``tau = 1/b``) or
            ``"ssbroyden"`` (the self-scaled Broyden update of Urbán et al. 2025), where
            ``b = s^T B s / y^T s``.
        max_params: the largest ``x.size`` allowed; ``init`` and ``step`` raise
            ``ValueError`` above it.
        max_linesearch: evaluations allowed per line search (at least 1).
        c1: the sufficient-decrease constant of the strong Wolfe conditions,
            ``0 < c1 < c2``.
        c2: the curvature constant of the strong Wolfe conditions, ``c1 < c2 < 1``.
        curvature_eps: skip the update when ``y^T s <= curvature_eps |s| |y|``; ``None``
            means ``100 * finfo(x.dtype).eps``.
        initial_step: the line search's first trial step: ``"unit"`` (``alpha = 1``) or
            ``"interp"`` (``min(1, 1.01 * 2 (f_k - f_{k-1}) / g^T p)``, Nocedal & Wright
            Eq. 3.60). Either way it is ``min(1, 1/|g|)`` while ``H`` is the unscaled identity.
        approx_eps: relative value tolerance of the approximate-Wolfe test of
            `line_search` (``None``:
            ``finfo(dtype).eps ** (2/3)``; 0 disables it).

    Returns:
        An `DenseQN` with ``init(x, value, grad)``,
            ``step(value_and_grad_fn, x, state)`` and ``set_point(state, value, grad)``.

    Raises:
        ValueError: for an unknown ``method`` or ``initial_step``, constants outside
            ``0 < c1 < c2 < 1``, or ``max_linesearch < 1``.

    Examples:
        >>> import jax.numpy as jnp
        >>> from cgmpinn_jax.stages._ssbfgs import ssbfgs
        >>> opt = ssbfgs(method="ssbroyden", max_params=4)
        >>> state = opt.init(jnp.zeros(3), 0.0, jnp.zeros(3))
        >>> state.H.shape, bool(state.fresh)
        ((3, 3), True)
        >>> opt.init(jnp.zeros(5), 0.0, jnp.zeros(5))  # doctest: +NORMALIZE_WHITESPACE
        Traceback (most recent call last):
        ...
        ValueError: dense quasi-Newton stores an n x n matrix: n=5, max_params=4; use L-BFGS or
        raise max_params
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if not (0.0 < c1 < c2 < 1.0):
        raise ValueError(f"need 0 < c1 < c2 < 1, got c1={c1}, c2={c2}")
    if initial_step not in ("unit", "interp"):
        raise ValueError(f"initial_step must be 'unit' or 'interp', got {initial_step!r}")
    if int(max_linesearch) < 1:
        raise ValueError(f"max_linesearch must be >= 1, got {max_linesearch}")
    opts = _Options(
        method,
        int(max_params),
        int(max_linesearch),
        c1,
        c2,
        curvature_eps,
        initial_step,
        approx_eps,
    )
    return DenseQN(
        init=functools.partial(_init, opts),
        step=functools.partial(_step, opts),
        set_point=_set_point,
        method=method,
        max_params=int(max_params),
    )


class _Options(NamedTuple):
    method: str
    max_params: int
    max_linesearch: int
    c1: float
    c2: float
    curvature_eps: float | None
    initial_step: str
    approx_eps: float | None


def _init(opts: _Options, x, value, grad) -> SSBFGSState:
    x = jnp.asarray(x)
    _check_x(x, opts.max_params)
    dtype, n = x.dtype, x.size

    def z(dt=bool):
        return jnp.zeros((), dt)

    return SSBFGSState(
        H=jnp.eye(n, dtype=dtype),
        value=jnp.asarray(value, dtype).reshape(()),
        grad=jnp.asarray(grad, dtype).reshape(n),
        k=z(jnp.int32),
        n_evals=z(jnp.int32),
        failed=z(),
        rejected=z(),
        fresh=jnp.ones((), bool),
        skipped=z(),
        alpha=z(dtype),
        total_evals=z(jnp.int32),
        prev_value=jnp.full((), jnp.inf, dtype),
    )


def _set_point(state: SSBFGSState, value, grad) -> SSBFGSState:
    dtype = state.H.dtype
    return state._replace(
        value=jnp.asarray(value, dtype).reshape(()),
        grad=jnp.asarray(grad, dtype).reshape(state.grad.shape),
        prev_value=jnp.full((), jnp.inf, dtype),
    )


def _direction(H, g, state: SSBFGSState, initial_step: str):
    """``(p, g.p, bad, fresh, alpha0)``: the quasi-Newton direction (steepest descent if H is
    not a descent metric) and the line search's first trial step."""
    f0, dtype = state.value, g.dtype
    p = -_dot(H, g)
    d0 = _dot(g, p)
    gg = _dot(g, g)
    bad = ((~(d0 < 0)) & (gg > 0)) | ~jnp.isfinite(d0)
    p = jnp.where(bad, -g, p)
    d0 = jnp.where(bad, -gg, d0)
    fresh = state.fresh | bad
    alpha0 = jnp.where(
        fresh, jnp.minimum(1.0, 1.0 / jnp.sqrt(jnp.maximum(gg, jnp.finfo(dtype).tiny))), 1.0
    ).astype(dtype)
    if initial_step == "interp":  # N&W Eq. 3.60, as scipy's line_search_wolfe1/2
        a_int = 1.01 * 2.0 * (f0 - state.prev_value) / d0
        a_int = jnp.where(jnp.isfinite(a_int) & (a_int > 0), jnp.minimum(1.0, a_int), 1.0)
        alpha0 = jnp.where(fresh, alpha0, a_int).astype(dtype)
    return p, d0, bad, fresh, alpha0


def _step(opts: _Options, value_and_grad_fn: ValueAndGrad, x, state: SSBFGSState):
    """One iteration: direction, strong-Wolfe line search, self-scaled update of H."""
    x = jnp.asarray(x)
    _check_x(x, opts.max_params)
    dtype = x.dtype
    eps = jnp.finfo(dtype).eps
    ceps = 100.0 * eps if opts.curvature_eps is None else opts.curvature_eps
    H, g, f0 = state.H, state.grad, state.value
    p, _, bad, fresh, alpha0 = _direction(H, g, state, opts.initial_step)
    ls = line_search(
        value_and_grad_fn,
        x,
        p,
        f0,
        g,
        alpha0=alpha0,
        c1=opts.c1,
        c2=opts.c2,
        max_evals=opts.max_linesearch,
        approx_eps=opts.approx_eps,
    )
    take = ls.success | (ls.value < f0)
    alpha = jnp.where(take, ls.alpha, 0.0).astype(dtype)
    s = alpha * p
    g_new = jnp.where(take, ls.grad, g)
    H_new, upd_ok, reset = update_metric(
        H, g, s, g_new - g, alpha, take, bad, fresh, opts.method, ceps, eps
    )
    # the update is symmetric to rounding; the rounding asymmetry accumulates over the
    # iterations, so symmetrise every SYM_PERIOD
    # iterations (the transpose is the most expensive pass over H)
    H_new = lax.cond(
        state.k % SYM_PERIOD == SYM_PERIOD - 1, lambda: 0.5 * (H_new + H_new.T), lambda: H_new
    )
    new_state = SSBFGSState(
        H=H_new,
        value=jnp.where(take, ls.value, f0),
        grad=g_new,
        k=state.k + 1,
        n_evals=ls.n_evals,
        failed=~ls.success,
        rejected=~take,
        fresh=reset | (~upd_ok & fresh),
        skipped=take & ~upd_ok,
        alpha=alpha,
        total_evals=state.total_evals + ls.n_evals,
        prev_value=jnp.where(take, f0, state.prev_value),
    )
    return jnp.where(take, x + s, x), new_state
