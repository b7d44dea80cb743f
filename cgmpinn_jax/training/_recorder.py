"""What a run records and reports between chunks: the histories (`Recorder`), the
progress lines and [`Progress`][cgmpinn_jax.training.Progress] records, and the test-grid error
tracker."""

from __future__ import annotations

import time
from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..problems import Problem
from ._records import ChunkHistory, History

__all__ = [
    "Recorder",
    "Progress",
    "format_seconds",
    "progress_line",
    "member_history",
    "ErrorTracker",
]


class Recorder:
    """Collects chunk histories (leading member axis) into the arrays of
    [`History`][cgmpinn_jax.History]."""

    def __init__(self, lead):
        self.lead = lead
        self.rows: dict = {k: [] for k in ("k", "loss", "terms", "raw", "lambdas", "evals")}
        self.refresh: dict = {k: [] for k in ("k", "tau", "spread", "status")}
        self.weights: list = []
        self.coeffs: list = []  # inverse problems: (k, (B, U) coefficient values) at chunk ends

    def add_coeffs(self, problem, k: int, params) -> None:
        """The unknown coefficients' values after step ``k`` (inverse problems only)."""
        if getattr(params, "coeffs", None) is not None:
            self.coeffs.append((k, self.lead(problem.coefficient_array(params.coeffs))))

    def add(self, chunk, h: ChunkHistory, w) -> tuple[int, np.ndarray]:
        n_done = self.lead(h.n_done).reshape(-1)
        n = int(n_done.max())
        past = np.arange(n)[None, :] >= n_done[:, None]  # steps a stopped member did not take
        self.rows["k"].append(np.arange(chunk.first_k, chunk.first_k + n))
        for name in ("loss", "terms", "raw", "lambdas"):
            arr = self.lead(getattr(h, name))[:, :n].astype(float)
            arr[past] = np.nan
            self.rows[name].append(arr)
        evals = self.lead(h.evals)[:, :n].astype(np.int64)
        evals[past] = 0
        self.rows["evals"].append(evals)
        self.refresh["k"].append(chunk.tau_k)
        for name, field in (("tau", "tau"), ("spread", "spread"), ("status", "weighting_status")):
            self.refresh[name].append(self.lead(getattr(h, field)).reshape(-1))
        self.weights.append(self.lead(w))
        return n, n_done

    def history(self, B: int, C: int, snapshot_refreshes: int) -> dict:
        def cat(xs, axis, shape):
            return np.concatenate(xs, axis=axis) if xs else np.zeros(shape)

        def stack(xs, dt=float):
            return np.stack(xs, 1).astype(dt) if xs else np.zeros((B, 0), dt)

        n_snap = len(self.weights)
        idx = (
            sorted(
                set(
                    np.linspace(0, n_snap - 1, min(snapshot_refreshes, n_snap))
                    .round()
                    .astype(int)
                    .tolist()
                )
            )
            if n_snap
            else []
        )
        coeffs = (
            {}
            if not self.coeffs
            else dict(
                coeff_k=np.asarray([k for k, _ in self.coeffs], np.int64),
                coeffs=np.stack([v.reshape(B, -1) for _, v in self.coeffs], 1).astype(float),
            )
        )
        return dict(
            **coeffs,
            k=cat(self.rows["k"], 0, (0,)).astype(np.int64),
            loss=cat(self.rows["loss"], 1, (B, 0)),
            terms=cat(self.rows["terms"], 1, (B, 0, C)),
            raw=cat(self.rows["raw"], 1, (B, 0, C)),
            lambdas=cat(self.rows["lambdas"], 1, (B, 0, C)),
            evals=cat(self.rows["evals"], 1, (B, 0)).astype(np.int64),
            refresh_k=np.asarray(self.refresh["k"], np.int64),
            refresh_tau=stack(self.refresh["tau"]),
            refresh_spread=stack(self.refresh["spread"]),
            refresh_status=stack(self.refresh["status"], np.int64),
            snapshots={i: self.weights[i] for i in idx},
        )


