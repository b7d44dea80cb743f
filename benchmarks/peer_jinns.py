"""Peer comparison: our Gauss-Newton (Levenberg-Marquardt) second stage against jinns'
natural gradient, ``jinns.optimizers.vanilla_ngd`` (jinns 1.10.2), from the same Adam start.

Per problem (``heat``, ``poisson2d``) and seed, PINN, float64, the problem's 50 x 4 tanh MLP:

1. Adam start: ``cj.train(problem, "pinn", TrainConfig.preset("accurate", second={"steps": 0}))``
   (5000 Adam steps; ``--quick``: 200). Its model (Adam's best parameters, which are also the
   second stage's start) and its training points ``res.batch`` are the start of both runs.
2. Ours: ``cj.train(problem, "pinn", TrainConfig.preset("accurate"), track_error_every=25)``,
   the same Adam (deterministic: the script checks the Adam-end error is the same in both
   runs), then 1500 Levenberg-Marquardt iterations (``--quick``: 5). Second-stage clock:
   the tracked seconds minus those at Adam's end, minus the compilations on that clock
   (``CompileCache.timings``: restore, second-stage init, the LM chunk).
3. jinns: the same loss in jinns' own terms, built on our points and our network: a
   ``jinns.nn.PINN`` wrapping the post-Adam equinox MLP (heat: ``input_transform`` swaps
   jinns' ``(t, x)`` to our ``(x, t)``), a ``PDENonStatio`` / ``PDEStatio`` dynamic loss
   (``u_t - laplacian_rev`` / ``laplacian_rev``, the source f = N[u*] from our problem),
   ``LossPDENonStatio`` / ``LossPDEStatio`` with all loss weights 1, a Dirichlet
   ``BoundaryConditionAbstract`` matching u* on every facet (heat: 2 facets, the same times
   as our two edge pieces; poisson2d: our 4 edges), heat's initial condition on our IC
   points, and a ``PDENonStatioBatch`` / ``PDEStatioBatch`` of our points (no jinns
   sampling). The script checks that jinns' loss at the start equals ours
   (mean r_pde^2 + sum over pieces of the piece MSE) to 1e-10 relative. One iteration is
   jinns' own step function (``jinns.solver._utils._loss_evaluate_and_gradient_step``, the one
   ``jinns.solve`` calls each iteration), jitted and compiled ahead of time, called in a host
   loop so the test error can be tracked against wall seconds (every ``--jinns-track-every``
   iterations); ``--check-solve`` (on in ``--quick``) checks that loop against ``jinns.solve``
   itself. Budget: our second stage's seconds (equal wall time), or ``--jinns-iters``.

vanilla_ngd as used: ``vanilla_ngd(gram_reg=1e-5)`` (jinns' default), with jinns' default
line search ``optax.scale_by_backtracking_linesearch(max_backtracking_steps=15)`` except
``verbose=False`` (the default prints on every failed line search; same algorithm).

Reported per problem: time (second-stage seconds, compile excluded, test-error evaluations
included for both) and iterations to the test relative L2 error 1e-5 and 1e-6, the error at
equal wall time (the last tracked error of each at T = the shorter of the two runs), and
the end of each run. Record ``benchmarks/results/peer_jinns.json`` (compact) and
``peer_jinns.md``; error traces in the ignored ``benchmarks/cache/peer_jinns/``.
``--quick`` runs go to ``benchmarks/cache/peer_jinns_quick.json`` / ``.md`` only.

Needs its own venv (jinns pins jax>=0.8.1, numpy>=2)::

    python3 -m venv .venv-peer && .venv-peer/bin/pip install -e '.[peer]'
    .venv-peer/bin/python -m benchmarks.peer_jinns --quick          # minutes: checks it works
    .venv-peer/bin/python -m benchmarks.peer_jinns                  # full: both problems, seed 0
    .venv-peer/bin/python -m benchmarks.peer_jinns --report-only

Timings are those of the machine and thread setting each record names.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from benchmarks import runcache

STUDY = "peer_jinns"
RESULTS = Path(__file__).parent / "results"
PROBLEMS = ("heat", "poisson2d")
THRESHOLDS = (1e-5, 1e-6)
QUICK = {"adam_steps": 200, "iterations": 5}
JINNS_VERSION = "1.10.2"
DEFAULT_GRAM_REG = 1e-5  # vanilla_ngd's default


# ------------------------------------------------------------------------------------------
# errors and traces


def _rel_fn(problem, static):
    """jitted ``params -> relative L2 error on the problem's 100 x 100 test grid`` (the
    formula of ``cj.train``'s error tracker)."""
    import equinox as eqx
    import jax
    import jax.numpy as jnp

    pts = jnp.asarray(problem.test_grid().points, jnp.float64)
    exact = problem.exact_on(pts)

    def rel(params):
        pred = jax.vmap(eqx.combine(params, static))(pts)
        return jnp.sqrt(jnp.mean((pred - exact) ** 2) / jnp.mean(exact**2))

    return jax.jit(rel)


