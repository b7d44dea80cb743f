"""Why the accurate preset stops near 1e-7 (issue 44, item 3): one factor at a time, measured.

Cells (``--list``): the accurate preset (float64 Adam, then Gauss-Newton), PINN, on a problem
whose accuracy-study run is the baseline, with one thing changed: the collocation count
(``points=K``: every point count of the problem times K), the second stage's budget, or the
Gauss-Newton form. Each run records the test error (relative e2 on the problem's test grid),
the final objective (the training residual), the stop status and when the error first fell
below 1e-6 .. 1e-9, so that the gap between training residual and test error can be read off.

    python -m benchmarks.floor --cells poisson1d_points4
    python -m benchmarks.floor --report-only

Probes (``PROBES``, `probe_cell`): one step of the kernel and the SVD form from a late state.
Kinks (``KINKS``, `kink_cell`): the PDE residual between the collocation points of 1D Poisson, soft
against hard boundary conditions.

Record ``benchmarks/results/floor.json``, report ``floor.md``.
"""

from __future__ import annotations

import argparse
import time

from benchmarks import runcache, tracking

STUDY, THRESHOLDS = "floor", (1e-6, 1e-7, 1e-8, 1e-9)
POINTS = {"poisson1d": ("n_pde",), "heat": ("n_pde", "n_ic", "n_bc")}

# name: (problem, point multiplier, TrainConfig overrides on the accurate preset; "gn": its
# GaussNewton stage's)
CELLS = {
    "poisson1d_points1": ("poisson1d", 1, {}),
    "poisson1d_points4": ("poisson1d", 4, {"gn": {"form": "pcg"}}),
    "poisson1d_points1_pcg": ("poisson1d", 1, {"gn": {"form": "pcg"}}),
    "poisson1d_width100": (
        "poisson1d",
        1,
        {"width": 100},
    ),  # network size: 30 701 parameters, not 7851
    "poisson1d_float32": (
        "poisson1d",
        1,
        {"precision": "float32", "gn": {"form": "kernel"}},
    ),  # end to end
    "poisson1d_float32_svd": ("poisson1d", 1, {"precision": "float32", "gn": {"form": "svd"}}),
    "poisson1d_float32_svd_width100": (
        "poisson1d",
        1,
        {"precision": "float32", "width": 100, "gn": {"form": "svd", "steps": 600}},
    ),
}
# architecture cells (the networks' floor): name -> (problem, method, network options or None, hard
# constraint terms or None, TrainConfig overrides); run with --cells and --seeds like the cells
# above
ARCHS = {
    "tanh": (None, None),
    "fourier": ({"name": "fourier", "options": {"sigma": 1.0}}, None),
    "siren": ({"name": "siren", "options": {"omega0": 30.0}}, None),
    "hard": (None, "all"),
}
ARCH_CELLS = {
    f"{p}_{m}_{a}": (p, m, net, hard, {})
    for p in ("poisson1d", "heat", "advection_diffusion")
    for m in ("pinn", "cgmpinn")
    for a, (net, hard) in ARCHS.items()
}
ARCH_CELLS.update(
    {
        f"{p}_{m}_{a}_gn300": (p, m, net, hard, {"gn": {"steps": 300}})
        for p in ("heat", "advection_diffusion")
        for m in ("pinn", "cgmpinn")
        for a, (net, hard) in ARCHS.items()
    }
)
# advection-diffusion's boundary is periodic in x (period 2), so its `hard` is the periodic
# embedding in x (periodicity exact) under the hard constraint of the initial condition: every piece
# met by construction
PERIODIC_X = {"name": "periodic", "options": {"periods": ((0, 2.0),), "harmonics": 1}}
ARCH_CELLS.update(
    {
        name: ("advection_diffusion", m, PERIODIC_X, ("ic",), over)
        for name, (p, m, _, hard, over) in ARCH_CELLS.items()
        if p == "advection_diffusion" and hard
    }
)
# DSGNAR's Burgers (nu = 0.01, u0 = -sin(pi x)) at the side-by-side study's points (2048 + 512, 100
# per edge), the accurate preset, PINN: the periodic embedding in x (period 2) beside the tanh MLP
# (the side-by-side run, 2.01e-5)
# name: (network, point multiplier); `_points2` doubles every point count (is the floor the
# collocation's resolution?)
BURGERS_CELLS = {
    "burgers_pinn_periodic": (PERIODIC_X, 1),
    "burgers_pinn_periodic_points2": (PERIODIC_X, 2),
}
PROBES = {
    "poisson1d_probe_gn600": ("poisson1d", 600)
}  # name: (problem, kernel iterations before the probe)
# where the hard constraint's error on 1D Poisson comes from (`kink_cell`), the accurate preset,
# PINN: name -> (hard constraint?, Adam steps, Gauss-Newton iterations)
KINKS = {
    "poisson1d_kink_soft_adam": (False, 5000, 0),
    "poisson1d_kink_hard_adam": (True, 5000, 0),
    "poisson1d_kink_hard_gn300": (True, 5000, 300),
}
BANDS = ((1e-4, 1.0), (1e-8, 1e-4), (1e-12, 1e-8), (0.0, 1e-12))  # of s / s_max


