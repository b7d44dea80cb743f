"""Typed records at the engine's boundaries: stage statuses, chunk and run histories, results.

A chunk (one jitted call of up to k_upd steps) returns a `ChunkHistory`; the host
loop concatenates the chunks of a run into a [`History`][cgmpinn_jax.History]; [`train`][cgmpinn_jax.train]
returns a [`TrainResult`][cgmpinn_jax.TrainResult].
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any, NamedTuple, Optional

import jax
import numpy as np

from .. import metrics as metrics_lib
from ..solvers._protocol import StageStatus
from ..config import TrainConfig
from ..methods import Method
from ..problems import Problem

__all__ = ["StageStatus", "StageRecord", "ChunkHistory", "History", "TrainResult"]


def second_stage_label(kind: str) -> str:
    """A second-stage member's name in summaries: "L-BFGS", "Gauss-Newton" or "dense <kind>"."""
    return {"optax": "L-BFGS", "jaxopt": "L-BFGS", "gauss_newton": "Gauss-Newton"}.get(kind, f"dense {kind}")


def stage_label(config: TrainConfig, name: str) -> str:
    """How summaries name a stage: "Adam", or its member's label ("L-BFGS", ...)."""
    if name == "adam":
        return "Adam"
    return second_stage_label(config.second_stage if name == "lbfgs" else name)


@dataclasses.dataclass(frozen=True)
class StageRecord:
    """One stage of a finished run (``TrainResult.stages``, in the order they ran).

    ``name`` is the stage's key (``"adam"``, ``"lbfgs"``: the second stage, whichever
    member, or a later stage's name from ``TrainConfig.stages``); ``label`` is how summaries
    name it (``"Adam"``, ``"L-BFGS"``, ``"Gauss-Newton"``, ``"dense bfgs"``). ``seconds``: the stage's wall time without compilation (None for a
    stage that ran before the run was resumed from a checkpoint)."""

    name: str
    label: str
    status: StageStatus
    iterations: int  # steps (Adam) or iterations (second stage) run
    budget: int  # steps the schedule gave the stage
    evaluations: int  # loss+gradient evaluations (an Adam step is one)
    seconds: Optional[float] = None

    def line(self) -> str:
        """``"L-BFGS: 2,275 of 10,000 iterations, stopped: loss stalled (LOSS_TOL)"``."""
        unit = "steps" if self.name == "adam" else "iterations"
        return f"{self.label}: {self.iterations:,} of {self.budget:,} {unit}, {self.status.describe()}"


class ChunkHistory(NamedTuple):
    """What one chunk records, per step (rows past ``n_done`` are padding), and its refresh.

    The same record for both stages (Adam steps cost one evaluation each)."""

    loss: jax.Array  # (L,) objective at the start of the step
    terms: jax.Array  # (L, C) balanced terms (PDE curriculum-weighted)
    raw: jax.Array  # (L, C) unweighted terms
    lambdas: jax.Array  # (L, C) ReLoBRaLo weights used in the step
    evals: jax.Array  # (L,) int32 loss+gradient evaluations in the step
    n_done: jax.Array  # () int32 steps taken
    tau: jax.Array  # () tau of the chunk's refresh
    spread: jax.Array  # () max(w) / min(w) after the refresh
    weighting_status: jax.Array  # () int32 status of the refresh (0 = fit used)


class History(NamedTuple):
    """Per-step records (one row per outer step, like the reference's loss curve)."""

    k: np.ndarray  # (S,) global step
    loss: np.ndarray  # (S,) objective at the start of the step (as the reference logs it)
    terms: np.ndarray  # (S, C) balanced terms (PDE curriculum-weighted)
    raw: np.ndarray  # (S, C) unweighted terms
    lambdas: np.ndarray  # (S, C) ReLoBRaLo weights used in the step
    evals: np.ndarray  # (S,) loss+gradient evaluations in the step
    refresh_k: np.ndarray  # (R,) tau_k of each refresh
    refresh_tau: np.ndarray  # (R,)
    refresh_spread: np.ndarray  # (R,) max(w)/min(w) after the refresh
    refresh_status: np.ndarray  # (R,) weighting status code (0 = fit used)
    snapshots: dict  # refresh index -> weights (N,), a few refreshes only
    # inverse problems only (None otherwise): the unknown coefficients at the start and after
    # every chunk (weight refresh), not at every step
    coeff_k: Optional[np.ndarray] = None  # (R,) step after which the row was taken (0 = initial guess)
    coeffs: Optional[np.ndarray] = None  # (R, U) values, in the order of problem.unknowns
    # train(..., track_error_every=...) only: the relative e2 on the test grid after step
    # error_k, error_seconds after the run started (compilation included)
    error_k: Optional[np.ndarray] = None
    error_seconds: Optional[np.ndarray] = None
    error_rel_e2: Optional[np.ndarray] = None

    def to_dict(self) -> dict:
        d = {k: np.asarray(v).tolist() for k, v in self._asdict().items() if k != "snapshots" and v is not None}
        d["snapshots"] = {str(k): np.asarray(v).tolist() for k, v in self.snapshots.items()}
        return d


