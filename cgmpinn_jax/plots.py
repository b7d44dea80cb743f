"""Figures for a trained run (needs the optional ``plot`` extra: matplotlib).

``plot_result(result, folder)`` writes

* ``solution.png``: prediction and exact or reference solution (curves in 1-D, fields in 2-D,
  one row per field of a system),
* ``error.png``: pointwise absolute error (none without an exact solution or a reference),
* ``loss.png``: the loss curve with the Adam / L-BFGS boundary marked,
* ``weights.png``: the per-point PDE weights at a few refreshes,
* ``unknowns.png`` (inverse problems only): each unknown coefficient's trajectory and its
  true value (`plot_unknowns`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["plot_result", "plot_unknowns", "require_matplotlib"]


def require_matplotlib():
    """Import matplotlib with its non-interactive ``Agg`` backend, for writing files.

    Returns:
        The ``matplotlib.pyplot`` module.

    Raises:
        ImportError: matplotlib is not installed; the message says how to install it
            (``pip install 'cgmpinn-jax[plot]'``).
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("plots need matplotlib: pip install 'cgmpinn-jax[plot]'") from e
    return plt


def plot_result(result, folder: str | Path) -> list[Path]:
    """Write the figures of a trained run as PNG files.

    The files, in ``folder``:

    * ``solution.png``: the prediction next to what the metrics compared it with
      ([`truth`][cgmpinn_jax.Problem.truth]: the exact solution on the test grid, or the
      reference data at its own points, scattered); curves in 1-D, colour maps in 2-D, one
      row per field of a system; the prediction alone for a problem with neither;
    * ``error.png``: the pointwise absolute error ``|u_hat - u|`` (not written without an exact
      solution or reference);
    * ``loss.png``: the loss per step (the objective and the unweighted sum of the terms), the
      switch from Adam to the second stage marked;
    * ``weights.png``: the per-point PDE weights at the weight refreshes (only for a method
      that weights its points);
    * ``unknowns.png``: for an inverse run, as [`plot_unknowns`][cgmpinn_jax.plots.plot_unknowns].

    Problems in more than two coordinates get no solution or error figure.

    Args:
        result: a [`TrainResult`][cgmpinn_jax.TrainResult].
        folder: the folder to write into (created if needed), a string or ``pathlib.Path``.

    Returns:
        The paths of the files written, a list of ``pathlib.Path``.

    Raises:
        ImportError: matplotlib is not installed (``pip install 'cgmpinn-jax[plot]'``).

    Examples:
        >>> paths = plot_result(result, "runs/demo")  # doctest: +SKIP
        >>> [p.name for p in paths]  # doctest: +SKIP
        ['solution.png', 'error.png', 'loss.png', 'weights.png']
    """
    plt = require_matplotlib()
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    problem = result.problem
    truth = problem.truth()
    grid = problem.test_grid() if truth is None or truth.against == "exact" else None
    pts = np.asarray(grid.points if grid is not None else truth.points)
    paths = []
    if problem.dim <= 2:
        pred = _columns(result.predict(pts))
        ref = None if truth is None else _columns(np.asarray(truth.values))
        label = "no exact solution or reference" if truth is None else truth.against.split(" (")[0]
        paths.append(
            _plot_solution(plt, result, grid, pts, pred, ref, label, folder / "solution.png")
        )
        if ref is not None:
            paths.append(
                _plot_error(plt, result, grid, pts, np.abs(pred - ref), folder / "error.png")
            )
    paths.append(_plot_loss(plt, result, folder / "loss.png"))
    if (
        result.method.weights_points
    ):  # PINN and the other unweighted methods have no weights to draw
        paths.append(_plot_weights(plt, result, folder / "weights.png"))
    if getattr(result, "unknowns", None) is not None:
        paths.append(plot_unknowns(result, folder))
    return paths


def _columns(values) -> np.ndarray:
    """``(M, F)`` from ``(M,)`` or ``(M, F)``."""
    v = np.asarray(values, np.float64)
    return v[:, None] if v.ndim == 1 else v


def _panel(fig, ax, grid, pts, values, coords, title, cmap=None):
    """A 2-D field: a mesh on a tensor grid, else a scatter of the points."""
    if grid is not None and grid.axes and int(np.prod(grid.shape)) == pts.shape[0]:
        im = ax.pcolormesh(
            grid.axes[0], grid.axes[1], values.reshape(grid.shape).T, shading="auto", cmap=cmap
        )
    else:
        im = ax.scatter(pts[:, 0], pts[:, 1], c=values, s=4, cmap=cmap)
        ax.set_aspect("equal")
    ax.set_xlabel(coords[0])
    ax.set_ylabel(coords[1])
    ax.set_title(title)
    fig.colorbar(im, ax=ax)


