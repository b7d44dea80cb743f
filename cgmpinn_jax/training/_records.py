"""Typed records at the engine's boundaries: stage statuses, chunk and run histories, results.

A chunk (one jitted call of up to k_upd steps) returns a
[`ChunkHistory`][cgmpinn_jax.training.ChunkHistory]; the host loop concatenates the chunks of a
run into a [`History`][cgmpinn_jax.History]; [`train`][cgmpinn_jax.train] returns a
[`TrainResult`][cgmpinn_jax.TrainResult].
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple, Optional

import jax
import numpy as np

from .. import metrics as metrics_lib
from ..config import TrainConfig
from ..stages import STAGES, StageStatus
from ..methods import Method
from ..problems import Problem

__all__ = ["StageStatus", "StageRecord", "ChunkHistory", "History", "TrainResult"]


def stage_label(name: str) -> str:
    """How summaries name a stage: its class's ``label`` ("Adam", "L-BFGS", "Gauss-Newton", ...)."""
    return STAGES[name].label


@dataclasses.dataclass(frozen=True)
class StageRecord:
    """One stage of a finished run, as [`TrainResult.stages`][cgmpinn_jax.TrainResult.stages]
    lists them (in the order they ran).

    Attributes:
        name: the stage's key, its solver's name: ``"adam"``, ``"lbfgs"``, ``"gauss_newton"``,
            ``"bfgs"``, ``"ssbfgs"`` or ``"ssbroyden"``.
        label: how summaries name it: ``"Adam"``, ``"L-BFGS"``, ``"Gauss-Newton"``,
            ``"dense bfgs"``, ...
        status: why the stage ended (a [`StageStatus`][cgmpinn_jax.StageStatus]).
        iterations: the steps (Adam) or iterations (a later stage) it ran.
        budget: the steps the schedule gave it.
        evaluations: the loss+gradient evaluations it spent (an Adam step is one; a
            second-stage iteration is one plus its line search's).
        seconds: its wall time without compilation; ``None`` for a stage that ran before the
            run was resumed from a checkpoint.

    Examples:
        >>> from cgmpinn_jax import StageStatus
        >>> StageRecord("adam", "Adam", StageStatus.COMPLETED, 5000, 5000, 5000).line()
        'Adam: 5,000 of 5,000 steps, ran its whole budget (COMPLETED)'
    """

    name: str
    label: str
    status: StageStatus
    iterations: int
    budget: int
    evaluations: int
    seconds: Optional[float] = None

    def line(self) -> str:
        """One line of a summary: the stage's label, the steps it ran of its budget and why it
        ended, e.g. ``"L-BFGS: 2,275 of 10,000 iterations, stopped: loss stalled (LOSS_TOL)"``."""
        unit = "steps" if self.name == "adam" else "iterations"
        return (
            f"{self.label}: {self.iterations:,} of {self.budget:,} {unit}, {self.status.describe()}"
        )


class ChunkHistory(NamedTuple):
    """What one chunk (one compiled call: a refresh of the per-point weights, then up to L
    steps of one stage) records: a row per step, and its refresh. Rows past ``n_done`` are
    padding. The same record for every stage (an Adam step costs one evaluation). C is the
    number of loss terms; in a sweep every array has a leading member axis.

    Attributes:
        loss: ``(L,)`` the objective at the start of each step.
        terms: ``(L, C)`` the balanced loss terms (the PDE term curriculum-weighted).
        raw: ``(L, C)`` the unweighted loss terms.
        lambdas: ``(L, C)`` the ReLoBRaLo weights each step used.
        evals: ``(L,)`` int32 loss+gradient evaluations in each step.
        n_done: ``()`` int32 the steps taken.
        tau: ``()`` the curriculum parameter of the chunk's refresh.
        spread: ``()`` ``max(w) / min(w)`` of the per-point weights after the refresh.
        weighting_status: ``()`` int32 the refresh's status (0: the mixture fit was used).
    """

    loss: jax.Array
    terms: jax.Array
    raw: jax.Array
    lambdas: jax.Array
    evals: jax.Array
    n_done: jax.Array
    tau: jax.Array
    spread: jax.Array
    weighting_status: jax.Array