def _our_terms(problem, model, batch) -> dict:
    """PINN's loss terms: mean(r_pde^2), and per constraint term the sum of its pieces' MSEs
    (the loss is their sum)."""
    import jax.numpy as jnp

    pts, src = batch["pde"]
    r = problem.pde_residuals(model, pts, src)
    cons = problem.constraint_residuals(model, batch)
    out = {"pde": float(jnp.mean(r**2))}
    out.update({t: float(sum(jnp.mean(c**2) for c in cons[t])) for t in problem.terms})
    return out


def _jinns_terms(loss, params, jb) -> dict:
    """jinns' loss terms, named as ours (dyn_loss -> pde, initial_condition -> ic, boundary_loss -> bc)."""
    import jax

    _, terms = jax.jit(lambda p, b: loss.evaluate(p, b))(params, jb)
    out = {"pde": float(sum(jax.tree_util.tree_leaves(terms.dyn_loss))), "bc": float(terms.boundary_loss)}
    if getattr(terms, "initial_condition", None) is not None:
        out["ic"] = float(terms.initial_condition)
    return out


def first_reach(its, secs, errs, thr):
    idx = np.nonzero(np.asarray(errs) <= thr)[0]
    if idx.size == 0:
        return {"iterations": None, "seconds": None}
    i = int(idx[0])
    return {"iterations": int(its[i]), "seconds": float(secs[i])}


def error_at(secs, errs, t) -> float | None:
    """The last tracked error at or before ``t`` seconds."""
    idx = np.nonzero(np.asarray(secs) <= t + 1e-9)[0]
    return None if idx.size == 0 else float(np.asarray(errs)[idx[-1]])


def _summary(trace: dict) -> dict:
    its, secs, errs = trace["iterations"], trace["seconds"], trace["rel_e2"]
    return {
        "iterations": int(its[-1]), "seconds": float(secs[-1]), "rel_e2_start": float(errs[0]),
        "rel_e2_end": float(errs[-1]), "rel_e2_best": float(np.min(errs)),
        "reach": {f"{thr:.0e}": first_reach(its, secs, errs, thr) for thr in THRESHOLDS},
        "seconds_per_iteration": float(secs[-1] / its[-1]) if its[-1] else None,
    }


# ------------------------------------------------------------------------------------------
# our side


def adam_start(problem: str, seed: int, adam_steps, net: dict):
    """The Adam stage alone (its error tracked at chunk ends: Adam's end is among them)."""
    import cgmpinn_jax as cj

    over = {"second": {"steps": 0}, **net, **({} if adam_steps is None else {"adam": {"steps": adam_steps}})}
    t0 = time.perf_counter()
    res = cj.train(problem, "pinn", cj.TrainConfig.preset("accurate", **over), key=seed, quiet=True,
                   track_error_every=0)
    return res, time.perf_counter() - t0


def _adam_end_error(h, adam_steps: int) -> float:
    i = int(np.nonzero(h.error_k <= adam_steps)[0][-1])  # k counts steps from 1
    return float(h.error_rel_e2[i])