@dataclasses.dataclass
class TrainResult:
    """The outcome of [`train`][cgmpinn_jax.train]."""

    problem: Problem
    method: Method
    config: TrainConfig
    model: Any  # the trained network (an equinox Module; call it on one point)
    log_vars: Optional[np.ndarray]  # lbPINN's s_c
    metrics: metrics_lib.Metrics
    e_loss: float  # the method's training objective at the end (docs/reference-code.md §9)
    history: History
    statuses: dict  # stage name -> StageStatus, in the order the stages ran
    compile_seconds: float  # seconds the run waited for compilations (not a background one hidden behind Adam)
    run_seconds: float  # the rest of the run's wall time
    adam_steps: int
    lbfgs_steps: int
    k_upd: int
    relobralo: str
    seed: Optional[int] = None
    batch: Any = None  # the training points
    unknowns: Any = None  # inverse problems: an inverse.UnknownsResult (estimates, true values, errors)
    checkpoint_seconds: Optional[float] = None  # seconds spent writing checkpoints (None: none asked for)
    stage_seconds: Optional[dict] = None  # stage name -> wall seconds without compilation (see StageRecord)
    plan: tuple = ()  # ((stage name, budget), ...) in order; () = Adam and the second stage
    time_limited: bool = False  # the run stopped on its time limit (TrainConfig.time_limit); a checkpoint resumes it

    @property
    def _plan(self) -> tuple:
        return self.plan or (("adam", self.adam_steps), ("lbfgs", self.lbfgs_steps))

    @property
    def adam_status(self) -> StageStatus:
        """Deprecated: ``statuses["adam"]`` (or ``stages[0].status``)."""
        warnings.warn("TrainResult.adam_status is deprecated; use result.statuses['adam'] or result.stages",
                      DeprecationWarning, stacklevel=2)
        return self.statuses.get("adam", StageStatus.SKIPPED)

    @property
    def lbfgs_status(self) -> StageStatus:
        """Deprecated: the status of the stage after Adam, ``statuses["lbfgs"]`` in a default run."""
        warnings.warn("TrainResult.lbfgs_status is deprecated; use result.statuses['lbfgs'] or result.stages",
                      DeprecationWarning, stacklevel=2)
        return self._second_status()

    def _second_status(self) -> StageStatus:
        later = [name for name, _ in self._plan if name != "adam"]
        return self.statuses[later[0]] if later else StageStatus.SKIPPED

    @property
    def second_stage_name(self) -> str:
        """The second stage as the summaries name it: "L-BFGS", "Gauss-Newton" or "dense <kind>"."""
        return second_stage_label(self.config.second_stage)

    def stage_label(self, name: str) -> str:
        """How summaries name a stage: "Adam", or its member's label ("L-BFGS", ...)."""
        return stage_label(self.config, name)

    @property
    def stages(self) -> tuple[StageRecord, ...]:
        """The run's stages, in order: name, status, iterations, evaluations, seconds."""
        k, evals = np.asarray(self.history.k), np.asarray(self.history.evals)
        secs = self.stage_seconds or {}
        out, base = [], 0
        for name, budget in self._plan:
            mine = (k > base) & (k <= base + budget)
            out.append(StageRecord(name, self.stage_label(name), self.statuses[name], int(np.sum(mine)), budget,
                                   int(np.sum(evals[mine])), secs.get(name)))
            base += budget
        return tuple(out)

    def stage_lines(self) -> list[str]:
        """One line per stage: steps run of the budget and why it ended, e.g.
        ``"L-BFGS: 2,275 of 10,000 iterations, stopped: loss stalled (LOSS_TOL)"``."""
        return [s.line() for s in self.stages]

    @property
    def evals_per_lbfgs_iteration(self) -> float:
        """Mean loss+gradient evaluations per iteration of the stages after Adam."""
        h = self.history
        n_adam = int(np.sum(h.k <= dict(self._plan).get("adam", 0)))
        e = h.evals[n_adam:]
        return float(np.mean(e)) if e.size else float("nan")

    def predict(self, points) -> np.ndarray:
        """The model on ``points`` (M, d), in the precision it was trained in."""
        from ._precision import precision_scope, run_dtype

        with precision_scope(self.config.precision, "second"):
            pts = jax.numpy.asarray(points, dtype=run_dtype(self.config.precision, "second"))
            return np.asarray(jax.vmap(self.model)(pts))

    def summary(self) -> dict:
        return {
            "problem": self.problem.name,
            "method": self.method.name,
            **self.metrics.as_dict(),
            "e_loss": self.e_loss,
            "adam_status": self.statuses.get("adam", StageStatus.SKIPPED).name,
            "lbfgs_status": self._second_status().name,  # the stage after Adam
            "stages": {r.name: r.status.name for r in self.stages},
            "compile_seconds": self.compile_seconds,
            "run_seconds": self.run_seconds,
            "adam_steps": self.adam_steps,
            "lbfgs_steps": self.lbfgs_steps,
            "k_upd": self.k_upd,
            "relobralo": self.relobralo,
            "precision": self.config.precision,
            "second_stage": self.config.second_stage,
            "evals_per_lbfgs_iteration": self.evals_per_lbfgs_iteration,
            "seed": self.seed,
            **({} if self.unknowns is None else {"unknowns": self.unknowns.as_dict()}),
        }
