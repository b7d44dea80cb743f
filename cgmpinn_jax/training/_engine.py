"""The jittable training engine: pure chunk functions over an :class:`State` pytree.

A chunk refreshes the per-point PDE weights at tau(``tau_k``), then runs up to ``n_steps``
steps of one stage in a ``lax.while_loop`` and returns the new state, the weights and a
:class:`~cgmpinn_jax.training._records.ChunkHistory`. The host loop (:mod:`cgmpinn_jax.training._driver`) runs one
chunk per refresh, as separately compiled pieces (the refresh, the second stage's re-basing,
the stage's loop) that it calls one after the other.

Deliberate deviations from the reference, all listed in docs/reference-code.md §15:

* Within one second-stage iteration the objective is frozen: ReLoBRaLo is updated once per
  outer iteration (at its start, from the current term losses), never inside the line
  search. When the weights w or the lambdas change, the solver's stored value and gradient
  are recomputed under the new objective while its curvature memory is kept. Otherwise an
  iteration starts from the value and gradient its line search ended with (plus one forward
  pass for the per-term losses that the guard and the history record), so an iteration
  whose first trial step is accepted costs one loss+gradient evaluation. With ReLoBRaLo in
  the L-BFGS stage the lambdas change every iteration, which costs one more and makes the
  solver's curvature pairs mix two objectives (more evaluations per iteration than without
  ReLoBRaLo). ``relobralo_lbfgs_apply="refresh"`` keeps ReLoBRaLo's state moving every
  iteration but gives the objective new lambdas only at the weight refreshes; not the
  default: the released code updates the lambdas every iteration, and on the 1D Poisson
  headline in float32 this option needed fewer evaluations per iteration but ended less
  accurate (``benchmarks/results/headline.md``). In float64 it is the better one, more
  accurate at fewer evaluations per iteration (``benchmarks/results/precision.md``), so the
  "accurate" preset uses it.
* Guards: a non-finite loss, or a loss that grows beyond ``divergence_ratio`` x the best
  unweighted loss seen in the stage, stops the stage and restores the best parameters of
  that stage (by the unweighted loss PDE + IC + BC). The second stage also stops on its
  :class:`~cgmpinn_jax.config.StopRule` (GRAD_TOL, LOSS_TOL); a stage that runs its budget
  keeps its final parameters, as the reference does.
* Line search: at most ``lbfgs_max_linesearch`` = 10 evaluations (torch allows 25; in the
  float32 plateau every extra one is wasted).
"""

from __future__ import annotations

from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import optax

from ..weighting import _balancing as balancing_lib
from .. import weighting as weighting_lib
from ..config import Hyper, stop_rule
from ._objective import LeastSquares, Objective, make_residual_fn, make_term_fn
from ._records import ChunkHistory, StageStatus
from ._schedule import Setup
from ..solvers._second_stage import make_second_stage

__all__ = ["State", "Engine", "restore_best"]


class State(eqx.Module):
    """Everything a chunk updates (a pytree; build it with keywords)."""

    params: Any  # the array part of a Trainable
    opt: Any  # the current stage's optimizer state
    wstate: Any  # the weighting's state
    bstate: Any  # ReLoBRaLo's state
    lambdas: jax.Array  # (C,) the balancing weights in use
    best_params: Any  # best parameters of the stage (by the unweighted loss)
    best_raw: jax.Array  # () their unweighted loss
    status: jax.Array  # int32 StageStatus of the current stage
    stall: jax.Array  # int32 second-stage iterations since the best loss last improved by ftol


def make_balancing(setup: Setup) -> balancing_lib.Balancing:
    cfg = setup.config
    if setup.relobralo_stages == "none":
        return balancing_lib.no_balancing(setup.n_terms)
    return balancing_lib.relobralo(
        setup.n_terms, alpha=cfg.relobralo_alpha, temperature=cfg.relobralo_temperature, rho=cfg.relobralo_rho,
        history_size=max(2, setup.k_max), variant=cfg.relobralo_variant,
    )


def _tree_max_abs(t) -> jax.Array:
    return jnp.max(jnp.stack([jnp.max(jnp.abs(x)) for x in jax.tree_util.tree_leaves(t)]))


def _history(L: int, C: int, dtype) -> ChunkHistory:
    z = lambda *s: jnp.zeros(s, dtype)
    return ChunkHistory(z(L), z(L, C), z(L, C), z(L, C), jnp.zeros(L, jnp.int32), jnp.int32(0), z(), z(), jnp.int32(0))