def run_ours(problem: str, seed: int, adam_steps, iterations, net: dict, track_every: int, start_err: float) -> dict:
    """``cj.train`` with the accurate preset; the second stage's trace on its own clock."""
    import cgmpinn_jax as cj

    over = {**net, **({} if adam_steps is None else {"adam": {"steps": adam_steps}}),
            **({} if iterations is None else {"second": {"steps": iterations}})}
    cfg = cj.TrainConfig.preset("accurate", **over)
    cache = cj.CompileCache()  # private: its timings are this run's compilations
    t0 = time.perf_counter()
    res = cj.train(problem, "pinn", cfg, key=seed, quiet=True, track_error_every=track_every, cache=cache)
    wall = time.perf_counter() - t0
    h = res.history
    A = res.adam_steps
    i0 = int(np.nonzero(h.error_k <= A)[0][-1])  # Adam's last step (k counts steps from 1)
    names = [n for n, _, _ in cache.timings]
    first = names.index("restore_adam")
    # compilations between Adam's last tracked point and the second stage's end
    gn_compile = sum(a + b for n, a, b in cache.timings[first:] if n != "restore_lbfgs")
    ks, secs, errs = h.error_k[i0 + 1:], h.error_seconds[i0 + 1:], h.error_rel_e2[i0 + 1:]
    t_start = float(h.error_seconds[i0])
    trace = {
        # iteration 0: the stage's start, Adam's best parameters (= the jinns run's start)
        "iterations": [0] + [int(k - A) for k in ks],
        "seconds": [0.0] + [float(s - t_start - gn_compile) for s in secs],
        "rel_e2": [start_err] + [float(e) for e in errs],
    }
    return {
        "config": cfg.to_dict(), "adam_steps": A, "lbfgs_steps": res.lbfgs_steps,
        "rel_e2_adam_end_last_iterate": float(h.error_rel_e2[i0]),
        "status": res.statuses["lbfgs"].name, "rel_e2_final_model": float(res.metrics.rel_e2),
        "trials_per_iteration": res.evals_per_lbfgs_iteration, "compile_seconds": gn_compile,
        "wall_seconds": wall, "loss_end": float(h.loss[-1]) if h.loss.size else None,
        **_summary(trace), "trace": trace,
    }


# ------------------------------------------------------------------------------------------
# jinns side


