"""The paper tables' figures, from the runs that ``paper_tables.build_outputs`` selected, in
``benchmarks/figures/`` (git-ignored): ``<problem>_rel_e2.png`` (relative e2 of every run, by
variant; from the record alone), ``<problem>_loss.png`` (median unweighted loss curves of every
variant; only runs whose full file is in the local cache) and ``<problem>_cgmpinn.png`` (CGMPINN
prediction, exact solution, absolute error; only where the cache holds the figure seed's full
CGMPINN file). matplotlib is imported only when figures are made."""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np

from benchmarks import tables_lib as tl


def median_curve(
    runs: list[dict], series: str = "raw_total", min_fraction: float = 0.5
) -> tuple[np.ndarray, np.ndarray]:
    """Median over runs of a downsampled loss curve, aligned on k (missing / None -> NaN).

    Only steps where at least ``min_fraction`` of the runs still have a value get a median (NaN
    elsewhere): runs stop at different steps (loss tolerance, divergence guard), and the tail
    where one run is left would otherwise show that run alone, e.g. the rejected trial loss a
    diverged L-BFGS stage records last."""
    curves = [r.get("loss_curve") or {} for r in runs]
    ks = sorted({int(k) for c in curves for k in c.get("k", [])})
    if not ks:
        return np.zeros(0), np.zeros(0)
    pos = {k: i for i, k in enumerate(ks)}
    mat = np.full((len(curves), len(ks)), np.nan)
    for j, c in enumerate(curves):
        for k, v in zip(c.get("k", []), c.get(series, [])):
            mat[j, pos[int(k)]] = np.nan if v is None else tl.dec(v)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns
        med = np.nanmedian(mat, axis=0)
    present = np.isfinite(mat).sum(axis=0)
    med[present < math.ceil(min_fraction * len(curves))] = np.nan
    return np.asarray(ks), med