def _record(h: ChunkHistory, i, value, tv, lam, evals) -> ChunkHistory:
    return h._replace(loss=h.loss.at[i].set(value), terms=h.terms.at[i].set(tv.terms), raw=h.raw.at[i].set(tv.raw),
                      lambdas=h.lambdas.at[i].set(lam), evals=h.evals.at[i].set(evals))


def restore_best(state: State) -> State:
    """The best parameters of the stage if it stopped on a guard (NONFINITE, DIVERGED)."""
    bad = (state.status == StageStatus.NONFINITE) | (state.status == StageStatus.DIVERGED)
    params = jax.tree_util.tree_map(lambda b, p: jnp.where(bad & jnp.isfinite(state.best_raw), b, p), state.best_params, state.params)
    return eqx.tree_at(lambda s: s.params, state, params)


def check_gn_memory(cfg, setup: Setup, lsq: LeastSquares, n_params: int, members: int = 1) -> None:
    """Refuse a Gauss-Newton stage whose iteration would hold more than
    ``cfg.gn_memory_limit_gb`` (before anything is compiled; sizes from shapes only)."""
    from ..solvers._gauss_newton import lm_solve_form, memory_bytes

    if setup.lbfgs_steps == 0:
        return
    batch = jax.eval_shape(setup.problem.sample, jax.random.key(0))
    rows = lsq.n_rows(batch)
    item = 4 if cfg.precision == "float32" else 8
    need = members * memory_bytes(rows, n_params, item, cfg.gn_form)
    if need > cfg.gn_memory_limit_gb * 2**30:
        form = lm_solve_form(rows, n_params, cfg.gn_form)
        s = rows if form == "kernel" else n_params
        raise ValueError(
            f"second_stage='gauss_newton' on {setup.problem.name}: {rows} residual rows x {n_params} parameters "
            f"({form} form: a {rows} x {n_params} Jacobian and {s} x {s} matrices"
            f"{f', {members} members' if members > 1 else ''}) need about {need / 2**30:.1f} GiB > "
            f"TrainConfig.gn_memory_limit_gb={cfg.gn_memory_limit_gb}. Use fewer collocation points or a smaller "
            "network, raise gn_memory_limit_gb if the machine has the memory, or use second_stage='optax'")


