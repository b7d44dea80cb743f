"""What the observations can support (issue 23): the best estimate of each inverse
benchmark's coefficients from the very observations the PINN runs see, by a classical solver.

For each inverse benchmark (Fisher-KPP D and r, heat kappa, advection-diffusion a and nu),
noise level and seed, the observations are drawn exactly as ``benchmarks/inverse.py`` draws
them (``synthetic_observations(problem, key=seed, n=200, noise)``). Then, instead of a
network, the PDE itself is solved for trial coefficients, with the TRUE initial and boundary
data and source (as the network is constrained to them), and the coefficients are fitted by
nonlinear least squares to the observations (``scipy.optimize.least_squares``, started at the
true values: the oracle is the least-squares minimiser next to the truth, what a network
that satisfied the PDE exactly would find). Two figures per cell:

* ``oracle``: the relative error of that least-squares estimate, for each seed's noise draw;
* ``crb``: the Cramer-Rao standard deviation ``sigma sqrt(diag (J^T J)^-1) / |theta|`` of any
  unbiased estimator from these 200 points (``J``: the solution's sensitivities to the
  coefficients at the observation points, ``sigma``: the noise's standard deviation).

If the oracle misses a goal, no inverse PINN can be expected to meet it from these data: the
goal then asks for more than the observations hold.

The forward solvers: advection-diffusion with periodic boundaries keeps its closed form for
any (a, nu): ``-exp(-nu pi^2 t) sin(pi (x - a t))``. Heat and Fisher-KPP: the method of lines
on a uniform grid (second-order differences, ``solve_ivp`` BDF with a banded Jacobian,
rtol 1e-9), the solution at an observation linear in x between the grid's nodes. Each solver
is checked against the exact solution at the true coefficients (its error is in the record:
it must be far below the noise).

    python -m benchmarks.inverse_oracle            # all: writes results/inverse_oracle.{json,md}
    python -m benchmarks.inverse_oracle --only fisher_kpp --noises 0.01
    python -m benchmarks.inverse_oracle --report-only   # rewrite the .md (new runs in inverse.json)
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from scipy import sparse
from scipy.integrate import solve_ivp
from scipy.optimize import least_squares

from cgmpinn_jax import inverse
from cgmpinn_jax.inverse import _inverse as inverse_impl
from cgmpinn_jax.problems import get_problem

from benchmarks import inverse as inverse_bench  # the runs, their labels and goals
from benchmarks import runcache

HERE = Path(__file__).resolve().parent

OUT = HERE / "results"
PROBLEMS = inverse_bench.PROBLEMS
NOISES = tuple(n for n in inverse_bench.NOISES if n > 0)
SEEDS = inverse_bench.SEEDS
N_OBS = inverse_bench.N_OBS
GRID = {"fisher_kpp": 2001, "heat": 2001}  # nodes of the method-of-lines grid


# ---- forward solvers: u(points; coefficients) with the true initial / boundary data --------
# u*, its initial and boundary values and the heat source are the library's own (the problem's
# ``exact`` and ``source``, the latter by automatic differentiation), evaluated in float64.
def _f64(fn):
    """``fn`` run with float64 jax, its result as a float64 numpy array."""
    def call(*args):
        with jax.enable_x64(True):
            return np.asarray(fn(*args), np.float64)
    return call


def _u_star(prob, **values):
    """points (M, 2) -> u*(points) of ``prob`` with the coefficients ``values`` put in."""
    p = inverse_impl._with_values(prob, values) if values else prob
    return _f64(lambda pts: p.exact_on(jnp.asarray(pts, jnp.float64)))


def _on_line(fn, xs):
    """t -> fn at the points (xs, t): fn of a fixed set of x, jitted once (the solver calls it
    at every right-hand side)."""
    xs = np.asarray(xs, np.float64)

    def at(t):
        return fn(jnp.stack([jnp.asarray(xs), jnp.full(xs.shape, t, jnp.float64)], axis=1))
    return _f64(jax.jit(at))


def _mol(x, t_end, u0, diff, reaction, left, right, points, rtol=1e-9):
    """Method of lines for u_t = diff u_xx + reaction(u, x, t) with Dirichlet data
    left(t), right(t) on the grid ``x``; returns u at ``points`` (M, 2) = (x, t)."""
    n, dx = len(x) - 2, x[1] - x[0]
    xi = x[1:-1]

    def rhs(t, v):
        full = np.concatenate(([left(t)], v, [right(t)]))
        return diff * (full[2:] - 2 * full[1:-1] + full[:-2]) / dx**2 + reaction(v, xi, t)

    sparsity = sparse.diags([1.0, 1.0, 1.0], [-1, 0, 1], shape=(n, n))
    t_obs = np.unique(points[:, 1])
    sol = solve_ivp(rhs, (0.0, t_end), u0(xi), method="BDF", t_eval=t_obs, rtol=rtol, atol=rtol * 1e-2,
                    jac_sparsity=sparsity)
    if not sol.success:
        raise RuntimeError(f"method of lines failed: {sol.message}")
    out = np.empty(len(points))
    for k, (px, pt) in enumerate(points):
        j = int(np.searchsorted(t_obs, pt))
        full = np.concatenate(([left(pt)], sol.y[:, j], [right(pt)]))
        out[k] = np.interp(px, x, full)
    return out


def model(name: str, points: np.ndarray):
    """(theta -> u(points; theta), the true theta, coefficient names)."""
    prob = get_problem(name)
    if name == "advection_diffusion":  # the closed form holds for any (a, nu)
        def f(th):
            return _u_star(prob, a=float(th[0]), nu=float(th[1]))(points)
        return f, np.array([prob.a, prob.nu]), ("a", "nu")
    if name == "fisher_kpp":
        x = np.linspace(-5.0, 5.0, GRID[name])
        u0 = _u_star(prob)(np.stack([x[1:-1], np.zeros(len(x) - 2)], axis=1))
        edges = _on_line(prob.exact_on, [x[0], x[-1]])

        def f(th):
            return _mol(x, 2.0, lambda xi: u0, th[0], lambda v, xi, t: th[1] * v * (1 - v),
                        lambda t: float(edges(t)[0]), lambda t: float(edges(t)[1]), points)
        return f, np.array([prob.D, prob.r]), ("D", "r")
    if name == "heat":  # the source is data: derived from u* at the true kappa
        x = np.linspace(0.0, 1.0, GRID[name])
        u0 = _u_star(prob)(np.stack([x[1:-1], np.zeros(len(x) - 2)], axis=1))
        source = _on_line(jax.vmap(prob.source), x[1:-1])
        edges = _on_line(prob.exact_on, [x[0], x[-1]])

        def f(th):
            return _mol(x, 1.0, lambda xi: u0, th[0], lambda v, xi, t: source(t),
                        lambda t: float(edges(t)[0]), lambda t: float(edges(t)[1]), points)
        return f, np.array([prob.kappa]), ("kappa",)
    raise ValueError(f"no oracle for {name!r}; choose from {PROBLEMS}")


def exact_at(name: str, points: np.ndarray) -> np.ndarray:
    """u* of the library's problem at ``points`` (M, 2), in float64."""
    return _u_star(get_problem(name))(points)