def jinns_problem(problem, model, batch):
    """``(loss, params, jinns batch)``: our problem, network and points in jinns' terms."""
    import equinox as eqx
    import jax
    import jax.numpy as jnp
    import jinns
    from jinns.data._Batchs import PDENonStatioBatch, PDEStatioBatch
    from jinns.loss import BoundaryConditionAbstract, laplacian_rev

    name = problem.name
    if name not in PROBLEMS:
        raise ValueError(f"no jinns formulation for {name!r}")
    nonstatio = name == "heat"
    # jinns orders a non-stationary input as (t, x); our heat network takes (x, t)
    to_ours = (lambda z: z[::-1]) if nonstatio else (lambda z: z)

    class Exact(BoundaryConditionAbstract):
        """u = u* on every facet (the last axis of a jinns border point)."""

        def equation_u(self, inputs, u, params):
            return tuple(u(inputs[:, f], params) for f in range(inputs.shape[-1]))

        def equation_f(self, inputs, params, gridify=False):
            return tuple(problem.exact(to_ours(inputs[:, f]))[None] for f in range(inputs.shape[-1]))

    if nonstatio:
        class HeatEq(jinns.loss.PDENonStatio):
            def equation(self, t_x, u, params):
                u_t = jax.grad(lambda q: u(q, params)[0])(t_x)[0]
                u_xx = laplacian_rev(t_x, u, params, eq_type="PDENonStatio")  # x only
                kappa = problem.kappa
                return jnp.atleast_1d(u_t - kappa * u_xx - problem.source(to_ours(t_x)))

        pinn = jinns.nn.PINN(eq_type="PDENonStatio", eqx_network=model, input_transform=lambda tx, p: tx[::-1])
        params = jinns.parameters.Params(nn_params=pinn.init_params, eq_params={})
        pts, _ = batch["pde"]
        (ic_pts, _), = batch["ic"]
        (b0, _), (b1, _) = batch["bc"]
        jb = PDENonStatioBatch(domain_batch=pts[:, ::-1], border_batch=jnp.stack([b0[:, ::-1], b1[:, ::-1]], -1),
                               initial_batch=ic_pts[:, :1])
        loss = jinns.loss.LossPDENonStatio(
            u=pinn, dynamic_loss=HeatEq(), boundary_condition=Exact(),
            initial_condition_fun=lambda x: problem.exact(jnp.concatenate([x, jnp.zeros((1,), x.dtype)]))[None],
            t0=0.0, params=params,
            loss_weights=jinns.loss.LossWeightsPDENonStatio(dyn_loss=1.0, boundary_loss=1.0, initial_condition=1.0))
    else:
        class PoissonEq(jinns.loss.PDEStatio):
            def equation(self, x, u, params):
                return jnp.atleast_1d(laplacian_rev(x, u, params, eq_type="PDEStatio") - problem.source(x))

        pinn = jinns.nn.PINN(eq_type="PDEStatio", eqx_network=model)
        params = jinns.parameters.Params(nn_params=pinn.init_params, eq_params={})
        pts, _ = batch["pde"]
        jb = PDEStatioBatch(domain_batch=pts, border_batch=jnp.stack([p for p, _ in batch["bc"]], -1))
        loss = jinns.loss.LossPDEStatio(
            u=pinn, dynamic_loss=PoissonEq(), boundary_condition=Exact(), params=params,
            loss_weights=jinns.loss.LossWeightsPDEStatio(dyn_loss=1.0, boundary_loss=1.0))
    assert pinn.static is not None
    assert bool(eqx.tree_equal(eqx.combine(params.nn_params, pinn.static), model))  # the same network
    return loss, params, jb, pinn.static


def _ngd(gram_reg: float):
    import optax
    from jinns.optimizers import vanilla_ngd

    return vanilla_ngd(sgd_learning_rate=1.0, gram_reg=gram_reg,
                       linesearch=optax.scale_by_backtracking_linesearch(max_backtracking_steps=15, verbose=False))


def _step_fn(loss, opt):
    """One jinns NGD iteration (the step ``jinns.solve`` runs each iteration); the batch is an
    argument, as in ``jinns.solve`` (not a compile-time constant)."""
    import jax.numpy as jnp
    from jinns.solver._utils import _loss_evaluate_and_gradient_step

    def step(params, last_ok, state, jb):
        value, params, last_ok, state, _, _ = _loss_evaluate_and_gradient_step(
            i=0, batch=jb, loss=loss, params=params, last_non_nan_params=last_ok, state=state, optimizer=opt,
            loss_container=None, key=None, params_mask=None, state_field_for_acceleration=None)
        ls = state.tx_state[1]  # (sgd state, backtracking line search state)
        if not hasattr(ls, "info"):  # no line search
            nan = jnp.full((), jnp.nan, value.dtype)
            return value, params, last_ok, state, (jnp.ones_like(value), jnp.zeros((), jnp.int32), nan)
        return value, params, last_ok, state, (ls.learning_rate, ls.info.num_linesearch_steps, ls.info.decrease_error)

    return step