class Engine:
    """The pure, jittable pieces of one :class:`Setup`: objective, refresh and chunks."""

    def __init__(self, setup: Setup, static, n_params: int):
        self.setup, self.static = setup, static
        cfg = setup.config
        self.objective = Objective(make_term_fn(setup.problem, setup.method, static))
        self.residual_fn = make_residual_fn(setup.problem, static)
        self.balancing = make_balancing(setup)
        self.weighting_init = setup.method.weighting(cfg, Hyper.from_config(cfg)).init
        self.adam_init = optax.adam(cfg.adam_lr).init
        lsq = None
        if cfg.second_stage == "gauss_newton":
            lsq = LeastSquares(setup.problem, setup.method, static)
            check_gn_memory(cfg, setup, lsq, n_params)
        self.second = make_second_stage(cfg, self.objective, n_steps=setup.lbfgs_steps, n_params=n_params, lsq=lsq)
        self.stop = stop_rule(cfg)

    def init_second(self, params, w, lam, batch):
        return self.second.init(params, w, lam, batch)

    # --- refresh and guard -------------------------------------------------------------
    def refresh(self, state: State, batch, hyper: Hyper, tau_k):
        """New weights at tau(tau_k): ``(state with the weighting's state, w, tau)`` (tau in
        w's dtype); the refresh of :meth:`begin_chunk` on a whole state."""
        state, w, h0 = self._begin(state, batch, hyper, tau_k)
        return state, w, h0.tau

    def _chunk_history(self, w, tau, wstate) -> ChunkHistory:
        h = _history(self.setup.k_upd, self.setup.n_terms, w.dtype)
        spread = jnp.max(w) / jnp.maximum(jnp.min(w), 1e-30)
        status = jnp.asarray(getattr(wstate, "last_status", 0), jnp.int32)
        return h._replace(tau=jnp.asarray(tau, w.dtype), spread=spread, weighting_status=status)

    def _guard(self, state: State, raw_total, params_now):
        """Best params / status after a step whose unweighted loss is raw_total."""
        finite = jnp.isfinite(raw_total)
        better = finite & (raw_total < state.best_raw)
        best_params = jax.tree_util.tree_map(lambda b, p: jnp.where(better, p, b), state.best_params, params_now)
        best_raw = jnp.where(better, raw_total, state.best_raw)
        diverged = finite & (raw_total > self.setup.config.divergence_ratio * best_raw)
        status = jnp.where(~finite, StageStatus.NONFINITE, jnp.where(diverged, StageStatus.DIVERGED, state.status))
        return best_params, best_raw, status.astype(jnp.int32)

    @staticmethod
    def _running(n_steps):
        return lambda s: (s[0] < n_steps) & (s[1].status == StageStatus.COMPLETED)

    # --- a chunk: the refresh that opens it, then one stage's steps ------------------------
    # The host (:mod:`cgmpinn_jax.training._driver`) compiles and calls the pieces separately
    # (``begin_chunk``, ``rebase`` for the second stage, ``adam_steps`` / ``second_steps``):
    # the refresh is then compiled once for both stages instead of inside each stage's
    # program (a shorter compilation, the same results bit for bit).
    # ``adam_chunk`` / ``second_chunk`` are the same pieces composed into one program.
    def begin_chunk(self, params, wstate, batch, hyper: Hyper, tau_k):
        """The chunk's refresh: ``(weighting state, w, empty ChunkHistory)``. It takes the
        parameters and the weighting's state only, so that both stages share one program."""
        tau = weighting_lib.tau(tau_k, self.setup.k_max, hyper.c_sat)
        r = self.residual_fn(params, batch)
        w, wstate = self.setup.method.weighting(self.setup.config, hyper).update(r, tau, wstate)
        return wstate, w, self._chunk_history(w, tau, wstate)

    def _begin(self, state: State, batch, hyper: Hyper, tau_k):
        wstate, w, h0 = self.begin_chunk(state.params, state.wstate, batch, hyper, tau_k)
        return eqx.tree_at(lambda s: s.wstate, state, wstate), w, h0

    # --- Adam ------------------------------------------------------------------------
    def adam_chunk(self, state: State, batch, hyper: Hyper, tau_k, n_steps):
        """Refresh, then up to ``n_steps`` Adam steps: ``(state, w, ChunkHistory)``."""
        state, w, h0 = self._begin(state, batch, hyper, tau_k)
        return self.adam_steps(state, batch, hyper, w, h0, n_steps)

    def adam_steps(self, state: State, batch, hyper: Hyper, w, h0: ChunkHistory, n_steps):
        """Adam steps with the chunk's weights ``w`` from step ``h0.n_done`` of the chunk up to
        step ``n_steps``: ``(state, w, ChunkHistory)`` (a chunk can be run in pieces: pass the
        history a piece returned; the steps are the same bit for bit)."""
        use_relo = self.setup.uses_relobralo("adam")
        adam = optax.adam(hyper.adam_lr)

        def body(s):
            i, c, h = s
            if use_relo:
                value, grad, tv, lam, bstate = self.objective.balanced_eval(c.params, w, c.bstate, batch, self.balancing)
            else:
                (value, tv), grad = self.objective.value_and_grad(c.params, w, c.lambdas, batch)
                lam, bstate = c.lambdas, c.bstate
            best_params, best_raw, status = self._guard(c, jnp.sum(tv.raw), c.params)
            updates, opt = adam.update(grad, c.opt, c.params)
            params = optax.apply_updates(c.params, updates)
            ok = status == StageStatus.COMPLETED
            params = jax.tree_util.tree_map(lambda new, old: jnp.where(ok, new, old), params, c.params)
            c = State(params=params, opt=opt, wstate=c.wstate, bstate=bstate, lambdas=lam, best_params=best_params,
                      best_raw=best_raw, status=status, stall=c.stall)
            return i + 1, c, _record(h, i, value, tv, lam, 1)

        n_done, state, h = jax.lax.while_loop(self._running(n_steps), body, (h0.n_done, state, h0))
        return state, w, h._replace(n_done=n_done)

    # --- second stage ----------------------------------------------------------------
    def _start_point(self, c: State, w, batch, per_iter: bool, lam_chunk, i):
        """Value, gradient and terms at the iteration's start; the lambdas it uses, the next
        lambdas, the balancing state, and the evaluations spent here."""
        if per_iter:
            value, grad, tv, lam, bstate = self.objective.balanced_eval(c.params, w, c.bstate, batch, self.balancing)
            opt = self.second.set_point(c.opt, value, grad, tv)
            return opt, value, grad, tv, lam, lam, bstate, jnp.int32(1)
        value, grad, tv = self.second.stored(c.opt, c.params)
        if tv is None:  # the member keeps value and gradient only: one forward pass for the terms
            tv = self.objective.term_fn(c.params, batch, w)
        n_ev = jnp.where(i == 0, 1, 0).astype(jnp.int32)  # the chunk's re-basing evaluation
        if self.setup.uses_relobralo("lbfgs"):  # "refresh": state moves every iteration, lambdas per chunk
            lam_next, bstate = self.balancing.update(jax.lax.stop_gradient(tv.terms), c.bstate)
            lam_next = jax.lax.stop_gradient(lam_next)
        else:
            lam_next, bstate = c.lambdas, c.bstate
        return c.opt, value, grad, tv, lam_chunk, lam_next, bstate, n_ev

    def _stop_status(self, c: State, status, raw_total, grad, value, new_value):
        """The stage status after an iteration, and the new stall count."""
        gtol_hit = _tree_max_abs(grad) <= self.stop.gtol * jnp.maximum(1.0, jnp.abs(value))
        status = jnp.where((status == 0) & ~jnp.isfinite(new_value), StageStatus.NONFINITE, status)
        status = jnp.where((status == 0) & gtol_hit, StageStatus.GRAD_TOL, status)
        # stall: iterations since the best unweighted loss last improved by a relative ftol
        improved = raw_total < c.best_raw * (1.0 - self.stop.ftol)
        stall = jnp.where(improved, 0, c.stall + 1)
        status = jnp.where((status == 0) & (stall >= self.stop.patience), StageStatus.LOSS_TOL, status)
        return status.astype(jnp.int32), stall.astype(jnp.int32)

    @property
    def rebases(self) -> bool:
        """Whether a second-stage chunk re-bases the member's stored point (:meth:`rebase`):
        always, unless ReLoBRaLo changes the lambdas every iteration."""
        return not (self.setup.uses_relobralo("lbfgs") and self.setup.config.relobralo_lbfgs_apply == "iteration")

    def rebase(self, params, opt, w, lambdas, batch):
        """The member's state with its stored value and gradient recomputed under the
        chunk's refreshed weights ``w`` (once per chunk, so that no iteration pays an
        evaluation of its own)."""
        (value, tv), grad = self.objective.value_and_grad(params, w, lambdas, batch)
        return self.second.set_point(opt, value, grad, tv)

    def second_chunk(self, state: State, batch, hyper: Hyper, tau_k, n_steps):
        """Refresh, then up to ``n_steps`` second-stage iterations: ``(state, w, ChunkHistory)``."""
        state, w, h0 = self._begin(state, batch, hyper, tau_k)
        if self.rebases:
            state = eqx.tree_at(lambda s: s.opt, state, self.rebase(state.params, state.opt, w, state.lambdas, batch))
        return self.second_steps(state, batch, hyper, w, h0, n_steps)

    def second_steps(self, state: State, batch, hyper: Hyper, w, h0: ChunkHistory, n_steps):
        """Second-stage iterations with the chunk's weights ``w`` (after :meth:`rebase` unless
        the lambdas change every iteration) from iteration ``h0.n_done`` of the chunk up to
        ``n_steps``: ``(state, w, ChunkHistory)`` (in pieces like :meth:`adam_steps`)."""
        per_iter = not self.rebases
        # the objective's lambdas in this chunk (unless they change every iteration); a later
        # piece of the chunk (h0.n_done > 0) takes them from the history, where the first
        # iteration recorded them (state.lambdas has moved on with ReLoBRaLo's state since)
        lam_chunk = jnp.where(h0.n_done > 0, h0.lambdas[0], state.lambdas)

        def body(s):
            i, c, h = s
            opt, value, grad, tv, lam, lam_next, bstate, n_ev = self._start_point(c, w, batch, per_iter, lam_chunk, i)
            step = self.second.step(c.params, opt, w, lam, batch, value, grad)
            raw_total = jnp.sum(tv.raw)  # guards on the unweighted loss at the start point
            best_params, best_raw, status = self._guard(c, raw_total, c.params)
            status, stall = self._stop_status(c, status, raw_total, grad, value, step.value)
            if step.status is not None:  # the member's own stop (Gauss-Newton: NO_DECREASE)
                status = jnp.where((status == 0) & (step.status != 0), step.status, status).astype(jnp.int32)
            ok = (status == StageStatus.COMPLETED) | (status == StageStatus.LOSS_TOL)
            params = jax.tree_util.tree_map(lambda new, old: jnp.where(ok, new, old), step.params, c.params)
            c = State(params=params, opt=step.state, wstate=c.wstate, bstate=bstate, lambdas=lam_next,
                      best_params=best_params, best_raw=best_raw, status=status, stall=stall)
            return i + 1, c, _record(h, i, value, tv, lam, n_ev + step.evals)

        n_done, state, h = jax.lax.while_loop(self._running(n_steps), body, (h0.n_done, state, h0))
        return state, w, h._replace(n_done=n_done)