def oracle_cell(name: str, noise: float, seed: int) -> dict:
    obs = inverse.synthetic_observations(name, seed, N_OBS, noise)
    pts, y = obs.points, obs.values
    exact = exact_at(name, pts)
    sigma = noise * float(np.std(exact))
    f, truth, names = model(name, pts)
    t0 = time.perf_counter()
    solver_err = float(np.max(np.abs(f(truth) - exact)))
    # sensitivities at the truth (central differences, 1e-4 relative), for the Cramer-Rao bound
    cols = []
    for i in range(len(truth)):
        h = 1e-4 * abs(truth[i])
        tp, tm = truth.copy(), truth.copy()
        tp[i] += h
        tm[i] -= h
        cols.append((f(tp) - f(tm)) / (2 * h))
    J = np.stack(cols, axis=1)
    crb = sigma * np.sqrt(np.diag(np.linalg.inv(J.T @ J))) / np.abs(truth)
    fit = least_squares(lambda th: (f(th * truth) - y), np.ones_like(truth), x_scale=1.0, diff_step=1e-4,
                        xtol=1e-10, ftol=1e-12, gtol=1e-12)
    est = fit.x * truth
    # the solution the oracle's coefficients give, on the problem's test grid (as rel. e2 is measured)
    grid_pts = np.asarray(get_problem(name).test_grid().points, np.float64)
    g, _, _ = model(name, grid_pts)
    u_star = exact_at(name, grid_pts)
    sol_e2 = float(np.linalg.norm(g(est) - u_star) / np.linalg.norm(u_star))
    return {
        "problem": name, "noise": noise, "seed": seed, "n_obs": N_OBS, "sigma": sigma,
        "solver_max_abs_error_at_truth": solver_err,
        "coefficients": {n: {"true": float(truth[i]), "estimate": float(est[i]),
                             "rel_error": float(abs(est[i] - truth[i]) / abs(truth[i])), "crb_rel_std": float(crb[i])}
                         for i, n in enumerate(names)},
        "solution_rel_e2": sol_e2,
        "fit_status": int(fit.status), "fit_nfev": int(fit.nfev), "seconds": time.perf_counter() - t0,
    }


