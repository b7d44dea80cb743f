"""The jittable training engine: pure chunk functions over an `State` pytree.

A chunk refreshes the per-point PDE weights at tau(``tau_k``), then runs up to ``n_steps``
steps of one stage in a ``lax.while_loop`` and returns the new state, the weights and a
`ChunkHistory`. Every stage runs the same loop
(`Engine.stage_steps`) over its solver ([`Stage`][cgmpinn_jax.stages.Stage]: Adam or a
second-stage member); the solver's ``terminate`` applies its stop rule and guards. The host
loop (`cgmpinn_jax.training._loop`) runs one chunk per refresh, as separately compiled
pieces (the refresh, a later stage's re-basing, the stage's loop) called one after the other.

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
  ReLoBRaLo). ``balancing.second_stage_apply="refresh"`` keeps ReLoBRaLo's state moving every
  iteration but gives the objective new lambdas only at the weight refreshes; not the
  default (the released code updates the lambdas every iteration); the "accurate" presets
  use it (measured less accurate in float32, more in float64: docs/decisions.md).
* Guards (each stage's solver applies them, `cgmpinn_jax.stages._stopping`): a
  non-finite loss, or a loss that grows beyond ``divergence_ratio`` x the best unweighted
  loss seen in the stage, stops the stage and restores the best parameters of
  that stage (by the unweighted loss PDE + IC + BC). The second stage also stops on its
  `StopRule` (GRAD_TOL, LOSS_TOL); a stage that runs its budget
  keeps its final parameters, as the reference does.
* Line search: at most ``lbfgs.max_linesearch`` = 10 evaluations (torch allows 25; why:
  docs/decisions.md).
"""

from __future__ import annotations

from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp

from .. import weighting as balancing_lib
from .. import weighting as weighting_lib
from ..config import Hyper
from ..stages import Adam
from ._objective import LeastSquares, Objective, make_residual_fn, make_term_fn
from ._records import ChunkHistory, StageStatus
from ._schedule import Setup
from ..stages import Guards, accepts

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
        setup.n_terms,
        alpha=cfg.balancing.alpha,
        temperature=cfg.balancing.temperature,
        rho=cfg.balancing.rho,
        history_size=max(2, setup.k_max),
        variant=cfg.balancing.variant,
    )


def _history(L: int, C: int, dtype) -> ChunkHistory:
    def z(*s):
        return jnp.zeros(s, dtype)

    return ChunkHistory(
        z(L),
        z(L, C),
        z(L, C),
        z(L, C),
        jnp.zeros(L, jnp.int32),
        jnp.int32(0),
        z(),
        z(),
        jnp.int32(0),
    )


def _record(h: ChunkHistory, i, value, tv, lam, evals) -> ChunkHistory:
    return h._replace(
        loss=h.loss.at[i].set(value),
        terms=h.terms.at[i].set(tv.terms),
        raw=h.raw.at[i].set(tv.raw),
        lambdas=h.lambdas.at[i].set(lam),
        evals=h.evals.at[i].set(evals),
    )


def restore_best(state: State) -> State:
    """The best parameters of the stage if it stopped on a guard (NONFINITE, DIVERGED) or on
    its time limit (TIME_LIMIT)."""
    bad = (
        (state.status == StageStatus.NONFINITE)
        | (state.status == StageStatus.DIVERGED)
        | (state.status == StageStatus.TIME_LIMIT)
    )
    params = jax.tree_util.tree_map(
        lambda b, p: jnp.where(bad & jnp.isfinite(state.best_raw), b, p),
        state.best_params,
        state.params,
    )
    return eqx.tree_at(lambda s: s.params, state, params)


def _runs_gauss_newton(setup: Setup) -> bool:
    """Whether a stage with steps is Gauss-Newton."""
    return any(name == "gauss_newton" and n > 0 for name, n in setup.stages)