class Progress(NamedTuple):
    """Where a run is, after a chunk: what [`train`][cgmpinn_jax.train] passes to its
    ``progress`` callback, e.g. to draw a progress bar.

    Attributes:
        stage: the stage's key: ``"adam"``, ``"lbfgs"`` (the second stage, whichever member
            runs it), or a later stage's name.
        done: the steps of this stage run so far.
        total: the stage's budget.
        loss: the objective at the last step (the median over the members in a sweep).
        elapsed: the seconds spent in this stage so far.
        coeffs: inverse problems only (else ``None``): coefficient name -> its current value.

    Examples:
        >>> seen = []
        >>> def bar(p: Progress) -> None:
        ...     seen.append(f"{p.stage} {p.done}/{p.total} loss={p.loss:.2e}")
        >>> bar(Progress("adam", 200, 5000, 0.0123, 1.5))
        >>> seen
        ['adam 200/5000 loss=1.23e-02']
    """

    stage: str
    done: int
    total: int
    loss: float
    elapsed: float
    coeffs: dict | None = None


def format_seconds(s: float) -> str:
    """``"42 s"``, ``"3 min 05 s"``, ``"1 h 02 min"``."""
    s = max(0.0, float(s))
    if s < 60:
        return f"{s:.0f} s"
    if s < 3600:
        return f"{int(s // 60)} min {int(s % 60):02d} s"
    return f"{int(s // 3600)} h {int(s % 3600 // 60):02d} min"


def progress_line(
    emit, tag, stage, k, tau, rec: Recorder, names, batched, weighted=True, where: str = ""
):
    """One progress line; tau and the weights' spread only for a method that weights its points."""
    cur = f" tau={tau:.3f}" if weighted else ""
    if batched:
        emit(
            f"{tag} {stage:5s} k={k:6d}{cur} median loss over {rec.rows['loss'][-1].shape[0]} runs="
            f"{np.nanmedian(rec.rows['loss'][-1][:, -1]):.3e}{where}"
        )
    else:
        terms = " ".join(f"{n}={float(v):.3e}" for n, v in zip(names, rec.rows["raw"][-1][0, -1]))
        spread = f" w_spread={rec.refresh['spread'][-1][0]:.2f}" if weighted else ""
        emit(
            f"{tag} {stage:5s} k={k:6d}{cur} loss={rec.rows['loss'][-1][0, -1]:.3e} "
            f"{terms}{spread}{where}"
        )


def member_history(h: dict, b: int, errors: dict | None = None) -> History:
    """Member ``b``'s [`History`][cgmpinn_jax.History] from a run's history arrays (``errors``: the
    ``error_*`` arrays of a single run's `ErrorTracker`)."""
    per = {
        k: (v if k in ("k", "refresh_k", "coeff_k") else v[b])
        for k, v in h.items()
        if k != "snapshots"
    }
    return History(**per, **(errors or {}), snapshots={i: v[b] for i, v in h["snapshots"].items()})


class ErrorTracker:
    """``tracker(k, params)``: the relative e2 on the test grid after step ``k`` and the
    seconds since ``t0`` (one jitted forward pass of the test grid per call)."""

    def __init__(self, problem: Problem, static, t0: float):
        self.t0 = t0
        self.rows: list[tuple[int, float, float]] = []
        self._fns: dict = {}
        self._problem, self._static = problem, static

    def _fn(self):
        dtype = jnp.zeros(()).dtype  # the stage's precision scope
        if dtype not in self._fns:
            truth = self._problem.truth(dtype)
            if truth is None:  # nothing to compare with: the tracked error is NaN
                self._fns[dtype] = lambda params: jnp.nan
                return self._fns[dtype]
            pts = jnp.asarray(truth.points, dtype)
            exact = jnp.asarray(truth.values, dtype)

            def rel(params):
                pred = jax.vmap(eqx.combine(params, self._static).model)(pts)
                return jnp.sqrt(jnp.mean((pred - exact) ** 2) / jnp.mean(exact**2))

            self._fns[dtype] = jax.jit(rel)
        return self._fns[dtype]

    def __call__(self, k: int, params) -> None:
        e = float(self._fn()(params))
        self.rows.append((k, time.perf_counter() - self.t0, e))

    def arrays(self) -> dict:
        a = np.asarray(self.rows, float).reshape(-1, 3)
        return {
            "error_k": a[:, 0].astype(np.int64),
            "error_seconds": a[:, 1],
            "error_rel_e2": a[:, 2],
        }