def pinn_medians(runs: list[dict], problem: str, noise: float) -> dict:
    """{(method, budget label): {coef: median rel error}} of the inverse runs (``inverse.json``)."""
    cells: dict = {}
    for r in runs:
        if r.get("problem") != problem or r.get("kind") != "inverse":
            continue
        if abs(float(r.get("noise", -1)) - noise) > 1e-12:
            continue
        label = (r.get("method"), inverse_bench._budget_label(r["adam_steps"], r["lbfgs_steps"],
                                                              inverse_bench._preset(r), inverse_bench._obsw(r)))
        cells.setdefault(label, []).append(r)
    out = {}
    for label, rs in cells.items():
        out[label] = {"seeds": sorted(r["seed"] for r in rs),
                      "median": {c: statistics.median(r["unknowns"][c]["rel_error"] for r in rs) for c in rs[0]["unknowns"]}}
    return out


def solution_medians(runs: list[dict]) -> dict:
    """{(problem, method, noise or None for forward): median rel. e2} of the faithful 3000 + 3000 runs."""
    cells: dict = {}
    for r in runs:
        if (r.get("adam_steps"), r.get("lbfgs_steps"), inverse_bench._preset(r)) != (3000, 3000, "faithful") \
                or inverse_bench._obsw(r) != 1.0:
            continue
        noise = None if r.get("kind") == "forward" else float(r["noise"])
        cells.setdefault((r["problem"], r["method"], noise), []).append(r["rel_e2"])
    return {k: statistics.median(v) for k, v in cells.items()}