def check_gn_memory(cfg, setup: Setup, lsq: LeastSquares, n_params: int, members: int = 1) -> None:
    """Refuse a Gauss-Newton stage whose iteration would hold more than its
    ``memory_limit_gb`` (before anything is compiled; sizes from shapes only)."""
    if not _runs_gauss_newton(setup):
        return
    gn = setup.spec("gauss_newton")
    batch = jax.eval_shape(setup.problem.sample, jax.random.key(0))
    rows = lsq.n_rows(batch)
    item = 4 if cfg.precision == "float32" else 8
    limit = gn.memory_limit_gb * 2**30
    form = gn.form_for(rows, n_params, item)  # as the solver resolves it
    need = members * gn.memory_bytes(rows, n_params, item)
    if need > limit:
        s = rows if form in ("kernel", "pcg") else n_params
        held = (
            "vectors only"
            if form == "matfree"
            else f"a {rows} x {n_params} Jacobian and {s} x {s} matrices"
        )
        raise ValueError(
            f"the Gauss-Newton stage on {setup.problem.name}: {rows} residual rows x "
            f"{n_params} parameters "
            f"({form} form: {held}"
            f"{f', {members} members' if members > 1 else ''}) need about {need / 2**30:.1f} GiB > "
            f"GaussNewton(memory_limit_gb={gn.memory_limit_gb}). Use fewer collocation points "
            "or a smaller network, "
            "raise GaussNewton(memory_limit_gb=...) if the machine has the memory, "
            "or use an LBFGS() stage"
        )


def gn_shape(
    setup: Setup, lsq: LeastSquares, batch, params, batched: bool = False
) -> tuple[int, int, str]:
    """``(residual rows, parameters, form)`` of a Gauss-Newton stage on ``batch`` (``batched``:
    a sweep's, with a leading member axis)."""
    if batched:
        batch, params = jax.tree_util.tree_map(lambda x: x[0], (batch, params))
    rows, n_params = lsq.n_rows(batch), sum(int(x.size) for x in jax.tree_util.tree_leaves(params))
    gn = setup.spec("gauss_newton")
    item = jax.tree_util.tree_leaves(params)[0].dtype.itemsize
    return rows, n_params, gn.form_for(rows, n_params, item)


def gn_form_note(setup: Setup, lsq: LeastSquares | None, batch, params) -> str | None:
    """The line that says which linear-solve form a Gauss-Newton stage uses (None without one)."""
    if lsq is None or not _runs_gauss_newton(setup):
        return None
    rows, n_params, form = gn_shape(setup, lsq, batch, params)
    how = "chosen" if setup.spec("gauss_newton").form == "auto" else "set"
    return (
        f"[{setup.problem.name}/{setup.method.name}] Gauss-Newton: {rows} rows x "
        f"{n_params} parameters, {form} form ({how})"
    )


