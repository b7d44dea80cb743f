"""Figures for a trained run (needs the optional ``plot`` extra: matplotlib).

``plot_result(result, folder)`` writes

* ``solution.png``: prediction and exact solution (curves in 1-D, fields in 2-D),
* ``error.png``: pointwise absolute error,
* ``loss.png``: the loss curve with the Adam / L-BFGS boundary marked,
* ``weights.png``: the per-point PDE weights at a few refreshes,
* ``unknowns.png`` (inverse problems only): each unknown coefficient's trajectory and its
  true value (:func:`plot_unknowns`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["plot_result", "plot_unknowns", "require_matplotlib"]


def require_matplotlib():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("plots need matplotlib: pip install 'cgmpinn-jax[plot]'") from e
    return plt


def plot_result(result, folder: str | Path) -> list[Path]:
    """Write the PNGs into ``folder`` (solution, error, loss; the per-point weights for a
    method that weights its points; the unknowns of an inverse run); returns their paths."""
    plt = require_matplotlib()
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    grid = result.problem.test_grid()
    pred = result.predict(grid.points)
    exact = np.asarray(result.problem.exact_on(grid.points))
    paths = [
        _plot_solution(plt, result, grid, pred, exact, folder / "solution.png"),
        _plot_error(plt, result, grid, np.abs(pred - exact), folder / "error.png"),
        _plot_loss(plt, result, folder / "loss.png"),
    ]
    if result.method.weights_points:  # PINN and the other unweighted methods have no weights to draw
        paths.append(_plot_weights(plt, result, folder / "weights.png"))
    if getattr(result, "unknowns", None) is not None:
        paths.append(plot_unknowns(result, folder))
    return paths


def _plot_solution(plt, result, grid, pred, exact, path):
    """``solution.png``: prediction and exact solution (curves in 1-D, two fields in 2-D)."""
    problem, coords = result.problem, result.problem.coords
    if problem.dim == 1:
        x = grid.points[:, 0]
        fig, ax = plt.subplots(figsize=(6, 4))
        ax.plot(x, exact, "k-", label="exact")
        ax.plot(x, pred, "r--", label=result.method.name)
        ax.set_xlabel(coords[0])
        ax.set_ylabel("u")
        ax.legend()
        ax.set_title(f"{problem.name}: prediction vs exact")
        return _save(fig, path, plt)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, values, title in zip(axes, (pred, exact), (f"{result.method.name} prediction", "exact")):
        im = ax.pcolormesh(grid.axes[0], grid.axes[1], values.reshape(grid.shape).T, shading="auto")
        ax.set_xlabel(coords[0])
        ax.set_ylabel(coords[1])
        ax.set_title(title)
        fig.colorbar(im, ax=ax)
    return _save(fig, path, plt)


def _plot_error(plt, result, grid, err, path):
    """``error.png``: pointwise absolute error (log curve in 1-D, field in 2-D)."""
    problem, coords = result.problem, result.problem.coords
    if problem.dim == 1:
        fig, ax = plt.subplots(figsize=(6, 4))
        ax.semilogy(grid.points[:, 0], np.maximum(err, 1e-16))
        ax.set_xlabel(coords[0])
        ax.set_ylabel("|u - u*|")
        ax.set_title(f"pointwise error (rel e2 = {result.metrics.rel_e2:.2e})")
        return _save(fig, path, plt)
    fig, ax = plt.subplots(figsize=(6, 4.5))
    im = ax.pcolormesh(grid.axes[0], grid.axes[1], err.reshape(grid.shape).T, shading="auto", cmap="magma")
    ax.set_xlabel(coords[0])
    ax.set_ylabel(coords[1])
    ax.set_title(f"|u - u*| (rel e2 = {result.metrics.rel_e2:.2e})")
    fig.colorbar(im, ax=ax)
    return _save(fig, path, plt)


def _plot_loss(plt, result, path):
    """``loss.png``: objective and unweighted loss per step, the Adam / L-BFGS boundary marked."""
    h = result.history
    fig, ax = plt.subplots(figsize=(7, 4))
    if h.k.size:
        ax.semilogy(h.k, np.where(h.loss > 0, h.loss, np.nan), lw=0.8, label="objective")
        terms = "+".join(t.upper() for t in result.problem.loss_terms)  # the problem's own terms
        ax.semilogy(h.k, np.where(h.raw.sum(1) > 0, h.raw.sum(1), np.nan), lw=0.8, alpha=0.7,
                    label=f"unweighted {terms}")
    if result.adam_steps and result.lbfgs_steps:
        ax.axvline(result.adam_steps + 0.5, color="k", ls="--", lw=1, label=f"Adam -> {result.second_stage_name}")
    ax.set_xlabel("step k")
    ax.set_ylabel("loss")
    if ax.get_legend_handles_labels()[0]:  # nothing to label in a run with no recorded steps
        ax.legend()
    ax.set_title(f"{result.problem.name} / {result.method.name}: loss")
    return _save(fig, path, plt)


def _plot_weights(plt, result, path):
    """``weights.png``: the per-point PDE weights at the recorded refreshes (along x in 1-D,
    sorted by weight in 2-D)."""
    h, dim = result.history, result.problem.dim
    fig, ax = plt.subplots(figsize=(7, 4))
    pts = np.asarray(result.batch["pde"][0])
    for i, wv in h.snapshots.items():
        label = f"refresh k={h.refresh_k[i]} (tau={h.refresh_tau[i]:.2f})"
        if dim == 1:
            order = np.argsort(pts[:, 0])
            ax.plot(pts[order, 0], wv[order], lw=0.8, label=label)
        else:
            ax.plot(np.sort(wv), lw=0.8, label=label)
    ax.set_xlabel(result.problem.coords[0] if dim == 1 else "collocation points, sorted by weight")
    ax.set_ylabel("w_i")
    if h.snapshots:  # a PINN (no weighting) or a run without refreshes has no snapshots
        ax.legend(fontsize=7)
    else:
        ax.text(0.5, 0.5, "no weight refreshes in this run", ha="center", va="center", transform=ax.transAxes)
    ax.set_title("per-point PDE weights at refreshes")
    return _save(fig, path, plt)


def plot_unknowns(result, folder: str | Path) -> Path:
    """``unknowns.png``: one panel per unknown coefficient of an inverse run, its value at the
    start and after every chunk (``history.coeff_k``), the true value dashed."""
    plt = require_matplotlib()
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    unk, h = result.unknowns, result.history
    n = len(unk.names)
    fig, axes = plt.subplots(1, n, figsize=(4.2 * n, 3.6), squeeze=False)
    for j, (ax, name) in enumerate(zip(axes[0], unk.names)):
        if h.coeffs is not None:
            ax.plot(h.coeff_k, h.coeffs[:, j], "o-", ms=2.5, lw=1, label="estimate")
        ax.axhline(unk.true[j], color="k", ls="--", lw=1, label=f"true {unk.true[j]:.4g}")
        if result.adam_steps and result.lbfgs_steps:
            ax.axvline(result.adam_steps + 0.5, color="grey", ls=":", lw=1, label=f"Adam -> {result.second_stage_name}")
        ax.set_xlabel("step k")
        ax.set_ylabel(name)
        ax.set_title(f"{name}: {unk.estimate[j]:.4g} (rel. error {unk.rel_error[j]:.1e})")
        ax.legend(fontsize=7)
    return _save(fig, folder / "unknowns.png", plt)


def _save(fig, path, plt):
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