def report(cells: list[dict]) -> str:
    lines = [
        "# What the observations can support: the least-squares oracle (inverse problems)",
        "",
        "Written by `python -m benchmarks.inverse_oracle` (record `benchmarks/results/inverse_oracle.json`). "
        "The same 200 observations per seed as `inverse.md` (noise relative to std(u*) there), but the "
        "coefficients fitted by nonlinear least squares through a classical solver of the PDE with the true "
        "initial / boundary data (closed form for advection-diffusion; method of lines for heat and Fisher-KPP, "
        "checked against u* at the true coefficients). `oracle`: that estimate's relative error, median "
        "[min - max] over seeds 0, 1, 2; `CRB`: the Cramer-Rao relative standard deviation of any unbiased "
        "estimator from these points. `PINN` / `CGMPINN`: the medians of `inverse.md` for the same "
        "observations (budget in brackets). A goal the oracle misses asks for more than the data hold.",
        "",
        "| problem | noise | coefficient | goal | oracle | CRB (rel. std) | PINN / CGMPINN (inverse.md) | solver error at truth / noise sigma |",
        "|---|---|---|---|---|---|---|---|",
    ]
    runs = list(inverse_bench.study().load().values())  # the PINN runs, read once
    by = {}
    for c in cells:
        by.setdefault((c["problem"], c["noise"]), []).append(c)
    for (prob, noise), cs in sorted(by.items(), key=lambda kv: (PROBLEMS.index(kv[0][0]), kv[0][1])):
        cs = sorted(cs, key=lambda c: c["seed"])
        med_pinn = pinn_medians(runs, prob, noise)
        for coef in cs[0]["coefficients"]:
            errs = [c["coefficients"][coef]["rel_error"] for c in cs]
            crb = statistics.median(c["coefficients"][coef]["crb_rel_std"] for c in cs)
            others = "; ".join(f"{m.upper() if m == 'pinn' else 'CGMPINN'} {v['median'][coef]:.2e} ({b}, seeds {','.join(map(str, v['seeds']))})"
                               for (m, b), v in sorted(med_pinn.items()) if coef in v["median"]) or "-"
            ratio = max(c["solver_max_abs_error_at_truth"] for c in cs) / cs[0]["sigma"]
            lines.append(f"| {prob} | {noise:g} | {coef} | <= {inverse_bench.GOALS[noise][prob][coef]:g} | {statistics.median(errs):.2e} "
                         f"[{min(errs):.1e} - {max(errs):.1e}] (seeds {','.join(str(c['seed']) for c in cs)}) | "
                         f"{crb:.2e} | {others} | {ratio:.1e} |")
    lines += [
        "",
        "## The solution's e2: what the coefficients' uncertainty alone costs",
        "",
        "`oracle`: relative e2 on the problem's test grid of the PDE's solution with the oracle's coefficients "
        "(the classical solver's; no network error). The issue's goal is the inverse run's e2 within 2x of the "
        "forward run's; an oracle e2 above that bound means the noise's effect on the coefficients alone "
        "exceeds it. Forward and inverse medians from `inverse.md` (3000 + 3000, float32).",
        "",
        "| problem | noise | oracle solution rel. e2 | 2 x forward e2 (PINN / CGMPINN) | inverse e2 (PINN / CGMPINN) |",
        "|---|---|---|---|---|",
    ]
    e2s = solution_medians(runs)
    for (prob, noise), cs in sorted(by.items(), key=lambda kv: (PROBLEMS.index(kv[0][0]), kv[0][1])):
        errs = [c["solution_rel_e2"] for c in cs if "solution_rel_e2" in c]
        if not errs:
            continue
        fwd = " / ".join(f"{2 * e2s[(prob, m, None)]:.2e}" if (prob, m, None) in e2s else "-" for m in ("pinn", "cgmpinn"))
        inv = " / ".join(f"{e2s[(prob, m, noise)]:.2e}" if (prob, m, noise) in e2s else "-" for m in ("pinn", "cgmpinn"))
        lines.append(f"| {prob} | {noise:g} | {statistics.median(errs):.2e} [{min(errs):.1e} - {max(errs):.1e}] | {fwd} | {inv} |")
    lines += ["", "Machine: " + runcache.machine_text("{arch}, Python {python}") + "; seconds per cell in the record.", ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default=None, help=f"comma-separated problems (default: {','.join(PROBLEMS)})")
    ap.add_argument("--noises", default=None, help="comma-separated noise levels (default: 0.01,0.05)")
    ap.add_argument("--seeds", default=None, help="comma-separated seeds (default: 0,1,2)")
    ap.add_argument("--report-only", action="store_true",
                    help="no fitting: rewrite inverse_oracle.md from the record (after new inverse.py runs)")
    args = ap.parse_args(argv)
    probs = tuple(args.only.split(",")) if args.only else PROBLEMS
    bad = [p for p in probs if p not in PROBLEMS]
    if bad:
        ap.error(f"--only: unknown problem(s) {bad}; choose from {PROBLEMS}")
    noises = tuple(float(v) for v in args.noises.split(",")) if args.noises else NOISES
    if any(not (v > 0) for v in noises):
        ap.error("--noises: each level must be > 0 (the bound needs a noise)")
    seeds = tuple(int(v) for v in args.seeds.split(",")) if args.seeds else SEEDS
    path = OUT / "inverse_oracle.json"
    rec = json.loads(path.read_text()) if path.exists() else {"format": 1, "study": "inverse_oracle", "cells": {}}
    for p in ([] if args.report_only else probs):
        for nz in noises:
            for s in seeds:
                c = oracle_cell(p, nz, s)
                rec["cells"][f"{p}-noise{nz:g}-seed{s}"] = c
                errs = ", ".join(f"{k} {v['rel_error']:.2e} (CRB {v['crb_rel_std']:.2e})" for k, v in c["coefficients"].items())
                print(f"{p} noise {nz:g} seed {s}: {errs}; solver error at truth {c['solver_max_abs_error_at_truth']:.1e} "
                      f"(sigma {c['sigma']:.1e}); {c['seconds']:.1f} s", flush=True)
                path.write_text(json.dumps(rec, indent=1, sort_keys=True) + "\n")
    (OUT / "inverse_oracle.md").write_text(report(list(rec["cells"].values())))
    print(f"wrote {OUT / 'inverse_oracle.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