def _plot_solution(plt, result, grid, pts, pred, ref, label, path):
    """``solution.png``: prediction and exact / reference solution (curves in 1-D, fields in
    2-D, one row per field)."""
    problem, coords, fields = result.problem, result.problem.coords, result.problem.fields
    if problem.dim == 1:
        order = np.argsort(pts[:, 0])
        fig, ax = plt.subplots(figsize=(6, 4))
        for j, f in enumerate(fields):
            if ref is not None:
                ax.plot(pts[order, 0], ref[order, j], "k-", label=f"{f} {label}")
            ax.plot(pts[order, 0], pred[order, j], "--", label=f"{f} {result.method.name}")
        ax.set_xlabel(coords[0])
        ax.legend()
        ax.set_title(f"{problem.name}: prediction vs {label}")
        return _save(fig, path, plt)
    cols = 1 if ref is None else 2
    fig, axes = plt.subplots(
        len(fields), cols, figsize=(5.5 * cols, 4 * len(fields)), squeeze=False
    )
    for j, f in enumerate(fields):
        _panel(
            fig, axes[j, 0], grid, pts, pred[:, j], coords, f"{f}: {result.method.name} prediction"
        )
        if ref is not None:
            _panel(fig, axes[j, 1], grid, pts, ref[:, j], coords, f"{f}: {label}")
    return _save(fig, path, plt)


def _plot_error(plt, result, grid, pts, err, path):
    """``error.png``: pointwise absolute error (log curve in 1-D, field in 2-D, one panel per
    field)."""
    problem, coords, m = result.problem, result.problem.coords, result.metrics
    per = dict(m.per_field) if m.per_field else {problem.fields[0]: m}
    if problem.dim == 1:
        fig, ax = plt.subplots(figsize=(6, 4))
        order = np.argsort(pts[:, 0])
        for j, f in enumerate(problem.fields):
            ax.semilogy(
                pts[order, 0],
                np.maximum(err[order, j], 1e-16),
                label=f"{f} (rel e2 = {per[f].rel_e2:.2e})",
            )
        ax.set_xlabel(coords[0])
        ax.set_ylabel("|u - u*|")
        ax.legend()
        ax.set_title(f"pointwise error (rel e2 = {m.rel_e2:.2e})")
        return _save(fig, path, plt)
    n = len(problem.fields)
    fig, axes = plt.subplots(1, n, figsize=(6 * n, 4.5), squeeze=False)
    for j, f in enumerate(problem.fields):
        _panel(
            fig,
            axes[0, j],
            grid,
            pts,
            err[:, j],
            coords,
            f"|{f} - {f}*| (rel e2 = {per[f].rel_e2:.2e})",
            cmap="magma",
        )
    return _save(fig, path, plt)


def _stage_boundaries(result) -> list[tuple[float, str]]:
    """``(x, "Adam -> L-BFGS")`` at each boundary between two stages that ran steps."""
    out, base, prev = [], 0, None
    for name, budget in result.plan:
        if budget and prev is not None:
            out.append((base + 0.5, f"{result.stage_label(prev)} -> {result.stage_label(name)}"))
        if budget:
            prev = name
        base += budget
    return out


def _plot_loss(plt, result, path):
    """``loss.png``: objective and unweighted loss per step, the boundaries between stages
    marked."""
    h = result.history
    fig, ax = plt.subplots(figsize=(7, 4))
    if h.k.size:
        ax.semilogy(h.k, np.where(h.loss > 0, h.loss, np.nan), lw=0.8, label="objective")
        terms = "+".join(t.upper() for t in result.problem.loss_terms)  # the problem's own terms
        ax.semilogy(
            h.k,
            np.where(h.raw.sum(1) > 0, h.raw.sum(1), np.nan),
            lw=0.8,
            alpha=0.7,
            label=f"unweighted {terms}",
        )
    for x, label in _stage_boundaries(result):
        ax.axvline(x, color="k", ls="--", lw=1, label=label)
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
        ax.text(
            0.5,
            0.5,
            "no weight refreshes in this run",
            ha="center",
            va="center",
            transform=ax.transAxes,
        )
    ax.set_title("per-point PDE weights at refreshes")
    return _save(fig, path, plt)


def plot_unknowns(result, folder: str | Path) -> Path:
    """Write ``unknowns.png``: the trajectory of each unknown coefficient of an inverse run.

    One panel per unknown: its value at the start and after every chunk of steps
    (``history.coeff_k``), the true value dashed, the final estimate and its relative error in
    the title.

    Args:
        result: the [`TrainResult`][cgmpinn_jax.TrainResult] of an inverse problem (its
            ``unknowns`` set).
        folder: the folder to write into (created if needed), a string or ``pathlib.Path``.

    Returns:
        The path of ``unknowns.png``.

    Raises:
        ImportError: matplotlib is not installed.
    """
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
        for x, label in _stage_boundaries(result):
            ax.axvline(x, color="grey", ls=":", lw=1, label=label)
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