class History(NamedTuple):
    """A run's per-step records (``TrainResult.history``): one row per outer step, like the
    reference's loss curve, and one per weight refresh. S is the number of steps run (all
    stages), C the number of loss terms, R the number of refreshes, N the number of PDE points.

    Attributes:
        k: ``(S,)`` int the global step (1-based, continued across stages).
        loss: ``(S,)`` the objective at the start of the step (as the reference logs it).
        terms: ``(S, C)`` the balanced loss terms (the PDE term curriculum-weighted).
        raw: ``(S, C)`` the unweighted loss terms.
        lambdas: ``(S, C)`` the ReLoBRaLo weights the step used.
        evals: ``(S,)`` int the loss+gradient evaluations in the step.
        refresh_k: ``(R,)`` int the global step whose tau each refresh used.
        refresh_tau: ``(R,)`` the curriculum parameter tau of each refresh.
        refresh_spread: ``(R,)`` ``max(w) / min(w)`` of the per-point weights after each refresh.
        refresh_status: ``(R,)`` int the weighting status of each refresh (0: the mixture fit
            was used).
        snapshots: refresh index -> ``(N,)`` per-point weights, for a few evenly spaced
            refreshes (``train(..., snapshot_refreshes=...)``).
        coeff_k: inverse problems only (else ``None``): ``(R',)`` int the step after which
            each row of ``coeffs`` was taken (0: the initial guess); one row at the start and
            one after every chunk.
        coeffs: inverse problems only: ``(R', U)`` the unknown coefficients' values, in the
            order of ``problem.unknowns``.
        error_k: ``train(..., track_error_every=...)`` only (else ``None``): ``(E,)`` int the
            step after which each error was measured.
        error_seconds: ``(E,)`` seconds since the run started (compilation included).
        error_rel_e2: ``(E,)`` the relative e2 on the test grid.
    """

    k: np.ndarray
    loss: np.ndarray
    terms: np.ndarray
    raw: np.ndarray
    lambdas: np.ndarray
    evals: np.ndarray
    refresh_k: np.ndarray
    refresh_tau: np.ndarray
    refresh_spread: np.ndarray
    refresh_status: np.ndarray
    snapshots: dict
    coeff_k: Optional[np.ndarray] = None
    coeffs: Optional[np.ndarray] = None
    error_k: Optional[np.ndarray] = None
    error_seconds: Optional[np.ndarray] = None
    error_rel_e2: Optional[np.ndarray] = None

    def to_dict(self) -> dict:
        """The history as JSON-able lists: every array field that is set, and ``snapshots``
        with string keys."""
        d = {
            k: np.asarray(v).tolist()
            for k, v in self._asdict().items()
            if k != "snapshots" and v is not None
        }
        d["snapshots"] = {str(k): np.asarray(v).tolist() for k, v in self.snapshots.items()}
        return d