def make_figures(selected: dict, folder: Path) -> list[Path]:
    """The figures of every problem in ``selected`` (:func:`benchmarks.tables_lib.select_runs`) in
    ``folder``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    import cgmpinn_jax as cj

    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    problems = [p for p in tl.PROBLEM_ORDER if any(k[0] == p for k in selected)]
    for p in problems:
        title = tl.PROBLEM_TITLES.get(p, p)
        paths.append(_rel_e2_figure(plt, selected, p, title, folder))
        # loss curves (full run files only): method table variants | optimizer variants
        if not any(
            (r.get("loss_curve") or {}).get("k")
            for (q, _v), rs in selected.items()
            if q == p
            for r in rs
        ):
            continue
        fig, axes = plt.subplots(1, 2, figsize=(13, 4.5))
        for ax, tname in zip(axes, ("methods", "optimizers")):
            boundary = None
            for label, variant, _ in tl.TABLES[tname]:
                rs = selected.get((p, variant), [])
                if not rs:
                    continue
                k, med = median_curve(rs)
                if k.size == 0:
                    continue
                pos = np.where(med > 0, med, np.nan)
                ax.semilogy(
                    k,
                    pos,
                    lw=1.0,
                    label=f"{label} ({len(rs)})",
                    ls="-" if variant.startswith("cgmpinn") else "--",
                )
                res = rs[0].get("resolved") or {}
                if tname == "methods" and res.get("adam_steps") and res.get("lbfgs_steps"):
                    boundary = res["adam_steps"]
            if boundary:
                ax.axvline(boundary + 0.5, color="k", lw=0.8, ls=":", label="Adam → L-BFGS")
            ax.set_xlabel("step k")
            ax.set_ylabel("unweighted PDE + IC + BC (median over seeds)")
            ax.set_title(f"{title}: {'methods' if tname == 'methods' else 'CGMPINN optimizers'}")
            if ax.lines:
                ax.legend(fontsize=7)
        paths.append(_save(plt, fig, folder / f"{p}_loss.png"))

        # CGMPINN prediction / exact / error
        runs = [r for r in selected.get((p, "cgmpinn"), []) if r.get("prediction")]
        if not runs:
            continue
        run = runs[0]
        try:
            problem = cj.get_problem(
                p,
                **{
                    k: (tuple(v) if isinstance(v, list) else v)
                    for k, v in run["spec"].get("problem_params", {}).items()
                },
            )
        except (TypeError, ValueError):
            problem = cj.get_problem(p)
        g = problem.test_grid()
        pred = np.asarray([tl.dec(v) for v in run["prediction"]["values"]])
        if pred.size != g.points.shape[0]:
            continue
        exact = np.asarray(problem.exact_on(g.points), dtype=np.float64)
        err = np.abs(pred - exact)
        scale_txt = (
            "" if run["spec"]["budget_scale"] == 1 else f", scale {run['spec']['budget_scale']:g}"
        )
        sub = (
            f"CGMPINN seed {run['seed']}{scale_txt}, rel e2 = "
            f"{tl.fmt_sci(run['metrics']['rel_e2'])}"
        )
        if problem.dim == 1:
            x = g.points[:, 0]
            fig, axes = plt.subplots(1, 2, figsize=(11, 4))
            axes[0].plot(x, exact, "k-", lw=1.5, label="exact")
            axes[0].plot(x, pred, "r--", lw=1.2, label="CGMPINN")
            axes[0].set_xlabel(problem.coords[0])
            axes[0].set_ylabel("u")
            axes[0].legend()
            axes[0].set_title(f"{title}: prediction and exact solution")
            axes[1].semilogy(x, np.maximum(err, 1e-16))
            axes[1].set_xlabel(problem.coords[0])
            axes[1].set_ylabel("|û − u|")
            axes[1].set_title("absolute error")
        else:
            fig, axes = plt.subplots(1, 3, figsize=(16, 4.3))
            lims = (float(np.min(exact)), float(np.max(exact)))
            for ax, values, t, cmap, (lo, hi) in zip(
                axes,
                (pred, exact, err),
                ("CGMPINN prediction", "exact solution", "absolute error"),
                ("viridis", "viridis", "magma"),
                (lims, lims, (None, None)),
            ):
                im = ax.pcolormesh(
                    g.axes[0],
                    g.axes[1],
                    values.reshape(g.shape).T,
                    shading="auto",
                    cmap=cmap,
                    vmin=lo,
                    vmax=hi,
                )
                ax.set_xlabel(problem.coords[0])
                ax.set_ylabel(problem.coords[1])
                ax.set_title(t)
                fig.colorbar(im, ax=ax)
        fig.suptitle(f"{title}: {sub}", fontsize=10)
        paths.append(_save(plt, fig, folder / f"{p}_cgmpinn.png"))
    return paths


def _rel_e2_figure(plt, selected: dict, p: str, title: str, folder: Path) -> Path:
    """Relative e2 of every run of problem ``p`` (one dot per seed, the median as a bar), the
    methods table's variants then the optimizer variants: needs only the compact record."""
    variants = [v for _, v, _ in tl.TABLES["methods"]]
    variants += [v for _, v, _ in tl.TABLES["optimizers"] if v not in variants]
    rows = [(tl.VARIANTS[v][0], v) for v in variants]
    fig, ax = plt.subplots(figsize=(9, 4.8))
    labels = []
    for i, (label, v) in enumerate(rows):
        labels.append(label)
        vals = [tl.dec(r["metrics"]["rel_e2"]) for r in selected.get((p, v), [])]
        if not vals:
            continue
        shown = [x if np.isfinite(x) else np.nan for x in vals]
        ax.scatter(
            [i] * len(shown), shown, s=14, color="C0" if v.startswith("cgmpinn") else "C1", zorder=3
        )
        med = tl.stats(vals)["median"]
        if np.isfinite(med):
            ax.hlines(med, i - 0.3, i + 0.3, color="k", lw=1.2, zorder=4)
    ax.set_yscale("log")
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=35, ha="right", fontsize=8)
    ax.set_ylabel("relative e2 (dots: seeds, bar: median)")
    ax.set_title(f"{title}: relative e2 per run (non-finite runs not shown)")
    ax.grid(axis="y", which="major", lw=0.3)
    return _save(plt, fig, folder / f"{p}_rel_e2.png")


def _save(plt, fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