def run_jinns(problem, model, batch, *, budget_s, max_iters, gram_reg, track_every, check_solve) -> dict:
    import jax
    import jax.numpy as jnp

    with jax.default_matmul_precision("highest"):
        loss, params, jb, static = jinns_problem(problem, model, batch)
        jinns_loss0 = float(jax.jit(lambda p: loss.evaluate(p, jb)[0])(params))
        terms_ours, terms_jinns = _our_terms(problem, model, batch), _jinns_terms(loss, params, jb)
        ours0 = sum(terms_ours.values())
        if not abs(jinns_loss0 - ours0) <= 1e-10 * abs(ours0) or sorted(terms_ours) != sorted(terms_jinns) or any(
                abs(terms_ours[k] - terms_jinns[k]) > 1e-10 * abs(terms_ours[k]) for k in terms_ours):
            raise AssertionError(f"jinns' loss {jinns_loss0!r} {terms_jinns} differs from ours {ours0!r} {terms_ours}")
        rel = _rel_fn(problem, static)
        opt = _ngd(gram_reg)
        state = opt.init(params)
        t0 = time.perf_counter()
        step = jax.jit(_step_fn(loss, opt)).lower(params, params, state, jb).compile()
        compile_s = time.perf_counter() - t0
        dtypes = sorted({str(x.dtype) for x in jax.tree_util.tree_leaves((params, state)) if hasattr(x, "dtype")
                         and jnp.issubdtype(x.dtype, jnp.floating)})
        rows = [(0, 0.0, float(rel(params.nn_params)), jinns_loss0)]
        ls_rows = []
        params_start, last_ok, first_params = params, params, None
        n, t0 = 0, time.perf_counter()
        while n < max_iters and (budget_s is None or time.perf_counter() - t0 < budget_s):
            value, params, last_ok, state, info = step(params, last_ok, state, jb)
            n += 1
            lr, n_ls, dec = (float(v) for v in info)  # host sync: the iteration is done
            ls_rows.append((lr, int(n_ls), dec))
            if n == 1:
                first_params = last_ok
            # jinns.solve returns the last parameters without a NaN: those are evaluated
            if n % track_every == 0 or n == max_iters:
                rows.append((n, time.perf_counter() - t0, float(rel(last_ok.nn_params)), float(value)))
        if rows[-1][0] != n:
            rows.append((n, time.perf_counter() - t0, float(rel(last_ok.nn_params)), float("nan")))
        loss_end = float(jax.jit(lambda p: loss.evaluate(p, jb)[0])(last_ok))
        solve_check = None
        if check_solve and first_params is not None:
            solve_check = _check_against_solve(loss, jb, gram_reg, params_start, first_params, n_iter=1)
    trace = {"iterations": [r[0] for r in rows], "seconds": [r[1] for r in rows], "rel_e2": [r[2] for r in rows],
             "loss_before_step": [r[3] for r in rows]}
    lrs = np.array([r[0] for r in ls_rows]) if ls_rows else np.zeros(0)
    failed = np.array([r[2] > 0 for r in ls_rows], bool)
    return {
        "jinns": JINNS_VERSION, "optimizer": f"vanilla_ngd(sgd_learning_rate=1.0, gram_reg={gram_reg:g}, "
        "linesearch=optax.scale_by_backtracking_linesearch(max_backtracking_steps=15, verbose=False))",
        "gram_reg": gram_reg, "loss_start_jinns": jinns_loss0, "loss_start_ours": ours0, "loss_end": loss_end,
        "terms_start_jinns": terms_jinns, "terms_start_ours": terms_ours,
        "float_dtypes": dtypes, "compile_seconds": compile_s, "budget_seconds": budget_s,
        "linesearch": {"failed": int(failed.sum()), "of": int(failed.size),
                       "median_step": float(np.median(lrs)) if lrs.size else None,
                       "median_evaluations": float(np.median([r[1] for r in ls_rows])) if ls_rows else None},
        "solve_check": solve_check, **_summary(trace), "trace": trace,
        "linesearch_trace": {"step": lrs.tolist(), "evaluations": [r[1] for r in ls_rows],
                             "decrease_error": [r[2] for r in ls_rows]},
    }