def accurate(over: dict):
    """The accurate preset with ``over`` (TrainConfig options; ``"gn"``: its GaussNewton stage's
    options)."""
    import cgmpinn_jax as cj

    cfg = cj.TrainConfig.preset("accurate", **{k: v for k, v in over.items() if k != "gn"})
    return cfg.replace(stages=(cfg.stages[0], cfg.stages[1].replace(**over.get("gn", {}))))


def probe_cell(name: str, seed: int) -> dict:
    """Does the kernel's conditioning stop a run? After ``its`` kernel iterations: the residual's
    energy in bands of J's singular values, and the objective after one kernel step (NaN where its
    Cholesky fails) and one SVD step at 19 dampings (relative to ``|J|_F^2 / P``)."""
    import equinox as eqx
    import jax
    import jax.numpy as jnp
    import numpy as np
    import cgmpinn_jax as cj
    from cgmpinn_jax.stages._gn_linear import cholesky_direction, svd_direction
    from cgmpinn_jax.training import CompileCache
    from cgmpinn_jax.training._objective import LeastSquares, Trainable
    from cgmpinn_jax.training._schedule import resolve

    (problem_name, its), t0 = PROBES[name], time.perf_counter()
    with jax.enable_x64(True):
        prob, cfg = (
            cj.get_problem(problem_name),
            cj.TrainConfig.preset("accurate").with_steps(None, its),
        )
        res = cj.train(prob, "pinn", cfg, key=seed, quiet=True)
        lsq = LeastSquares(
            prob, res.method, CompileCache().engine(resolve(prob, res.method, cfg))[0]
        )
        params = eqx.partition(Trainable(res.model, None, None), eqx.is_array)[0]
        x, unravel = jax.flatten_util.ravel_pytree(params)
        w, lam = jnp.ones(res.batch["pde"][0].shape[0]), jnp.asarray(res.history.lambdas[-1])
        r, J = jax.jit(lsq.jacobian)(params, res.batch, w, lam)
        f = jax.jit(lambda y: jnp.sum(lsq.residuals(unravel(y), res.batch, w, lam) ** 2))
        U, S, _ = jnp.linalg.svd(J, full_matrices=False)
        rel, e = np.asarray(S / S[0]), np.asarray(jnp.dot(r, U)) ** 2
        bands = {
            f"{lo:g}-{hi:g}": [
                int(((rel > lo) & (rel <= hi)).sum()),
                float(e[(rel > lo) & (rel <= hi)].sum()),
            ]
            for lo, hi in BANDS
        }
        scale, start = (
            float(jnp.sum(J * J) / J.shape[1]),
            float(f(x)),
        )  # in float64: inside the scope
        kernel, svd = (
            cholesky_direction(J, r, None, start, "kernel"),
            svd_direction(J, r),
        )  # the member's own steps
        after = {
            f"{m:.0e}": [float(f(x + kernel(m * scale)[0])), float(f(x + svd(m * scale)[0]))]
            for m in np.geomspace(1e-20, 1e-2, 19)
        }
    return {
        "cell": name,
        "problem": problem_name,
        "method": "pinn",
        "seed": seed,
        "points": 1,
        "config": cfg.to_dict(),
        "metrics": res.metrics.as_dict(),
        "final_loss": start,
        "stages": res.stage_lines(),
        "probe": {"rows_x_params": list(J.shape), "bands": bands, "after_one_step": after},
        "wall_seconds": time.perf_counter() - t0,
    }


