"""The solver of the Gauss-Newton (Levenberg-Marquardt) stage, ``GaussNewton()``.

The objective is a sum of squares, ``|r(x)|^2`` (`LeastSquares`:
CGM weights and ReLoBRaLo lambdas scale rows). One iteration at the point ``x``:

1. ``r`` and the Jacobian ``J`` (``M x P``), once: a ``vmap`` over points of one row's gradient.
2. The damped normal system ``(J^T J + mu I) d = -J^T r``, in the **kernel (Woodbury) form**
   ``d = -J^T (J J^T + mu I)^{-1} r`` when ``M <= P`` (an ``M x M`` system), else in the
   **Gramian form** (``P x P``); ``gauss_newton.form`` forces either. The product ``J J^T`` (or
   ``J^T J``) is formed once per iteration and each trial value of ``mu`` only refactors it
   (Cholesky, ``s^3 / 3`` flops against the product's ``2 s^2 n``).
3. The trial ``x + d`` is accepted when the objective falls; ``mu`` adapts by the gain ratio
   ``rho = (f(x) - f(x + d)) / (f(x) - |r + J d|^2)`` (Nielsen's rule: on acceptance
   ``mu *= max(1/3, 1 - (2 rho - 1)^3)``, else ``mu *= nu, nu *= 2``), with at most
   ``gauss_newton.max_trials`` trials per iteration, each one forward pass of the objective. In the
   kernel form the model's residual is exact and free: ``r + J d = mu a`` with
   ``a = (J J^T + mu I)^{-1} r``.

**The preconditioned-CG form** (``gauss_newton.form="pcg"``): the kernel system
``(J J^T + mu I) a = r`` solved by conjugate gradients (`_pcg`), preconditioned with the
Cholesky factor of an earlier iteration's ``J J^T + mu' I``, carried in `PCGState`. A CG
iteration is two products with the stored ``J`` and two triangular solves (``4 M P + 2 M^2``
flops) against the product's ``2 M^2 P``; a new factor (product and Cholesky, ``mu`` raised
100-fold until it factors) is made only at the first iteration and after an iteration whose
last trial's CG needed more than ``cg_refactor`` iterations (`PCG_REFACTOR`). CG stops at a
residual below ``cg_tol |r|`` (`PCG_TOL`) or after ``cg_max`` iterations (`PCG_MAX_ITERS`);
the solve being inexact, the gain ratio's model residual ``r + J d`` is computed with ``J``.
The stale factor carries the spectrum of ``J J^T``, which changes little from one iteration
to the next late in a run (why not Jacobi preconditioning: docs/decisions.md). With more rows
than parameters (``M > P``) the form works on the Gramian side instead, the same way:
``(J^T J + mu I) d = -J^T r`` by CG preconditioned with an earlier factor of
``J^T J + mu' I`` (``P x P``). ``form="auto"`` still takes the exact Gramian form there: the
Gramian side was measured against it only at the start of a run (docs/accuracy.md).
**pcg with a stale factor.** A trial that fails at the largest damping stops the stage
(``NO_DECREASE``) only when this iteration made its factor; with an earlier one, the
iteration leaves the parameters as they are and the next one refactors at this iteration's
first damping. CGMPINN's weight refresh rescales the rows, so an earlier factor can be far
from the current ``J J^T`` (the damped wave CGMPINN run that stopped early before this
rule: docs/accuracy.md).

**The matrix-free form** (``gauss_newton.form="matfree"``): the same kernel
system by plain conjugate gradients (`_cg`) on products with ``J`` and ``J^T`` from automatic
differentiation: ``J^T u`` is the residuals' vector-Jacobian product, ``J v`` its linear
transpose (`jax.linear_transpose`; the Taylor fast path has no forward mode to give it
directly). No Jacobian and no matrix is stored, so an iteration holds a few residual and
parameter vectors and the backward pass's activations; the Jacobian's scale ``|J|_F^2 / P``
that the damping is relative to is estimated from `MATFREE_PROBES` fixed Rademacher probes
(Hutchinson: ``E |J v|^2 = |J|_F^2``). CG stops at ``cg_tol |r|`` or after `MATFREE_MAX_ITERS`
iterations. ``form="auto"`` takes it only where the form it would choose needs more than
``gauss_newton.memory_limit_gb`` (`memory_bytes`), which the engine refused before: a
fallback for size, not for speed (without a preconditioner CG solves only well-damped systems
in few iterations: docs/decisions.md).

**The SVD form** (``gauss_newton.form="svd"``): one thin SVD of ``J`` per
iteration, and every trial's step and predicted decrease from it (`_gn_linear.svd_direction`),
so nothing squares the condition number: directions are resolved down to about ``eps s_max``
where a Cholesky factor of ``J J^T + mu I`` stops near ``sqrt(eps) s_max``. It costs several
kernel steps. ``"auto"`` takes it in float32 (`SVD_AUTO_MAX`), where ``sqrt(eps) s_max``
leaves the kernel too little to resolve; in float64 the kernel's conditioning is not what
stops a run (the measurements: ``benchmarks/results/floor.md``, docs/accuracy.md).

**Cholesky fallback.** A factorization that fails (``jnp.linalg.cholesky`` returns NaN when
``J J^T + mu I`` is not numerically positive definite, which happens for tiny ``mu`` since a
PINN's ``J J^T`` has a condition number beyond 1e16) counts as a rejected trial: ``mu``
grows and the next trial refactors. No silent NaN reaches the parameters.

**Stop rules** (on top of the guards every stage applies, `cgmpinn_jax.stages._stopping`):
``NO_DECREASE`` when a trial fails with ``mu`` at its largest value, ``gauss_newton.mu_max``
times the Jacobian's scale ``|J|_F^2 / P`` (the mean diagonal of ``J^T J``; ``mu_init`` and
``mu_min`` are relative to it too): no decrease even at the largest damping, which in
float64 is where rounding ends the descent; ``LOSS_TOL`` from the float64 plateau rule
(`stop_rule`); GRAD_TOL tests the gradient ``2 J^T r`` of the
previous iteration's start point (the engine sees the stored gradient before the step; this
member computes it inside the step), so it fires one iteration late.

**Weights between iterations.** The objective is frozen inside an iteration; the weight
refresh and ReLoBRaLo change ``w`` and the lambdas between iterations at the usual cadence
(`cgmpinn_jax.training._engine`), and the row scales follow them. The damping ``mu`` is kept
across a refresh.

**Memory** is estimated before anything is compiled (`memory_bytes`: ``J`` twice, the
``s x s`` product, its factor and the damped copy, ``s = min(M, P)``); above
``gauss_newton.memory_limit_gb`` the engine refuses with the sizes and what to change.

Evaluations: each trial is one forward evaluation of the objective (no gradient); the
Jacobian is one per iteration. ``evals`` in the history counts the trials.

**Cost.** Forming the product dominates an iteration; it is built from the 10 lower tiles of
16 (`_gn_linear._gram`). Why, and the cheaper iterations that were rejected (sampled rows,
chord steps, Jacobi-preconditioned CG, optimistix's ``LevenbergMarquardt``): docs/decisions.md.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree

from ._gn_linear import HIGHEST, _cg, _gram, _pcg, cholesky_direction, svd_direction
from ._protocol import StageStatus
from ._protocol import StepResult
from ._stopping import Terminates

__all__ = ["GaussNewtonSolver", "GNState", "PCGState", "memory_bytes", "lm_solve_form"]

PCG_MAX_ITERS = 50  # CG iterations per trial at most (gauss_newton.form="pcg")
PCG_TOL = 1e-8  # CG stops at a residual below this times |r|
PCG_REFACTOR = 25  # a new factor when the last iteration's CG needed more iterations than this
# gauss_newton.form="auto" takes "pcg" from this many rows on (rows <= parameters)
PCG_AUTO_ROWS = 2048
# in float32, gauss_newton.form="auto" takes "svd" up to this min(rows, parameters)
SVD_AUTO_MAX = 4096
MATFREE_MAX_ITERS = 200  # CG iterations per trial at most (gauss_newton.form="matfree")
MATFREE_PROBES = 8  # Rademacher probes of the Jacobian's scale (gauss_newton.form="matfree")


class GNState(NamedTuple):
    """The state of `GaussNewton` between iterations.

    The ``"pcg"`` form carries three more fields, in a named tuple with these five first:
    ``L``, the ``(s, s)`` Cholesky factor its conjugate gradients are preconditioned with
    (``s = min(M, P)``; NaN before the first factorization), ``cg_iters``, the () int32 CG
    iterations of the last iteration's final trial, and ``factorizations``, the () int32
    count of factorizations so far.

    Attributes:
        value: () array: the objective at the current point.
        grad: the objective's gradient ``2 J^T r`` at the last iteration's start point, a
            pytree shaped like the parameters (zeros before the first iteration). It lags one
            iteration behind the point, so the ``GRAD_TOL`` rule fires one iteration late.
        tv: the loss terms at the current point (the engine's term values record).
        mu: () array: the damping, in absolute units; NaN before the first iteration, which
            sets it to ``mu_init`` times the Jacobian's scale ``|J|_F^2 / P``.
        nu: () array: the factor by which ``mu`` grows after the next rejected trial (2 after
            an accepted one, doubling with each rejection).
    """

    value: jax.Array  # () objective at the current point
    grad: Any  # gradient (params pytree) at the last start point
    tv: Any  # TermValues at the current point
    mu: jax.Array  # () damping; NaN before the first iteration (set from the Jacobian's scale)
    nu: jax.Array  # () growth factor of mu after a rejected trial


def lm_solve_form(
    rows: int, params: int, form: str = "auto", limit_bytes: float | None = None, itemsize: int = 8
) -> str:
    """The linear-system form a Gauss-Newton iteration with ``rows x params`` Jacobian uses.

    An explicit ``form`` is returned as it is. For ``"auto"``, in this order:

    1. in float32 (``itemsize`` 4), ``"svd"`` when ``min(rows, params) <= 4096``: the kernel
       form's squared condition number leaves float32 too little to resolve;
    2. otherwise ``"gramian"`` (a ``params x params`` system) when ``rows > params``;
       ``"pcg"`` from 2048 rows on (it reached a given accuracy sooner on heat and 2D
       Poisson); below that the exact ``"kernel"`` step (a ``rows x rows`` system);
    3. ``"matfree"`` instead, when the form chosen so far would hold more than ``limit_bytes``
       (`memory_bytes`).

    Args:
        rows: ``M``, the number of residual rows (the Jacobian's rows).
        params: ``P``, the number of trainable parameters (the Jacobian's columns).
        form: ``"auto"``, or one of ``"kernel"``, ``"gramian"``, ``"pcg"``, ``"matfree"``,
            ``"svd"`` (``TrainConfig.gauss_newton.form``).
        limit_bytes: the memory an iteration may hold, or ``None`` for no limit.
        itemsize: bytes per float: 8 in float64, 4 in float32.

    Returns:
        The form's name.

    Examples:
        >>> from cgmpinn_jax.stages._gauss_newton import lm_solve_form
        >>> lm_solve_form(1502, 5000), lm_solve_form(4096, 20000), lm_solve_form(6000, 1000)
        ('kernel', 'pcg', 'gramian')
        >>> lm_solve_form(1502, 5000, itemsize=4)
        'svd'
        >>> lm_solve_form(20_000, 50_000, limit_bytes=16 * 2**30)
        'matfree'
        >>> lm_solve_form(1502, 5000, form="gramian")
        'gramian'
    """
    if form != "auto":
        return form
    if itemsize == 4 and min(rows, params) <= SVD_AUTO_MAX:
        chosen = "svd"
    else:
        chosen = "gramian" if rows > params else ("pcg" if rows >= PCG_AUTO_ROWS else "kernel")
    if limit_bytes is not None and memory_bytes(rows, params, itemsize, chosen) > limit_bytes:
        return "matfree"
    return chosen


def memory_bytes(rows: int, params: int, itemsize: int = 8, form: str = "auto") -> int:
    """An estimate of the bytes one Gauss-Newton iteration holds at its peak.

    The kernel, Gramian and pcg forms hold the Jacobian twice (the per-group pieces and their
    concatenation) and three ``s x s`` matrices (the product, the damped copy, the Cholesky
    factor), with ``s = rows`` in the kernel form, ``params`` in the Gramian form and the
    smaller of the two in the pcg form: ``itemsize (2 rows params + 3 s^2)``. The SVD form
    holds about four Jacobians and a ``min(rows, params)`` square matrix. The matrix-free form
    holds vectors only: about ten of length ``rows`` and six of length ``params``. The
    backward pass's activations, which every form holds too, are not counted. The engine
    compares this with ``TrainConfig.gauss_newton.memory_limit_gb`` before compiling anything.

    Args:
        rows: ``M``, the number of residual rows.
        params: ``P``, the number of trainable parameters.
        itemsize: bytes per float: 8 in float64, 4 in float32.
        form: the form, or ``"auto"`` for the one
            `lm_solve_form` chooses (without a memory
            limit).

    Returns:
        The estimate in bytes.

    Examples:
        >>> from cgmpinn_jax.stages._gauss_newton import memory_bytes
        >>> memory_bytes(1502, 5000)  # the kernel form, float64: about 166 MiB
        174304096
        >>> memory_bytes(1502, 5000, form="matfree")
        360160
    """
    form = lm_solve_form(rows, params, form, itemsize=itemsize)
    if form == "matfree":
        return itemsize * (10 * rows + 6 * params)
    if (
        form == "svd"
    ):  # J twice, the SVD's V^T and the factorization's workspace (about one more J), U
        return itemsize * (4 * rows * params + 2 * min(rows, params) ** 2)
    s = rows if form == "kernel" else (min(rows, params) if form == "pcg" else params)
    return itemsize * (2 * rows * params + 3 * s * s)


class PCGState(NamedTuple):
    """`GNState` and what the ``"pcg"`` form carries between iterations."""

    value: jax.Array
    grad: Any
    tv: Any
    mu: jax.Array
    nu: jax.Array
    # (s, s) Cholesky factor of an earlier J J^T + mu I (J^T J + mu I if M > P);
    # NaN before the first
    L: jax.Array
    cg_iters: jax.Array  # () int32: CG iterations of the last iteration's final trial
    factorizations: jax.Array  # () int32: factorizations so far


class GaussNewtonSolver(Terminates):
    """The solver of a ``GaussNewton()`` stage: Levenberg-Marquardt on
    the objective written as a sum of squares, ``f(x) = |r(x)|^2``.

    The residual vector ``r`` has ``M`` rows: one per collocation point (and equation of a
    system), constraint point and observation, each scaled by the square root of its weights
    (the per-point PDE weights ``w`` and the loss-term weights ``lam``). One iteration at the
    point ``x`` (``P`` parameters):

    1. ``r`` and its ``M x P`` Jacobian ``J``, once;
    2. the damped step ``d`` solving ``(J^T J + mu I) d = -J^T r``, in one of the forms below;
    3. the trial ``x + d``, accepted when the objective falls. The damping adapts by the gain
       ratio ``rho = (f(x) - f(x + d)) / (f(x) - |r + J d|^2)`` (Nielsen's rule: on
       acceptance ``mu *= max(1/3, 1 - (2 rho - 1)^3)``, on rejection ``mu *= nu`` and
       ``nu *= 2``), with at most ``max_trials`` trials, each one forward pass of the
       objective. A failed Cholesky factorization counts as a rejected trial; when every
       trial is rejected the point stays where it was.

    The damping is relative to the Jacobian's scale ``|J|_F^2 / P`` (the mean diagonal of
    ``J^T J``): ``mu`` starts at ``mu_init`` times it and stays between ``mu_min`` and
    ``mu_max`` times it. A trial rejected at the largest damping ends the stage with
    ``NO_DECREASE`` (the point kept); in float64 that is where rounding ends the descent. The
    stage's other stop rules are the second stage's (`Stopping`).

    The forms of the linear system (``form``):

    - ``"kernel"``: ``d = -J^T (J J^T + mu I)^{-1} r``, an ``M x M`` Cholesky solve. The
      product ``J J^T`` is formed once per iteration and each trial only refactors it; the
      model's residual ``r + J d = mu (J J^T + mu I)^{-1} r`` comes free and exact.
    - ``"gramian"``: ``(J^T J + mu I) d = -J^T r``, a ``P x P`` Cholesky solve, the same way.
    - ``"pcg"``: the kernel system (the Gramian one when ``M > P``) by conjugate gradients
      preconditioned with the Cholesky factor of an earlier iteration's matrix, which is
      refactored only after an iteration whose CG needed more than ``cg_refactor``
      iterations. A trial rejected at the largest damping with a factor from an earlier
      iteration refactors at the next iteration instead of stopping the stage.
    - ``"svd"``: every trial's step from one thin SVD of ``J``, which squares no condition
      number (directions are resolved down to about ``eps s_max``, where a Cholesky factor
      of ``J J^T + mu I`` stops near ``sqrt(eps) s_max``), at several times the kernel
      step's cost.
    - ``"matfree"``: the kernel system by plain conjugate gradients on products with ``J``
      and ``J^T`` from automatic differentiation. No Jacobian and no matrix is stored; the
      scale ``|J|_F^2 / P`` is estimated from 8 fixed random (Rademacher) probes.

    ``form="auto"`` chooses by `lm_solve_form`: in
    float32 ``"svd"`` while ``min(M, P) <= 4096`` (float32 cannot resolve the kernel form's
    squared condition number); otherwise ``"gramian"`` when ``M > P``, ``"pcg"`` when
    ``2048 <= M <= P`` and ``"kernel"`` for fewer rows; and ``"matfree"`` instead only when
    that choice would hold more than ``limit_bytes``
    (`memory_bytes`).

    Its state is a `GNState` (with the preconditioner's
    fields in the ``"pcg"`` form). ``evals`` counts the trials; the Jacobian is one more
    per iteration. The step reads neither the ``grad`` nor the ``hyper`` it is given.

    Args:
        obj_fn: the objective, ``obj_fn(params, w, lam, batch) -> (value, terms)``, equal to
            ``|r|^2`` (see [`Stage`][cgmpinn_jax.stages.Stage]).
        lsq: the objective's least-squares view (built by the training engine): an object with
            ``n_rows(batch) -> M``, ``jacobian(params, batch, w, lam) -> (r, J)`` (an ``(M,)``
            vector and an ``(M, P)`` matrix over the raveled parameters) and, for the
            matrix-free form, ``residuals(params, batch, w, lam) -> r``.
        form: ``"auto"``, ``"kernel"``, ``"gramian"``, ``"pcg"``, ``"matfree"`` or ``"svd"``.
        mu_init: the first damping, relative to ``|J|_F^2 / P``.
        mu_min: the damping's lower bound, relative as ``mu_init``.
        mu_max: the damping's upper bound, relative as ``mu_init``.
        max_trials: trials of the damping per iteration at most.
        cg_max: CG iterations per trial at most in the ``"pcg"`` form (50).
        cg_tol: CG stops at a residual below ``cg_tol |r|`` (1e-8), in the ``"pcg"`` and
            ``"matfree"`` forms.
        cg_refactor: the ``"pcg"`` form makes a new preconditioner after an iteration whose
            last trial needed more CG iterations than this (25).
        limit_bytes: the memory an iteration may hold, for ``"auto"``'s choice of
            ``"matfree"``; ``None`` for no limit.
        matfree_max: CG iterations per trial at most in the ``"matfree"`` form (200).
    """

    def __init__(
        self,
        obj_fn,
        lsq,
        *,
        form: str,
        mu_init: float,
        mu_min: float,
        mu_max: float,
        max_trials: int,
        cg_max: int = PCG_MAX_ITERS,
        cg_tol: float = PCG_TOL,
        cg_refactor: int = PCG_REFACTOR,
        limit_bytes: float | None = None,
        matfree_max: int = MATFREE_MAX_ITERS,
    ):
        self.obj_fn, self.lsq = obj_fn, lsq
        self.form, self.mu_init, self.mu_min, self.mu_max, self.max_trials = (
            form,
            mu_init,
            mu_min,
            mu_max,
            max_trials,
        )
        self.cg_max, self.cg_tol, self.cg_refactor = cg_max, cg_tol, cg_refactor
        self.limit_bytes, self.matfree_max = limit_bytes, matfree_max

    def resolve_form(self, rows: int, params: int, itemsize: int) -> str:
        """The form an iteration with a ``rows x params`` Jacobian uses
        (`lm_solve_form` with this solver's ``form`` and
        ``limit_bytes``).

        Args:
            rows: the number of residual rows.
            params: the number of trainable parameters.
            itemsize: bytes per float: 8 in float64, 4 in float32.

        Returns:
            The form's name.
        """
        return lm_solve_form(rows, params, self.form, self.limit_bytes, itemsize)

    def init(self, params, w, lam, batch):
        value, tv = self.obj_fn(params, w, lam, batch)
        dt = value.dtype
        grad = jax.tree_util.tree_map(jnp.zeros_like, params)
        base = GNState(value, grad, tv, jnp.asarray(jnp.nan, dt), jnp.asarray(2.0, dt))
        m = self.lsq.n_rows(batch)
        n = ravel_pytree(params)[0].shape[0]
        if self.resolve_form(m, n, dt.itemsize) != "pcg":  # as `step` resolves it
            return base
        s = min(m, n)  # the kernel side (M <= P) or the Gramian side
        return PCGState(*base, jnp.full((s, s), jnp.nan, dt), jnp.int32(self.cg_max), jnp.int32(0))

    def set_point(self, state, value, grad, tv):
        return state._replace(value=value, grad=grad, tv=tv)

    def stored(self, state, params):
        return state.value, state.grad, state.tv

    def step(self, params, state, w, lam, batch, value, grad, hyper=None):
        x, unravel = ravel_pytree(params)
        dt = x.dtype
        form = self.resolve_form(self.lsq.n_rows(batch), x.shape[0], dt.itemsize)
        if form == "matfree":
            r, J, g, scale = self._products(x, unravel, batch, w, lam)
        else:
            r, J = self.lsq.jacobian(params, batch, w, lam)
            g = jnp.dot(r, J, precision=HIGHEST)  # J^T r (half the objective's gradient)
            scale = jnp.sum(J * J) / J.shape[1]  # mean diagonal of J^T J
        lo, hi = self.mu_min * scale, self.mu_max * scale  # damping bounds relative to the scale
        mu0 = jnp.where(jnp.isnan(state.mu), self.mu_init * scale, state.mu)

        direction, L, made = self._solver(form, state, J, r, g, value, jnp.clip(mu0, lo, hi))

        def trial(mu):
            d, pred, its = direction(mu)
            p_new = unravel(x + d)
            new_value, tv = self.obj_fn(p_new, w, lam, batch)
            rho = (value - new_value) / pred
            ok = (
                jnp.all(jnp.isfinite(d))
                & jnp.isfinite(new_value)
                & (pred > 0)
                & (new_value < value)
            )
            return ok, rho, p_new, new_value, tv, its

        def cond(c):
            t, done = c[0], c[1]
            return (t < self.max_trials) & ~done

        def body(c):
            t, _, _, mu, nu, out, _ = c
            ok, rho, p_new, new_value, tv, its = trial(mu)
            out = jax.tree_util.tree_map(
                lambda a, b: jnp.where(ok, a, b), (p_new, new_value, tv), out
            )
            mu_ok = mu * jnp.maximum(1.0 / 3.0, 1.0 - (2.0 * rho - 1.0) ** 3)
            at_max = ~ok & (mu >= hi)
            mu_new = jnp.clip(jnp.where(ok, mu_ok, mu * nu), lo, hi)
            nu_new = jnp.where(ok, 2.0, 2.0 * nu)
            return t + 1, ok | at_max, at_max, mu_new.astype(dt), nu_new.astype(dt), out, its

        out0 = (params, value, state.tv)
        init = (
            jnp.int32(0),
            jnp.asarray(False),
            jnp.asarray(False),
            jnp.clip(mu0, lo, hi).astype(dt),
            state.nu,
            out0,
            jnp.int32(0),
        )
        trials, _, at_max, mu, nu, (p_new, new_value, tv), its = jax.lax.while_loop(
            cond, body, init
        )
        status = jnp.where(at_max, StageStatus.NO_DECREASE, 0).astype(jnp.int32)
        new_state = GNState(new_value, unravel(2.0 * g), tv, mu, nu)
        if form == "pcg":
            # a stale factor is no proof that no step decreases the objective: the next
            # iteration refactors at this one's first damping, and only a fresh factor's
            # failure stops the stage (module docstring, "pcg with a stale factor")
            retry = at_max & (made == 0)
            status = jnp.where(retry, 0, status).astype(jnp.int32)
            new_state = new_state._replace(
                mu=jnp.where(retry, jnp.clip(mu0, lo, hi).astype(dt), mu),
                nu=jnp.where(retry, state.nu, nu),
            )
            its = jnp.where(retry, self.cg_refactor + 1, its).astype(jnp.int32)
            new_state = PCGState(*new_state, L, its, state.factorizations + made)
        return StepResult(p_new, new_state, new_value, trials, status)

    def _products(self, x, unravel, batch, w, lam):
        """The matrix-free form's ``(r, (Jv, Jt), J^T r, |J|_F^2 / P)``: ``Jt(u) = J^T u`` by the
        residuals' vector-Jacobian product, ``Jv(v) = J v`` its linear transpose; the scale
        from `MATFREE_PROBES` fixed Rademacher probes."""
        r, vjp = jax.vjp(lambda y: self.lsq.residuals(unravel(y), batch, w, lam), x)

        def Jt(u):
            return vjp(u)[0]

        Jv_t = jax.linear_transpose(Jt, r)

        def Jv(v):
            return Jv_t(v)[0]

        probes = jax.random.rademacher(jax.random.key(0), (MATFREE_PROBES, x.shape[0]), x.dtype)
        scale = jnp.mean(jax.vmap(lambda v: jnp.sum(Jv(v) ** 2))(probes)) / x.shape[0]
        return r, (Jv, Jt), Jt(r), scale

    def _solver(self, form, state, J, r, g, value, mu0):
        """``(direction, L, made)``: ``direction(mu) -> (d, the model's predicted decrease, CG
        iterations)`` of the form's damped system; ``L`` and ``made`` the preconditioner and
        whether it was factored here (``pcg`` only, else ``None`` and 0). ``J`` is the matrix,
        or for ``matfree`` the pair of products ``(Jv, Jt)``."""

        def dot(a, b):
            return jnp.dot(a, b, precision=HIGHEST)

        if form == "matfree":
            Jv, Jt = J

            def direction(mu):
                a, its = _cg(
                    lambda u: Jv(Jt(u)) + mu * u, lambda v: v, r, self.matfree_max, self.cg_tol
                )
                d = -Jt(a)
                m = r + Jv(d)
                return d, value - dot(m, m), its

            return direction, None, 0
        if form == "svd":
            return svd_direction(J, r), None, 0
        if form == "pcg":
            kernel = J.shape[0] <= J.shape[1]  # else the Gramian side: (J^T J + mu I) d = -J^T r
            L, made = self._preconditioner(state, J, mu0, "kernel" if kernel else "gramian")

            def direction(mu):
                if kernel:
                    a, its = _pcg(J, r, mu, L, self.cg_max, self.cg_tol)
                    d = -dot(a, J)
                else:
                    d, its = _pcg(J.T, g, mu, L, self.cg_max, self.cg_tol)
                    d = -d
                m = r + dot(J, d)  # the solve is inexact: the model residual from J
                return d, value - dot(m, m), its

            return direction, L, made
        return cholesky_direction(J, r, g, value, form), None, 0

    def _preconditioner(self, state, J, mu, side="kernel"):
        """The Cholesky factor the CG solves are preconditioned with: the stored one, or, when
        there is none or the last iteration's CG needed more than ``cg_refactor`` iterations,
        a new factor of ``J J^T + mu I`` (``J^T J + mu I`` on the Gramian ``side``; ``mu``
        raised 100-fold until it factors).
        ``(L, 1 if made here else 0)``."""
        stale = (state.cg_iters > self.cg_refactor) | ~jnp.isfinite(state.L[0, 0])

        def fresh(_):
            A = _gram(J, side)
            eye = jnp.eye(A.shape[0], dtype=A.dtype)

            def chol(m):
                return jnp.linalg.cholesky(A + m * eye)

            def bad(L):
                return ~jnp.all(jnp.isfinite(jnp.diagonal(L)))

            _, L, _ = jax.lax.while_loop(
                lambda c: bad(c[1]) & (c[2] < 8),
                lambda c: (100.0 * c[0], chol(100.0 * c[0]), c[2] + 1),
                (mu, chol(mu), jnp.int32(0)),
            )
            return L

        L = jax.lax.cond(stale, fresh, lambda _: state.L, None)
        return L, stale.astype(jnp.int32)