def _check_against_solve(loss, jb, gram_reg, params0, loop_params, n_iter: int) -> dict:
    """``jinns.solve`` for ``n_iter`` iterations on a fixed-batch data generator, against our
    loop's parameters after as many iterations."""
    import jax
    import jax.flatten_util
    import jax.numpy as jnp
    import jinns
    from jinns.data._AbstractDataGenerator import AbstractDataGenerator

    class FixedBatch(AbstractDataGenerator):
        batch: object
        rar_parameters: object = None

        def get_batch(self):
            return self, self.batch

    out = jinns.solve(n_iter=n_iter, init_params=params0, data=FixedBatch(jb), loss=loss, optimizer=_ngd(gram_reg),
                      verbose=False)
    a = jax.flatten_util.ravel_pytree(out[0].nn_params)[0]
    b = jax.flatten_util.ravel_pytree(loop_params.nn_params)[0]
    diff = float(jnp.max(jnp.abs(a - b)) / jnp.max(jnp.abs(b)))
    ev = jax.jit(lambda p: loss.evaluate(p, jb)[0])
    la, lb = float(ev(out[0])), float(ev(loop_params))
    # not bit for bit: the two programs round differently, and the solve with G + gram_reg I
    # (condition number up to ~|G| / gram_reg) magnifies that (measured: ~1e-9 after one step)
    return {"iterations": n_iter, "max_rel_param_difference": diff, "loss_solve": la, "loss_loop": lb,
            "ok": diff <= 1e-6 and abs(la - lb) <= 1e-6 * abs(lb)}


# ------------------------------------------------------------------------------------------
# one comparison


def run_key(problem, seed, *, quick, gram_reg, width, depth, jinns_iters, gn_iterations=None) -> str:
    key = f"{problem}__seed{seed}" + ("" if gn_iterations is None else f"__gn{gn_iterations}")
    if gram_reg != DEFAULT_GRAM_REG:
        key += f"__reg{gram_reg:g}"
    if width is not None or depth is not None:
        key += f"__net{width}x{depth}"
    if jinns_iters is not None:
        key += f"__jinns{jinns_iters}it"
    return key + ("__quick" if quick else "")


def compare(problem_name: str, seed: int, *, quick: bool, gram_reg: float, width, depth, track_every: int,
            jinns_track_every: int, jinns_iters, check_solve: bool, gn_iterations=None) -> dict:
    import jax

    jax.config.update("jax_enable_x64", True)  # jinns follows the global flag; cj.train scopes its own
    import cgmpinn_jax as cj

    problem = cj.get_problem(problem_name)
    net = {k: v for k, v in (("width", width), ("depth", depth)) if v is not None}
    adam_steps = QUICK["adam_steps"] if quick else None
    iters = QUICK["iterations"] if quick else gn_iterations
    print(f"[peer_jinns] {problem_name} seed {seed}: Adam start", flush=True)
    res0, adam_wall = adam_start(problem_name, seed, adam_steps, net)
    start_err = float(res0.metrics.rel_e2)
    adam_end_0 = _adam_end_error(res0.history, res0.adam_steps)
    print(f"[peer_jinns]   Adam: {adam_wall:.0f} s, rel e2 {start_err:.3e}; ours (Gauss-Newton)", flush=True)
    ours = run_ours(problem_name, seed, adam_steps, iters, net, track_every, start_err)
    ours["rel_e2_adam_end_adam_only_run"] = adam_end_0
    if not abs(ours["rel_e2_adam_end_last_iterate"] - adam_end_0) <= 1e-12 * adam_end_0:
        raise AssertionError(f"the two Adam stages differ: {ours['rel_e2_adam_end_last_iterate']!r} vs {adam_end_0!r}")
    print(f"[peer_jinns]   ours: {ours['iterations']} its in {ours['seconds']:.1f} s (+{ours['compile_seconds']:.1f} s "
          f"compile), rel e2 {ours['rel_e2_end']:.3e}; jinns vanilla_ngd", flush=True)
    if quick:
        budget, max_iters = None, QUICK["iterations"]
    elif jinns_iters is not None:
        budget, max_iters = None, jinns_iters
    else:
        budget, max_iters = ours["seconds"], 10**9
    jn = run_jinns(problem, res0.model, res0.batch, budget_s=budget, max_iters=max_iters, gram_reg=gram_reg,
                   track_every=jinns_track_every, check_solve=check_solve)
    print(f"[peer_jinns]   jinns: {jn['iterations']} its in {jn['seconds']:.1f} s (+{jn['compile_seconds']:.1f} s "
          f"compile), rel e2 {jn['rel_e2_end']:.3e}, line search failed {jn['linesearch']['failed']}/"
          f"{jn['linesearch']['of']}" + ("" if jn["solve_check"] is None else
                                          f", jinns.solve check {jn['solve_check']}"), flush=True)
    t_eq = min(ours["seconds"], jn["seconds"])
    import equinox as eqx

    n_params = int(sum(x.size for x in jax.tree_util.tree_leaves(eqx.filter(res0.model, eqx.is_inexact_array))))
    rows = res0.batch["pde"][0].shape[0] + sum(p.shape[0] for t in problem.terms for p, _ in res0.batch[t])
    return {
        "problem": problem_name, "seed": seed, "method": "pinn", "quick": quick, "precision": "float64",
        "params": n_params, "rows": int(rows), "adam_steps": res0.adam_steps, "adam_wall_seconds": adam_wall,
        "rel_e2_start": start_err, "threads": runcache.threads_label(), "equal_time_seconds": t_eq,
        "at_equal_time": {"ours": error_at(ours["trace"]["seconds"], ours["trace"]["rel_e2"], t_eq),
                          "jinns": error_at(jn["trace"]["seconds"], jn["trace"]["rel_e2"], t_eq)},
        "ours": ours, "jinns": jn,
    }