def kink_cell(name: str, seed: int) -> dict:
    """A narrow feature between two collocation points: after training, the PDE residual r on a grid
    of 100 001 points beside r at the collocation points, r's peak x0 and the two points around it,
    the error's slope on [x0 - 0.05, x0 - 0.01] and [x0 + 0.01, x0 + 0.05], and r's integral over
    |x - x0| < 0.003. Where u'' = f + r, that integral is the jump of the error's slope at x0: a
    spike of r between two points bends the error while the loss stays small."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    import cgmpinn_jax as cj

    hard, adam, gn = KINKS[name]
    t0 = time.perf_counter()
    h = 1e-5
    with jax.enable_x64(True):
        base = cj.get_problem("poisson1d")
        prob = cj.problems.HardConstrained(base, satisfies=tuple(base.terms)) if hard else base
        cfg = cj.TrainConfig.preset("accurate").with_steps(adam, gn)
        res = cj.train(prob, "pinn", cfg, key=seed, quiet=True)
        xs = np.sort(np.asarray(res.batch["pde"][0])[:, 0])
        g = jnp.linspace(0.0, 1.0, 100_001)[:, None]
        err = np.asarray(jax.vmap(res.model)(g)).ravel() - np.asarray(base.exact_on(g)).ravel()
        r_col = np.asarray(prob.pde_residuals(res.model, jnp.asarray(xs[:, None])))
        r = np.asarray(prob.pde_residuals(res.model, g))
    i = int(np.abs(r).argmax())
    x0 = i * h
    j = int(np.searchsorted(xs, x0))
    slopes = [
        float((err[round(b / h)] - err[round(a / h)]) / (b - a)) if 0 <= a and b <= 1 else None
        for a, b in ((x0 - 0.05, x0 - 0.01), (x0 + 0.01, x0 + 0.05))
    ]
    return {
        "cell": name,
        "problem": "poisson1d",
        "method": "pinn",
        "seed": seed,
        "points": 1,
        "config": cfg.to_dict(),
        "metrics": res.metrics.as_dict(),
        "final_loss": float(res.history.loss[-1]),
        "stages": res.stage_lines(),
        "kink": {
            "hard": hard,
            "adam": adam,
            "gn": gn,
            "rms_collocation": float(np.sqrt(np.mean(r_col**2))),
            "rms_fine": float(np.sqrt(np.mean(r**2))),
            "max_collocation": float(np.abs(r_col).max()),
            "max_fine": float(np.abs(r[i])),
            "x0": x0,
            "between": [float(xs[max(j - 1, 0)]), float(xs[min(j, len(xs) - 1)])],
            "max_gap": float(np.diff(xs).max()),
            "slopes": slopes,
            "err_max": float(np.abs(err).max()),
            "integral": float(r[np.abs(np.arange(len(r)) * h - x0) < 0.003].sum() * h),
        },
        "wall_seconds": time.perf_counter() - t0,
    }


def train_cell(name: str, seed: int, track_every: int) -> dict:
    import cgmpinn_jax as cj

    problem_name, k, over = CELLS[name]
    base = cj.get_problem(problem_name)
    prob = cj.get_problem(problem_name, **{p: k * getattr(base, p) for p in POINTS[problem_name]})
    cfg = accurate(over)
    t0 = time.perf_counter()
    res = cj.train(prob, "pinn", cfg, key=seed, quiet=True, track_error_every=track_every)
    h = res.history
    reach = {}
    for thr in THRESHOLDS:
        it, sec = tracking.first_reach(
            h.error_k, h.error_seconds, h.error_rel_e2, thr, res.budgets["adam"]
        )
        reach[f"{thr:.0e}"] = {"iterations": it, "seconds": sec}
    return {
        "cell": name,
        "problem": problem_name,
        "method": "pinn",
        "seed": seed,
        "points": k,
        "config": cfg.to_dict(),
        "metrics": res.metrics.as_dict(),
        "final_loss": float(h.loss[-1]),
        "second_iterations": int((h.k > res.budgets["adam"]).sum()),
        "stages": res.stage_lines(),
        "reach": reach,
        "wall_seconds": time.perf_counter() - t0,
        "error_trace": {"k": h.error_k, "seconds": h.error_seconds, "rel_e2": h.error_rel_e2},
    }


def arch_cell(name: str, seed: int, track_every: int) -> dict:
    """One architecture cell: the accurate preset (with the cell's overrides) and the cell's network
    or hard constraint (every Dirichlet piece of the problem, built from its box faces)."""
    import cgmpinn_jax as cj

    if name in BURGERS_CELLS:
        from cgmpinn_jax.problems.worked import BurgersFromData

        (net, k), hard, over = BURGERS_CELLS[name], None, {"time_limit": 3300.0}
        problem_name, method = "burgers_data", "pinn"
        prob = BurgersFromData(nu=0.01, n_pde=2048 * k, n_ic=512 * k, n_bc=100 * k)
    else:
        problem_name, method, net, hard, over = ARCH_CELLS[name]
        prob, k = cj.get_problem(problem_name), 1
    if hard:
        prob = cj.problems.HardConstrained(
            prob, satisfies=tuple(prob.terms) if hard == "all" else hard
        )
    cfg = accurate(over)
    network = None if net is None else cj.NetworkOptions(net["name"], net["options"])
    t0 = time.perf_counter()
    res = cj.train(
        prob, method, cfg, key=seed, quiet=True, track_error_every=track_every, network=network
    )
    h = res.history
    reach = {}
    for thr in THRESHOLDS:
        it, sec = tracking.first_reach(
            h.error_k, h.error_seconds, h.error_rel_e2, thr, res.budgets["adam"]
        )
        reach[f"{thr:.0e}"] = {"iterations": it, "seconds": sec}
    return {
        "cell": name,
        "problem": problem_name,
        "method": method,
        "seed": seed,
        "points": k,
        "arch": name.removeprefix("burgers_pinn_")
        if name in BURGERS_CELLS
        else name.removeprefix(f"{problem_name}_{method}_"),
        "config": res.config.to_dict(),
        "metrics": res.metrics.as_dict(),
        "final_loss": float(h.loss[-1]),
        "second_iterations": int((h.k > res.budgets["adam"]).sum()),
        "stages": res.stage_lines(),
        "reach": reach,
        "wall_seconds": time.perf_counter() - t0,
        "residual_rms": {
            "collocation": _residual_rms(res.problem, res.model, res.batch["pde"][0]),
            "test_grid": _residual_rms(res.problem, res.model, res.problem.test_grid().points),
        },
        "error_trace": {"k": h.error_k, "seconds": h.error_seconds, "rel_e2": h.error_rel_e2},
    }


def _residual_rms(problem, model, points) -> float:
    """The root mean square of the PDE residual ``N[u] - f`` of ``model`` at ``points``, in float64:
    at the collocation points (what the loss saw) and on the test grid (between them)."""
    import jax
    import jax.numpy as jnp

    with jax.enable_x64(True):
        r = problem.pde_residuals(model, jnp.asarray(points, jnp.float64))
        return float(jnp.sqrt(jnp.mean(jnp.square(r))))


def render(runs: dict) -> str:
    lines = [
        "# The accuracy floor: one factor at a time",
        "",
        "Generated by `python -m benchmarks.floor --report-only` from `floor.json`. The accurate "
        "preset, PINN; `points`: every point count of the problem times that factor. Test error: "
        "relative e2 on the problem's test grid; final loss: the objective at the end (the "
        "training residual).",
        "",
        "| cell | seed | points x | rel. e2 | final loss | to 1e-6; 1e-7; 1e-8; 1e-9 (it / s) | "
        "wall s | stop | commit | threads |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    arch = [r for r in runs.values() if "arch" in r]
    runs = {k: r for k, r in runs.items() if "arch" not in r}
    for r in sorted(
        (r for r in runs.values() if "probe" not in r and "kink" not in r),
        key=lambda r: (r["cell"], r["seed"]),
    ):
        reach = "; ".join(
            "-" if v["iterations"] is None else f"{v['iterations']} / {v['seconds']:.0f}"
            for v in r["reach"].values()
        )
        lines.append(
            f"| {r['cell']} | {r['seed']} | {r['points']} | {float(r['metrics']['rel_e2']):.3e} | "
            f"{r['final_loss']:.3e} | {reach} | {r['wall_seconds']:.0f} | {r['stages'][-1]} | "
            f"{r.get('commit', '?')} | {r.get('threads', '?')} |"
        )
    kinks = sorted(
        (r for r in runs.values() if "kink" in r),
        key=lambda r: (r["kink"]["hard"], r["kink"]["gn"]),
    )
    if kinks:
        lines += [
            "",
            "**Where the hard constraint's error hides (1D Poisson, PINN, float64).** "
            "`poisson1d_kink_*`: the accurate preset cut to the stages named, then the PDE "
            "residual r at the 1500 collocation points and on a grid of 100 001 points, its peak "
            "x0 and the collocation points either side, the error's slope on [x0 - 0.05, x0 - "
            "0.01] and [x0 + 0.01, x0 + 0.05], and the integral of r over |x - x0| < 0.003 (the "
            "jump of the error's slope that r causes there).",
            "",
            "| cell | seed | Adam / GN | rel. e2 | max abs error | r RMS, collocation / grid | "
            "max abs r, collocation / grid | x0 (between) | error slope left / right | "
            "integral of r | commit |",
            "|---" * 11 + "|",
        ]
        for r, kk in ((r, r["kink"]) for r in kinks):
            sl = " / ".join("-" if v is None else f"{v:.1f}" for v in kk["slopes"])
            lines.append(
                f"| {r['cell']} | {r['seed']} | {kk['adam']} / {kk['gn']} | "
                f"{float(r['metrics']['rel_e2']):.3g} | {kk['err_max']:.3g} | "
                f"{kk['rms_collocation']:.3g} / {kk['rms_fine']:.3g} | "
                f"{kk['max_collocation']:.3g} / {kk['max_fine']:.3g} | "
                f"{kk['x0']:.4f} ({kk['between'][0]:.4f}, {kk['between'][1]:.4f}) | {sl} | "
                f"{kk['integral']:.1f} | {r.get('commit', '?')} |"
            )
        lines += [
            "",
            "(The largest gap between neighbouring collocation points: "
            f"{kinks[0]['kink']['max_gap']:.4f}.)",
        ]
    for r in (r for r in runs.values() if "probe" in r):
        pr = r["probe"]
        lines += [
            "",
            f"**{r['cell']}** (seed {r['seed']}, {pr['rows_x_params'][0]} x "
            f"{pr['rows_x_params'][1]} J, after {r['stages'][-1]}; rel. e2 "
            f"{float(r['metrics']['rel_e2']):.3e}, objective {r['final_loss']:.4e}, commit "
            f"{r.get('commit', '?')}). Residual energy by s / s_max: "
            + "; ".join(f"{k}: {n} directions, {en:.3e}" for k, (n, en) in pr["bands"].items())
            + ". Best objective after one step over the dampings: kernel "
            f"{_best_after_one_step(pr, 0):.6e}, SVD {_best_after_one_step(pr, 1):.6e}.",
            "",
            "| mu / scale | " + " | ".join(pr["after_one_step"]) + " |",
            "|---|" + "---|" * len(pr["after_one_step"]),
        ]
        lines += [
            f"| {lab} | "
            + " | ".join(f"{float(v[j]):.3e}" for v in pr["after_one_step"].values())
            + " |"
            for j, lab in ((0, "kernel"), (1, "SVD"))
        ]
    lines += render_arch(arch)
    return "\n".join(lines) + "\n"


def _best_after_one_step(probe: dict, j: int) -> float:
    """The lowest objective after one step over the dampings, of the kernel (``j`` 0) or the SVD
    step (1); the dampings where it is NaN left out."""
    return min(float(v[j]) for v in probe["after_one_step"].values() if v[j] != "nan")


def render_arch(arch: list) -> list:
    """The networks' floor: per problem, method and network, the median [min - max] over the seeds
    run."""
    import statistics

    if not arch:
        return []
    out = [
        "",
        "## The networks' floor",
        "",
        "The accurate preset (float64, the problem's Adam budget, then Gauss-Newton) with the "
        "network replaced: `tanh` the default 4 x 50 tanh MLP, `fourier` random Fourier features "
        "(sigma 1, 64 frequencies) before a tanh MLP of the same size, `siren` SIREN (omega0 30, "
        "the same size), `hard` the tanh MLP under the hard constraint built from the problem's "
        "Dirichlet pieces (every boundary and initial piece exact, dropped from the loss; on "
        "advection-diffusion, whose boundary is periodic, the periodic embedding in x under the "
        "hard constraint of the initial condition). A `_gn300` cell stops Gauss-Newton at 300 "
        "iterations (scaled for the CPU). Relative e2 on the problem's test grid.",
        "",
        "| problem | method | network | GN its | seeds | rel. e2 median [min - max] | "
        "at the end of Adam | final loss (median) | "
        "PDE residual RMS, collocation / test grid (median) | wall s (median) | stops | commit |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    groups: dict = {}
    for r in arch:
        groups.setdefault(r["cell"], []).append(r)
    for cell in sorted(groups, key=lambda c: (groups[c][0]["problem"], groups[c][0]["method"], c)):
        rs = sorted(groups[cell], key=lambda r: r["seed"])
        e = [float(r["metrics"]["rel_e2"]) for r in rs]
        its = next((st.get("steps") for st in rs[0]["config"]["stages"][1:]), "?")
        stops = ", ".join(sorted({r["stages"][-1].rsplit("(", 1)[-1].rstrip(")") for r in rs}))
        out.append(
            f"| {rs[0]['problem']} | {rs[0]['method']} | {rs[0]['arch'].removesuffix('_gn300')} | "
            f"{its} | {','.join(str(r['seed']) for r in rs)} | "
            f"{statistics.median(e):.2e} [{min(e):.1e} - {max(e):.1e}] | {_end_of_adam(rs)} | "
            f"{statistics.median(r['final_loss'] for r in rs):.2e} | {_rms(rs)} | "
            f"{statistics.median(r['wall_seconds'] for r in rs):.0f} | {stops} | "
            f"{', '.join(sorted({r.get('commit', '?') for r in rs}))} |"
        )
    return out


def _end_of_adam(rs: list) -> str:
    """The median [min - max] over ``rs`` of the tracked error at the trace's last point within the
    Adam stage (the trace ends at Adam's steps plus the second stage's iterations)."""
    import statistics

    vals = []
    for r in rs:
        t = r.get("error_trace")
        if not (t and t["k"]):
            continue
        adam_end = t["k"][-1] - r["second_iterations"]
        within_adam = [e for k, e in zip(t["k"], t["rel_e2"]) if k <= adam_end]
        if within_adam:
            vals.append(float(within_adam[-1]))
    return (
        "-"
        if not vals
        else f"{statistics.median(vals):.2e}"
        + (f" [{min(vals):.1e} - {max(vals):.1e}]" if len(vals) > 1 else "")
    )


def _rms(rs: list) -> str:
    with_rms = [r["residual_rms"] for r in rs if "residual_rms" in r]
    if not with_rms:
        return "-"
    import statistics

    col, grid = (statistics.median(m[k] for m in with_rms) for k in ("collocation", "test_grid"))
    return f"{col:.1e} / {grid:.1e}" + (f" (n={len(with_rms)})" if len(with_rms) < len(rs) else "")


def _run_cell(name: str, seed: int, track_every: int) -> dict:
    if name in PROBES or name in KINKS:
        return (probe_cell if name in PROBES else kink_cell)(name, seed)
    return (arch_cell if name in {**ARCH_CELLS, **BURGERS_CELLS} else train_cell)(
        name, seed, track_every
    )


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--cells",
        nargs="+",
        choices=sorted({**CELLS, **PROBES, **KINKS, **ARCH_CELLS, **BURGERS_CELLS}),
        default=[],
    )
    ap.add_argument("--seeds", nargs="+", type=int, default=[0])
    ap.add_argument("--track-every", type=int, default=25)
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--report-only", action="store_true")
    args, study = ap.parse_args(argv), runcache.Study(STUDY)
    for name in [] if args.report_only else args.cells or (sorted(CELLS) if args.list else []):
        for seed in args.seeds:
            key = f"{name}__seed{seed}"
            if args.list:
                print(f"{key}: {'done' if study.is_done(key) else 'missing'}")
            else:
                r = study.run(
                    key, lambda name=name, seed=seed: _run_cell(name, seed, args.track_every)
                )
                print(f"{key}: rel e2 {float(r['metrics']['rel_e2']):.3e}", flush=True)
    study.write_report(render, echo=not args.list)


if __name__ == "__main__":
    main()
