"""The protocol of a stage's solver: what the engine calls ([`Stage`][cgmpinn_jax.solvers.Stage]), what one
iteration returns (`StepResult`) and why a stage stopped ([`StageStatus`][cgmpinn_jax.StageStatus]).

A run is a sequence of stages (``TrainConfig.stages``); each is a solver with ``init`` /
``step`` / ``terminate``, driven by one engine loop
(`stage_steps`): the loop evaluates the objective
at the iteration's start point (or takes the value the solver stored), calls ``step``, then
``terminate`` (the solver's stop rule and guards, `cgmpinn_jax.solvers._stopping`), and
keeps the new point unless a guard or the solver's own stop fired."""

from __future__ import annotations

import enum
from typing import Any, Callable, NamedTuple, Optional, Protocol

import jax

__all__ = ["StageStatus", "StepResult", "Stage", "SecondStage", "ObjectiveFn"]


class StageStatus(enum.IntEnum):
    """Why a training stage stopped."""

    COMPLETED = 0  # ran its whole budget
    NONFINITE = 1  # a non-finite loss: best parameters restored
    DIVERGED = 2  # loss > divergence_ratio x best: best parameters restored
    GRAD_TOL = 3  # second stage: max|g| <= gtol * max(1, |objective|)
    LOSS_TOL = 4  # second stage: the unweighted loss did not improve by ftol (relative) in `patience` iterations
    SKIPPED = 5  # zero steps requested
    NO_DECREASE = 6  # Gauss-Newton: no decrease even at the largest damping (the point kept)
    INTERRUPTED = 7  # Ctrl-C: stopped at a call boundary after a checkpoint (resume continues it)
    TIME_LIMIT = 8  # the run's or the stage's wall-clock time limit: best point kept

    def describe(self) -> str:
        """Why the stage ended, in words, with the code: ``"stopped: loss stalled (LOSS_TOL)"``."""
        return {
            StageStatus.COMPLETED: "ran its whole budget (COMPLETED)",
            StageStatus.NONFINITE: "stopped: a non-finite loss, best parameters restored (NONFINITE)",
            StageStatus.DIVERGED: "stopped: the loss diverged, best parameters restored (DIVERGED)",
            StageStatus.GRAD_TOL: "stopped: gradient below tolerance (GRAD_TOL)",
            StageStatus.LOSS_TOL: "stopped: loss stalled (LOSS_TOL)",
            StageStatus.SKIPPED: "skipped: no steps requested (SKIPPED)",
            StageStatus.NO_DECREASE: "stopped: no decrease even at the largest damping (NO_DECREASE)",
            StageStatus.INTERRUPTED: "interrupted (Ctrl-C) after a checkpoint; resume continues it (INTERRUPTED)",
            StageStatus.TIME_LIMIT: "stopped: the time limit was reached, best point kept (TIME_LIMIT)",
        }[self]


ObjectiveFn = Callable[..., Any]  # (params, w, lam, batch) -> (value, TermValues)


class StepResult(NamedTuple):
    """One second-stage iteration."""

    params: Any  # the new point
    state: Any  # the member's state there
    value: jax.Array  # the objective at the new point
    evals: jax.Array  # int32 loss+gradient evaluations the iteration used
    status: Optional[jax.Array] = None  # int32 StageStatus the member asks for (0 / None: go on)


class Stage(Protocol):
    """What the engine calls; ``args = (w, lam, batch)`` fix the objective.

    ``fresh``: the engine evaluates the objective at every iteration's start (Adam) instead of
    taking the value and gradient the solver stored at the end of its last iteration."""

    fresh: bool

    def init(self, params, w, lam, batch) -> Any: ...

    def set_point(self, state, value, grad, tv) -> Any:
        """Replace the stored value/gradient (after the objective changed); keep the curvature."""

    def stored(self, state, params) -> tuple[jax.Array, Any, Optional[Any]]:
        """(value, grad, TermValues or None) at the current point ``params``."""

    def step(self, params, state, w, lam, batch, value, grad, hyper=None) -> StepResult:
        """One iteration from ``params`` (``hyper``: the run's traceable hyperparameters)."""

    def terminate(self, guards, params, raw_total, grad, value, step: StepResult):
        """The guard state (`Guards`) after the
        iteration ``step`` from ``params``: the stage's stop rule and guards."""


SecondStage = Stage  # the name the second stage's members were written against