def compact(full: dict) -> dict:
    out = dict(full)
    for side in ("ours", "jinns"):
        if isinstance(out.get(side), dict):
            out[side] = {k: v for k, v in out[side].items() if k not in ("trace", "linesearch_trace", "config")}
    return out


# ------------------------------------------------------------------------------------------
# report


def _reach(side: dict, thr) -> str:
    r = side["reach"][f"{thr:.0e}"]
    return "never" if r["iterations"] is None else f"{r['seconds']:.0f} s / {r['iterations']} it"


def _machine_text(m) -> str:
    if not isinstance(m, dict):
        return str(m)
    return (f"{m.get('processor', '?')}, {m.get('cpu_count', '?')} cores ({m.get('cpus_available', '?')} available), "
            f"{m.get('backend', '?')}, jax {m.get('jax', '?')}")


def render(recs: dict, title_extra: str = "") -> str:
    machines = sorted({_machine_text(r.get("machine")) for r in recs.values()})
    lines = [
        "# Peer comparison: our Gauss-Newton against jinns' natural gradient (vanilla_ngd)" + title_extra,
        "",
        "Written by `benchmarks/peer_jinns.py` (run with `.venv-peer/bin/python`) from its record. PINN, float64, the "
        "same post-Adam network (Adam's best parameters after `TrainConfig.preset(\"accurate\")`'s Adam stage), the "
        "same training points and the same loss (mean r_pde^2 + the sum of the constraint pieces' MSEs, checked equal "
        "at the start). Ours: the accurate preset's Levenberg-Marquardt stage (kernel form `J J^T`, Cholesky, adaptive "
        "damping). jinns " + JINNS_VERSION + ": `vanilla_ngd` (Gramian `J^T W J` (P x P) + `gram_reg` I, general LU "
        "solve, backtracking Armijo line search from step min(1.5 x last, 1), 16 trial steps at most) on the same "
        "problem written with jinns' loss classes, run for our second stage's wall seconds. Seconds: second-stage "
        "clock, compile excluded (listed), test-error evaluations included; `it` = second-stage iterations. Error: "
        "relative L2 on the 100 x 100 test grid, tracked every 25 of our iterations and every jinns iteration "
        "(default).",
        "",
        "Machine(s): " + "; ".join(machines),
        "",
        "| problem | seed | P x rows | optimizer | its | seconds | s/it | compile s | start | to 1e-5 | to 1e-6 | "
        "at equal time | end | note |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for key in sorted(recs, key=lambda k: (recs[k]["problem"], recs[k]["seed"], k)):
        r = recs[key]
        for side in ("ours", "jinns"):
            s = r[side]
            if side == "ours":
                name = "ours: Gauss-Newton (LM)"
                note = f"stop {s['status']}, {s['trials_per_iteration']:.2f} trials/it"
            else:
                name = f"jinns vanilla_ngd (reg {s['gram_reg']:g})"
                ls = s["linesearch"]
                note = (f"line search failed {ls['failed']}/{ls['of']}, median step {ls['median_step']:.3g}; "
                        f"float dtypes {','.join(s['float_dtypes'])}")
            spi = "-" if s["seconds_per_iteration"] is None else f"{s['seconds_per_iteration']:.2f}"
            eq = r["at_equal_time"][side]
            lines.append(
                f"| {r['problem']} | {r['seed']} | {r['params']} x {r['rows']} | {name} | {s['iterations']} | "
                f"{s['seconds']:.0f} | {spi} | {s['compile_seconds']:.1f} | {s['rel_e2_start']:.2e} | "
                f"{_reach(s, 1e-5)} | {_reach(s, 1e-6)} | {'-' if eq is None else f'{eq:.2e}'} "
                f"(T={r['equal_time_seconds']:.0f} s) | {s['rel_e2_end']:.2e} | {note} |")
    lines += ["", "Record keys: " + ", ".join(f"`{k}`" for k in sorted(recs)) + ". " + "Thread setting: "
              + "; ".join(sorted({r.get("threads", "?") for r in recs.values()})) + "."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", nargs="+", default=list(PROBLEMS), choices=PROBLEMS)
    ap.add_argument("--seeds", nargs="+", type=int, default=[0])
    ap.add_argument("--quick", action="store_true",
                    help=f"{QUICK['adam_steps']} Adam steps, {QUICK['iterations']} iterations each (a smoke test)")
    ap.add_argument("--gram-reg", type=float, default=DEFAULT_GRAM_REG, help="vanilla_ngd's gram_reg (jinns' default)")
    ap.add_argument("--jinns-iters", type=int, default=None,
                    help="a fixed jinns iteration count instead of the equal-wall-time budget")
    ap.add_argument("--gn-iterations", type=int, default=None,
                    help="our Gauss-Newton iterations (default: the accurate preset's 1500); jinns gets the same wall time")
    ap.add_argument("--track-every", type=int, default=25, help="our test-error tracking, in iterations")
    ap.add_argument("--jinns-track-every", type=int, default=1, help="jinns' test-error tracking, in iterations")
    ap.add_argument("--width", type=int, default=None, help="network width (default: the problem's; smoke tests)")
    ap.add_argument("--depth", type=int, default=None, help="network depth (default: the problem's; smoke tests)")
    ap.add_argument("--check-solve", action="store_true", help="check the jinns loop against jinns.solve (on in --quick)")
    ap.add_argument("--force", action="store_true", help="rerun runs the record already holds")
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args(argv)
    if args.quick:
        study = runcache.Study(STUDY + "_quick", results_dir=runcache.CACHE)  # never the committed record
        md = runcache.CACHE / f"{STUDY}_quick.md"
    else:
        study = runcache.Study(STUDY)
        md = RESULTS / f"{STUDY}.md"
    if not args.report_only:
        for p in args.problems:
            for s in args.seeds:
                key = run_key(p, s, quick=args.quick, gram_reg=args.gram_reg, width=args.width, depth=args.depth,
                              jinns_iters=args.jinns_iters, gn_iterations=args.gn_iterations)
                if study.is_done(key) and not args.force:
                    print(f"[peer_jinns] {key}: in the record (--force reruns it)")
                    continue
                full = compare(p, s, quick=args.quick, gram_reg=args.gram_reg, width=args.width, depth=args.depth,
                               track_every=1 if args.quick else args.track_every,
                               jinns_track_every=args.jinns_track_every, jinns_iters=args.jinns_iters,
                               check_solve=args.check_solve or args.quick, gn_iterations=args.gn_iterations)
                study.save(key, full, compact=compact)
    recs = study.load()
    if recs:
        text = render(recs, " (--quick smoke test)" if args.quick else "")
        md.write_text(text)
        print(text)


if __name__ == "__main__":
    main()