class Engine:
    """The pure, jittable pieces of one `Setup`: objective, refresh and chunks."""

    def __init__(self, setup: Setup, static, n_params: int):
        self.setup, self.static = setup, static
        cfg = setup.config
        self.objective = Objective(make_term_fn(setup.problem, setup.method, static))
        eqs = len(setup.problem.equations)
        per_eq = (
            eqs > 1 and setup.method.weights_points and cfg.cgm.system_weighting == "per_equation"
        )
        self.weight_columns = (
            eqs if per_eq else 0
        )  # uniform weights: one column, whatever the option
        self.residual_fn = make_residual_fn(
            setup.problem, static, per_equation=self.weight_columns > 0
        )
        self.balancing = make_balancing(setup)
        init = setup.method.weighting(cfg, Hyper.from_config(cfg)).init
        self.weighting_init = (
            init
            if not self.weight_columns
            else (lambda n: jax.vmap(lambda _: init(n))(jnp.arange(self.weight_columns)))
        )
        self.lsq = None  # the objective's least-squares view (a Gauss-Newton stage only)
        if "gauss_newton" in setup.stage_names:
            self.lsq = LeastSquares(setup.problem, setup.method, static)
            check_gn_memory(cfg, setup, self.lsq, n_params)
        self.solvers = {
            st.name: st.solver(
                self.objective,
                n_steps=n,
                n_params=n_params,
                dtype=cfg.second_stage_dtype,
                divergence_ratio=cfg.divergence_ratio,
                lsq=self.lsq,
            )
            for st, n in setup.plan
        }
        later = [name for name in setup.stage_names if name != "adam"]
        self.second_name = later[0] if later else None  # the first stage after Adam
        adam = self.solvers.get(
            "adam"
        ) or Adam().solver(  # a run without Adam still starts from its state
            self.objective,
            n_steps=0,
            n_params=n_params,
            dtype=cfg.second_stage_dtype,
            divergence_ratio=cfg.divergence_ratio,
        )
        self.adam_init = adam.init

    def initial_w(self, lead: tuple, n: int, dtype) -> jax.Array:
        """Uniform PDE weights before the first refresh: ``lead + (N,)``, or ``lead + (N, E)``
        with one weight per point and equation (``system_weighting="per_equation"``)."""
        return jnp.ones(
            lead + (n,) + ((self.weight_columns,) if self.weight_columns else ()), dtype
        )

    def init_stage(self, stage: str):
        """``(params, w, lam, batch) -> optimizer state`` of ``stage``'s solver."""
        return self.solvers[stage].init

    def _chunk_history(self, w, tau, wstate) -> ChunkHistory:
        h = _history(self.setup.k_upd, self.setup.n_terms, w.dtype)
        spread = jnp.max(w) / jnp.maximum(jnp.min(w), 1e-30)
        status = jnp.max(
            jnp.asarray(getattr(wstate, "last_status", 0), jnp.int32)
        )  # the worst equation's
        return h._replace(tau=jnp.asarray(tau, w.dtype), spread=spread, weighting_status=status)

    @staticmethod
    def _running(n_steps):
        return lambda s: (s[0] < n_steps) & (s[1].status == StageStatus.COMPLETED)

    # --- a chunk: the refresh that opens it, then one stage's steps ------------------------
    # The host (`cgmpinn_jax.training._loop`) compiles and calls the pieces separately
    # (``begin_chunk``, ``rebase`` for a stage that stores its point, ``stage_steps``): the
    # refresh is then compiled once for every stage instead of inside each stage's program (a
    # shorter compilation, the same results bit for bit).
    def begin_chunk(self, params, wstate, batch, hyper: Hyper, tau_k):
        """The chunk's refresh: ``(weighting state, w, empty ChunkHistory)``. It takes the
        parameters and the weighting's state only, so that every stage shares one program."""
        tau = weighting_lib.tau(tau_k, self.setup.k_max, hyper.c_sat)
        r = self.residual_fn(params, batch)
        update = self.setup.method.weighting(self.setup.config, hyper).update
        if self.weight_columns:  # one mixture per equation: residual column e -> weight column e
            update = jax.vmap(update, in_axes=(1, None, 0), out_axes=(1, 0))
        w, wstate = update(r, tau, wstate)
        return wstate, w, self._chunk_history(w, tau, wstate)

    # --- one loop for every stage ------------------------------------------------------------
    def rebases_in(self, stage: str) -> bool:
        """Whether a chunk of ``stage`` re-bases the solver's stored point (`rebase`):
        a stage after Adam does, unless ReLoBRaLo changes its lambdas every iteration."""
        if stage == "adam":
            return False
        return not (
            self.setup.uses_relobralo(stage)
            and self.setup.config.balancing.second_stage_apply == "iteration"
        )

    def rebase(self, params, opt, w, lambdas, batch, stage: str):
        """The solver's state with its stored value and gradient recomputed under the
        chunk's refreshed weights ``w`` (once per chunk, so that no iteration pays an
        evaluation of its own)."""
        (value, tv), grad = self.objective.value_and_grad(params, w, lambdas, batch)
        return self.solvers[stage].set_point(opt, value, grad, tv)

    def _start_point(self, stage: str, c: State, w, batch, lam_chunk, i):
        """Value, gradient and terms at the iteration's start; the lambdas it uses, the next
        lambdas, the balancing state, and the evaluations spent here. A fresh point (Adam, or
        a stage whose lambdas change every iteration) is evaluated here; otherwise the
        solver's stored one is used."""
        solver, use_relo = self.solvers[stage], self.setup.uses_relobralo(stage)
        if solver.fresh or not self.rebases_in(stage):
            if use_relo:
                value, grad, tv, lam, bstate = self.objective.balanced_eval(
                    c.params, w, c.bstate, batch, self.balancing
                )
            else:
                (value, tv), grad = self.objective.value_and_grad(c.params, w, c.lambdas, batch)
                lam, bstate = c.lambdas, c.bstate
            opt = solver.set_point(c.opt, value, grad, tv)
            return opt, value, grad, tv, lam, lam, bstate, jnp.int32(1)
        value, grad, tv = solver.stored(c.opt, c.params)
        if tv is None:  # the member keeps value and gradient only: one forward pass for the terms
            tv = self.objective.term_fn(c.params, batch, w)
        n_ev = jnp.where(i == 0, 1, 0).astype(jnp.int32)  # the chunk's re-basing evaluation
        if use_relo:  # "refresh": state moves every iteration, lambdas per chunk
            lam_next, bstate = self.balancing.update(jax.lax.stop_gradient(tv.terms), c.bstate)
            lam_next = jax.lax.stop_gradient(lam_next)
        else:
            lam_next, bstate = c.lambdas, c.bstate
        return c.opt, value, grad, tv, lam_chunk, lam_next, bstate, n_ev

    def stage_steps(
        self, stage: str, state: State, batch, hyper: Hyper, w, h0: ChunkHistory, n_steps
    ):
        """Iterations of ``stage`` with the chunk's weights ``w`` (after `rebase` when the
        stage re-bases) from iteration ``h0.n_done`` of the chunk up to ``n_steps``:
        ``(state, w, ChunkHistory)``. A chunk can be run in pieces (pass the history a piece
        returned; the steps are the same bit for bit). Each iteration: the start point, the
        solver's ``step``, its ``terminate`` (stop rule and guards), and the new point kept
        unless a guard or the solver's own stop fired."""
        solver = self.solvers[stage]
        # the objective's lambdas in this chunk when the solver stores its point; a later
        # piece of the chunk (h0.n_done > 0) takes them from the history, where the first
        # iteration recorded them (state.lambdas has moved on with ReLoBRaLo's state since)
        lam_chunk = None if solver.fresh else jnp.where(h0.n_done > 0, h0.lambdas[0], state.lambdas)

        def body(s):
            i, c, h = s
            opt, value, grad, tv, lam, lam_next, bstate, n_ev = self._start_point(
                stage, c, w, batch, lam_chunk, i
            )
            step = solver.step(c.params, opt, w, lam, batch, value, grad, hyper)
            g = solver.terminate(
                Guards(c.best_params, c.best_raw, c.status, c.stall),
                c.params,
                jnp.sum(tv.raw),
                grad,
                value,
                step,
            )
            keep = accepts(g.status)
            params = jax.tree_util.tree_map(
                lambda new, old: jnp.where(keep, new, old), step.params, c.params
            )
            c = State(
                params=params,
                opt=step.state,
                wstate=c.wstate,
                bstate=bstate,
                lambdas=lam_next,
                best_params=g.best_params,
                best_raw=g.best_raw,
                status=g.status,
                stall=g.stall,
            )
            return i + 1, c, _record(h, i, value, tv, lam, n_ev + step.evals)

        n_done, state, h = jax.lax.while_loop(self._running(n_steps), body, (h0.n_done, state, h0))
        return state, w, h._replace(n_done=n_done)
