"""Where a Gauss-Newton iteration's time goes, against the floor of its largest product.

For each problem (PINN network and points, float64, one state after init): the pieces of one
Levenberg-Marquardt iteration of :mod:`cgmpinn_jax.solvers._gauss_newton`, each compiled on its own
and timed as the median of repeats:

* ``jacobian`` -- r and J (``M x P``, a ``vmap`` over points of one row's gradient);
* ``product`` -- ``J J^T`` as the member forms it (4 x 4 tiles, the lower 10 computed) and,
  beside it, the plain ``J @ J.T``;
* ``cholesky`` -- one factorization of ``J J^T + mu I`` (each trial of mu pays one);
* ``trial`` -- solve, ``d = -J^T a`` and one forward evaluation of the objective;
* ``iteration`` -- the member's whole ``step`` (with however many trials it took).

The **floor** is the plain product's FLOPs (``2 M^2 P``) divided by this machine's float64
matmul rate, measured in the same run on a square 2048 product; ``floor/2`` is the symmetric
product's FLOPs at that rate. Also the optimistix ``LevenbergMarquardt`` solver's step on the
same residuals when optimistix is installed (not a dependency).

    python -m benchmarks.gn_cost                         # poisson1d heat advection_diffusion poisson2d damped_wave
    python -m benchmarks.gn_cost --problems heat --repeats 5

Writes ``benchmarks/results/gn_cost.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from benchmarks import runcache

RESULTS = Path(__file__).parent / "results"
PROBLEMS = ("poisson1d", "heat", "advection_diffusion", "poisson2d", "damped_wave", "fisher_kpp")


def _median_time(fn, *args, repeats: int) -> float:
    import jax

    jax.block_until_ready(fn(*args))
    ts = []
    for _ in range(repeats):
        t = time.perf_counter()
        jax.block_until_ready(fn(*args))
        ts.append(time.perf_counter() - t)
    return float(np.median(ts))


def measure(problem: str, repeats: int, with_optimistix: bool) -> dict:
    import jax
    import jax.numpy as jnp
    from jax.flatten_util import ravel_pytree

    import cgmpinn_jax as cj
    from cgmpinn_jax.training import CompileCache
    from cgmpinn_jax.training._driver import init_state
    from cgmpinn_jax.solvers._gauss_newton import _gram
    from cgmpinn_jax.training._schedule import resolve

    with jax.enable_x64(True), jax.default_matmul_precision("highest"):
        setup = resolve(cj.get_problem(problem), cj.get_method("pinn"),
                        cj.TrainConfig(precision="float64", second_stage="gauss_newton"))
        static, eng = CompileCache().engine(setup)
        state, batch = init_state(setup, eng, jax.random.key(0))
        n = batch["pde"][0].shape[0]
        w, lam = jnp.ones(n), jnp.ones(setup.n_terms)
        lsq, gn = eng.lsq, eng.second
        jac = jax.jit(lsq.jacobian)
        r, J = jac(state.params, batch, w, lam)
        M, P = (int(s) for s in J.shape)
        out = {"problem": problem, "rows": M, "params": P}
        out["jacobian_s"] = _median_time(jac, state.params, batch, w, lam, repeats=repeats)
        out["product_s"] = _median_time(jax.jit(lambda J: _gram(J, "kernel")), J, repeats=repeats)
        out["product_plain_s"] = _median_time(jax.jit(lambda J: J @ J.T), J, repeats=repeats)
        K = _gram(J, "kernel")
        mu = 1e-6 * jnp.trace(K) / M
        chol = jax.jit(lambda K, mu: jnp.linalg.cholesky(K + mu * jnp.eye(K.shape[0], dtype=K.dtype)))
        out["cholesky_s"] = _median_time(chol, K, mu, repeats=repeats)
        L = chol(K, mu)
        x, unravel = ravel_pytree(state.params)

        def trial(L, r, J, x):
            a = jax.scipy.linalg.cho_solve((L, True), r)
            return eng.objective(unravel(x - a @ J), w, lam, batch)[0]

        out["trial_s"] = _median_time(jax.jit(trial), L, r, J, x, repeats=repeats)
        value, tv = eng.objective(state.params, w, lam, batch)
        gstate = gn.set_point(gn.init(state.params, w, lam, batch), value, state.params, tv)
        step = jax.jit(gn.step)
        params = state.params
        for _ in range(5):  # let the damping adapt from its first guess, then time one iteration
            res = step(params, gstate, w, lam, batch, gstate.value, gstate.grad)
            params, gstate = res.params, res.state
        res = step(params, gstate, w, lam, batch, gstate.value, gstate.grad)
        out["iteration_trials"] = int(res.evals)
        out["iteration_s"] = _median_time(step, params, gstate, w, lam, batch, gstate.value, gstate.grad,
                                          repeats=repeats)
        # the machine's float64 matmul rate, in the same run
        A = jax.random.normal(jax.random.key(1), (2048, 2048), jnp.float64)
        t_mm = _median_time(jax.jit(lambda A: A @ A), A, repeats=repeats)
        out["matmul_gflops"] = 2 * 2048**3 / t_mm / 1e9
        out["product_gflop"] = 2 * M * M * P / 1e9
        out["floor_s"] = out["product_gflop"] / out["matmul_gflops"]
        if with_optimistix:
            out.update(_optimistix(eng, state, batch, w, lam, repeats))
        return out


def _optimistix(eng, state, batch, w, lam, repeats) -> dict:
    """One step of optimistix.LevenbergMarquardt on the same residual vector (its default
    linear solver), or why it was not measured."""
    try:
        import optimistix as optx
    except ImportError:
        return {"optimistix": "not installed"}
    import equinox as eqx
    import jax

    lsq = eng.lsq

    def fn(params, args):  # optimistix's low-level API: (residuals, aux)
        return lsq.residuals(params, batch, w, lam), None

    solver = optx.LevenbergMarquardt(rtol=1e-12, atol=1e-12)
    y0 = state.params
    f_struct, aux_struct = jax.eval_shape(lambda: fn(y0, None))
    from cgmpinn_jax.nn import _taylor as taylor

    try:  # optimistix linearizes with forward mode: the Taylor fast path's custom_vjp has none
        with taylor.fast_path(False):
            opt_state = solver.init(fn, y0, None, {}, f_struct, aux_struct, frozenset())
            step = eqx.filter_jit(lambda y, s: solver.step(fn, y, None, {}, s, frozenset()))
            t = _median_time(step, y0, opt_state, repeats=max(1, repeats // 2))
    except Exception as e:  # noqa: BLE001 - report what stopped it
        return {"optimistix": f"failed: {type(e).__name__}: {str(e)[:200]}"}
    return {"optimistix_step_s": t, "optimistix": optx.__version__ if hasattr(optx, "__version__") else "installed"}


def render(rows: list[dict], machine: dict) -> str:
    lines = [
        "# Gauss-Newton iteration cost against the floor",
        "",
        "Command: `python -m benchmarks.gn_cost`; record `benchmarks/results/gn_cost.json`. PINN network and "
        "points of each problem at init, float64, XLA's default threads; medians of repeats. Floor = the plain "
        "`J J^T` FLOPs (2 M^2 P) at this machine's float64 matmul rate measured in the same run (2048^2 product); "
        "the member forms the symmetric product from 10 of 16 tiles.",
        "",
        f"Machine: {machine.get('description', machine)}",
        "",
        "| problem | M x P | GFLOP (J J^T) | rate GFLOP/s | floor s | product s (tiles / plain) | jacobian s | "
        "cholesky s | trial s | iteration s (trials) | iteration / floor | optimistix LM step s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        optx = r.get("optimistix_step_s")
        optx_txt = f"{optx:.2f}" if optx is not None else str(r.get("optimistix", "-"))
        lines.append(
            f"| {r['problem']} | {r['rows']} x {r['params']} | {r['product_gflop']:.1f} | {r['matmul_gflops']:.0f} | "
            f"{r['floor_s']:.3f} | {r['product_s']:.3f} / {r['product_plain_s']:.3f} | {r['jacobian_s']:.3f} | "
            f"{r['cholesky_s']:.3f} | {r['trial_s']:.4f} | {r['iteration_s']:.3f} ({r['iteration_trials']}) | "
            f"{r['iteration_s'] / r['floor_s']:.2f} | {optx_txt} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", nargs="+", default=list(PROBLEMS[:5]), choices=PROBLEMS)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--optimistix", action="store_true", help="also time optimistix.LevenbergMarquardt's step")
    args = ap.parse_args(argv)
    machine = runcache.machine_info()
    rows = []
    for p in args.problems:
        r = measure(p, args.repeats, args.optimistix)
        print(json.dumps(r), flush=True)
        rows.append(r)
    doc = {"study": "gn_cost", "machine": machine, "rows": runcache.to_json(rows)}
    (RESULTS / "gn_cost.json").write_text(json.dumps(doc, indent=1) + "\n")
    (RESULTS / "gn_cost.md").write_text(render(rows, machine))
    print(render(rows, machine))


if __name__ == "__main__":
    main()