@dataclasses.dataclass
class TrainResult:
    """The outcome of [`train`][cgmpinn_jax.train] (and of [`infer`][cgmpinn_jax.infer] and
    [`resume`][cgmpinn_jax.resume]): the trained network, its errors, the histories and the
    timings. [`save_result`][cgmpinn_jax.save_result] writes it to a folder.

    Attributes:
        problem: the [`Problem`][cgmpinn_jax.Problem] trained on.
        method: the [`Method`][cgmpinn_jax.Method] trained.
        config: the run's [`TrainConfig`][cgmpinn_jax.TrainConfig].
        model: the trained network, an equinox Module that maps one point, a ``(d,)`` array,
            to the solution there (use [`predict`][cgmpinn_jax.TrainResult.predict] for many).
        log_vars: lbPINN only (else ``None``): ``(C,)`` the trained balance parameters s_c,
            one per loss term.
        metrics: the errors on the problem's test grid (a [`Metrics`][cgmpinn_jax.Metrics]:
            ``e2``, ``rel_e2``, ``e_inf``, ...).
        e_loss: the method's training objective at the end, on the training points, with the
            last per-point weights and lambdas (docs/reference-code.md §9).
        history: the per-step and per-refresh records (a [`History`][cgmpinn_jax.History]).
        statuses: stage name -> [`StageStatus`][cgmpinn_jax.StageStatus], in the order the
            stages ran.
        compile_seconds: the seconds the run waited for compilations (not a background
            compilation hidden behind Adam).
        run_seconds: the rest of the run's wall time.
        k_upd: the steps between two refreshes of the per-point weights.
        relobralo: the stages ReLoBRaLo ran in: ``"both"``, ``"adam"`` or ``"none"``.
        seed: the int seed the run was given (``None`` when given a PRNG key).
        batch: the training points and their targets, as
            [`Problem.sample`][cgmpinn_jax.Problem.sample] drew them: ``{"pde": (points (N, d),
            source (N,)), term: ((points, target), ...)}`` for each boundary or initial term.
        unknowns: inverse problems only (else ``None``): an
            [`UnknownsResult`][cgmpinn_jax.inverse.UnknownsResult] with each coefficient's
            estimate, true value and error.
        checkpoint_seconds: the seconds spent writing checkpoints (``None``: none were asked
            for).
        stage_seconds: stage name -> its wall seconds without compilation (see
            [`StageRecord`][cgmpinn_jax.StageRecord]).
        plan: ``((stage name, budget), ...)``: the run's stages in order, with their budgets.
        time_limited: whether the run stopped on its time limit (``TrainConfig.time_limit``);
            its checkpoint, if any, resumes it.

    [`train`][cgmpinn_jax.train]'s example makes one.
    """

    problem: Problem
    method: Method
    config: TrainConfig
    model: Any
    log_vars: Optional[np.ndarray]
    metrics: metrics_lib.Metrics
    e_loss: float
    history: History
    statuses: dict
    compile_seconds: float
    run_seconds: float
    k_upd: int
    relobralo: str
    seed: Optional[int] = None
    batch: Any = None
    unknowns: Any = None
    checkpoint_seconds: Optional[float] = None
    stage_seconds: Optional[dict] = None
    plan: tuple = ()
    time_limited: bool = False

    @property
    def budgets(self) -> dict:
        """Stage name -> its budget (steps or iterations), in the order the stages ran."""
        return dict(self.plan)

    def stage_label(self, name: str) -> str:
        """How summaries name a stage: "Adam", "L-BFGS", "Gauss-Newton", ...

        Args:
            name: a stage's key (``"adam"``, ``"lbfgs"``, ``"gauss_newton"``, ...).
        """
        return stage_label(name)

    @property
    def stages(self) -> tuple[StageRecord, ...]:
        """The run's stages, in order: name, status, iterations, evaluations, seconds."""
        k, evals = np.asarray(self.history.k), np.asarray(self.history.evals)
        secs = self.stage_seconds or {}
        out, base = [], 0
        for name, budget in self.plan:
            mine = (k > base) & (k <= base + budget)
            out.append(
                StageRecord(
                    name,
                    self.stage_label(name),
                    self.statuses[name],
                    int(np.sum(mine)),
                    budget,
                    int(np.sum(evals[mine])),
                    secs.get(name),
                )
            )
            base += budget
        return tuple(out)

    def stage_lines(self) -> list[str]:
        """One line per stage: steps run of the budget and why it ended, e.g.
        ``"L-BFGS: 2,275 of 10,000 iterations, stopped: loss stalled (LOSS_TOL)"``."""
        return [s.line() for s in self.stages]

    @property
    def evals_per_iteration(self) -> dict:
        """Stage name -> mean loss+gradient evaluations per iteration, for each stage after Adam
        that ran (an iteration is one evaluation plus its line search's, or its trials)."""
        return {
            r.name: r.evaluations / r.iterations
            for r in self.stages
            if r.name != "adam" and r.iterations
        }

    def predict(self, points) -> np.ndarray:
        """The trained network on many points, in the precision it was trained in.

        Args:
            points: ``(M, d)`` array of points (anything ``jax.numpy.asarray`` takes).

        Returns:
            ``(M,)`` numpy array of the solution's values (``(M, F)`` for a system of F fields).
        """
        from ._precision import precision_scope, run_dtype

        with precision_scope(self.config.precision, "second"):
            pts = jax.numpy.asarray(points, dtype=run_dtype(self.config.precision, "second"))
            return np.asarray(jax.vmap(self.model)(pts))

    def summary(self) -> dict:
        """The run in a flat, JSON-able dict: problem, method, the metrics, e_loss, per stage
        ``<name>_status``, ``<name>_budget``, ``<name>_iterations`` (and, after Adam,
        ``<name>_evals_per_iteration``), the timings and the main settings (an inverse run adds
        its ``unknowns``)."""
        per_stage = {}
        for r in self.stages:
            per_stage.update(
                {
                    f"{r.name}_status": r.status.name,
                    f"{r.name}_budget": r.budget,
                    f"{r.name}_iterations": r.iterations,
                }
            )
            if r.name != "adam":
                per_stage[f"{r.name}_evals_per_iteration"] = self.evals_per_iteration.get(
                    r.name, float("nan")
                )
        return {
            "problem": self.problem.name,
            "method": self.method.name,
            **self.metrics.as_dict(),
            "e_loss": self.e_loss,
            "stages": list(self.budgets),
            **per_stage,
            "compile_seconds": self.compile_seconds,
            "run_seconds": self.run_seconds,
            "k_upd": self.k_upd,
            "relobralo": self.relobralo,
            "precision": self.config.precision,
            "seed": self.seed,
            **({} if self.unknowns is None else {"unknowns": self.unknowns.as_dict()}),
        }
