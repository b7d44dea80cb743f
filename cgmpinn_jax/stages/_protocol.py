"""The protocol of a stage's solver: what the engine calls
([`Stage`][cgmpinn_jax.stages.Stage]), what one iteration returns (`StepResult`) and why a stage
stopped ([`StageStatus`][cgmpinn_jax.StageStatus]).

A run is a sequence of stages (``TrainConfig.stages``); each is a solver with ``init`` /
``step`` / ``terminate``, driven by one engine loop
(`stage_steps`): the loop evaluates the objective
at the iteration's start point (or takes the value the solver stored), calls ``step``, then
``terminate`` (the solver's stop rule and guards, `cgmpinn_jax.stages._stopping`), and
keeps the new point unless a guard or the solver's own stop fired."""

from __future__ import annotations

import enum
from typing import Any, Callable, NamedTuple, Optional, Protocol

import jax

__all__ = ["StageStatus", "StepResult", "Stage", "ObjectiveFn"]


class StageStatus(enum.IntEnum):
    """Why a training stage stopped.

    Every stage of a run ends with one status, recorded in
    [`TrainResult.statuses`][cgmpinn_jax.TrainResult] and in each
    [`StageRecord`][cgmpinn_jax.StageRecord]. Inside the compiled loop it is an int32 code
    (0 while the stage runs); [`describe`][cgmpinn_jax.StageStatus.describe] says it in words.
    "Best parameters" are the iteration start point with the lowest unweighted loss the stage
    has seen.

    Attributes:
        COMPLETED: 0: the stage ran its whole budget of steps.
        NONFINITE: 1: the loss became non-finite (NaN or infinite); the stage's best
            parameters are restored.
        DIVERGED: 2: the unweighted loss exceeded ``divergence_ratio`` times the stage's best
            (``TrainConfig.divergence_ratio``); the best parameters are restored.
        GRAD_TOL: 3: second stage only: the largest gradient entry fell to
            ``gtol * max(1, |objective|)``.
        LOSS_TOL: 4: second stage only: the best unweighted loss did not improve by a relative
            ``ftol`` in ``patience`` iterations.
        SKIPPED: 5: the stage was asked for zero steps.
        NO_DECREASE: 6: Gauss-Newton only: no trial step decreased the objective, even at the
            largest damping; the current point is kept.
        INTERRUPTED: 7: the run was interrupted (Ctrl-C) and stopped at a call boundary after
            writing a checkpoint; resuming continues the stage.
        TIME_LIMIT: 8: the run's or the stage's wall-clock time limit was reached; the best
            parameters are restored.

    Examples:
        >>> from cgmpinn_jax import StageStatus
        >>> StageStatus(4).name
        'LOSS_TOL'
        >>> StageStatus.LOSS_TOL.describe()
        'stopped: loss stalled (LOSS_TOL)'
    """

    COMPLETED = 0  # ran its whole budget
    NONFINITE = 1  # a non-finite loss: best parameters restored
    DIVERGED = 2  # loss > divergence_ratio x best: best parameters restored
    GRAD_TOL = 3  # second stage: max|g| <= gtol * max(1, |objective|)
    # second stage: the unweighted loss did not improve by ftol (relative) in `patience` iterations
    LOSS_TOL = 4
    SKIPPED = 5  # zero steps requested
    NO_DECREASE = 6  # Gauss-Newton: no decrease even at the largest damping (the point kept)
    INTERRUPTED = 7  # Ctrl-C: stopped at a call boundary after a checkpoint (resume continues it)
    TIME_LIMIT = 8  # the run's or the stage's wall-clock time limit: best point kept

    def describe(self) -> str:
        """Why the stage ended, in words, followed by the member's name in parentheses.

        Returns:
            A one-line description such as ``"stopped: loss stalled (LOSS_TOL)"``.
        """
        return {
            StageStatus.COMPLETED: "ran its whole budget (COMPLETED)",
            StageStatus.NONFINITE: (
                "stopped: a non-finite loss, best parameters restored (NONFINITE)"
            ),
            StageStatus.DIVERGED: (
                "stopped: the loss diverged, best parameters restored (DIVERGED)"
            ),
            StageStatus.GRAD_TOL: "stopped: gradient below tolerance (GRAD_TOL)",
            StageStatus.LOSS_TOL: "stopped: loss stalled (LOSS_TOL)",
            StageStatus.SKIPPED: "skipped: no steps requested (SKIPPED)",
            StageStatus.NO_DECREASE: (
                "stopped: no decrease even at the largest damping (NO_DECREASE)"
            ),
            StageStatus.INTERRUPTED: (
                "interrupted (Ctrl-C) after a checkpoint; resume continues it (INTERRUPTED)"
            ),
            StageStatus.TIME_LIMIT: (
                "stopped: the time limit was reached, best point kept (TIME_LIMIT)"
            ),
        }[self]


ObjectiveFn = Callable[..., Any]  # (params, w, lam, batch) -> (value, TermValues)


class StepResult(NamedTuple):
    """What one iteration of a stage's solver returns
    ([`Stage.step`][cgmpinn_jax.stages.Stage.step]).

    Attributes:
        params: the new point, a pytree shaped like the network's parameters. The engine keeps
            it unless a guard or the solver's own stop fired.
        state: the solver's state at the new point (its own type: an optax state for
            `Adam`, `GNState` for
            `GaussNewton`, ...).
        value: () array: the objective at the new point (for Adam, which stores no point, the
            objective at the start point).
        evals: () int32 array: the loss (or loss and gradient) evaluations the iteration used
            beyond the one at its start point, such as its line search's or its damping trials'.
        status: () int32 array: the [`StageStatus`][cgmpinn_jax.StageStatus] the solver asks
            for (only Gauss-Newton's ``NO_DECREASE``), or 0 / ``None`` to go on.
    """

    params: Any  # the new point
    state: Any  # the member's state there
    value: jax.Array  # the objective at the new point
    evals: jax.Array  # int32 loss+gradient evaluations the iteration used
    status: Optional[jax.Array] = None  # int32 StageStatus the member asks for (0 / None: go on)


class Stage(Protocol):
    """The interface of a stage's solver: what the training engine calls.

    A run is a sequence of stages (Adam, then a second stage); each is one solver, built by
    a stage object's ``solver``. The engine runs it inside a jitted
    ``lax.while_loop``, one iteration per pass:

    1. the start point's objective value, gradient and loss terms: evaluated afresh when
       ``fresh`` is true, else taken from the solver's state
       ([`stored`][cgmpinn_jax.stages.Stage.stored]);
    2. [`step`][cgmpinn_jax.stages.Stage.step] from that point;
    3. [`terminate`][cgmpinn_jax.stages.Stage.terminate]: the guards and the stop rule,
       which give the new `Guards`;
    4. the new point is kept unless a guard or the solver's own stop fired.

    The objective is ``obj_fn(params, w, lam, batch) -> (value, terms)``: ``w`` the per-point
    PDE weights, ``lam`` the loss-term weights (ReLoBRaLo's lambdas), ``batch`` the
    collocation points. Within an iteration these three are fixed; between iterations the
    engine may change them (a weight refresh) and then calls
    [`set_point`][cgmpinn_jax.stages.Stage.set_point] with the new value and gradient.

    Attributes:
        fresh: True when the engine evaluates the objective at every iteration's start
            (`Adam`); False when the solver stores the value and
            gradient at the end of its iteration and the engine reads them back (every
            second-stage solver).
    """

    fresh: bool

    def init(self, params, w, lam, batch) -> Any:
        """The solver's initial state at ``params``.

        Args:
            params: the starting point, a pytree of arrays (the network's parameters).
            w: the per-point PDE weights, an ``(N,)`` array (``(N, E)`` when each equation
                of a system has its own).
            lam: the loss-term weights, a ``(C,)`` array.
            batch: the collocation points and constraint data, a dict of arrays by loss term.

        Returns:
            The solver's state (a pytree of arrays).
        """

    def set_point(self, state, value, grad, tv) -> Any:
        """Replace the stored value and gradient after the objective changed, keeping the
        curvature information.

        Args:
            state: the solver's state.
            value: () array: the objective at the current point.
            grad: the objective's gradient there, a pytree shaped like the parameters.
            tv: the loss terms at the current point (the engine's term values record).

        Returns:
            The updated state.
        """

    def stored(self, state, params) -> tuple[jax.Array, Any, Optional[Any]]:
        """The value, gradient and loss terms the solver stored at the current point.

        Args:
            state: the solver's state.
            params: the current point, a pytree of arrays.

        Returns:
            ``(value, grad, terms)``; ``terms`` is ``None`` when the solver keeps only the
                value and gradient (the engine then computes the terms with one forward pass).
        """

    def step(self, params, state, w, lam, batch, value, grad, hyper=None) -> StepResult:
        """One iteration from ``params``.

        Args:
            params: the iteration's start point, a pytree of arrays.
            state: the solver's state there.
            w: the per-point PDE weights, an ``(N,)`` array (``(N, E)`` when each equation
                of a system has its own).
            lam: the loss-term weights, a ``(C,)`` array.
            batch: the collocation points and constraint data, a dict of arrays by loss term.
            value: () array: the objective at ``params``.
            grad: the objective's gradient at ``params``, a pytree shaped like it.
            hyper: the run's traceable hyperparameters
                ([`Hyper`][cgmpinn_jax.config.Hyper]; Adam reads its learning rate there), or
                ``None``.

        Returns:
            The new point, state, value and evaluation count as a
                [`StepResult`][cgmpinn_jax.stages.StepResult].
        """

    def terminate(self, guards, params, raw_total, grad, value, step: StepResult):
        """The guard state after the iteration ``step``: the guards every stage applies and
        the solver's stop rule (see `Stopping`).

        Args:
            guards: the `Guards` before the iteration.
            params: the iteration's start point.
            raw_total: () array: the unweighted loss at ``params`` (the sum of the plain loss
                terms).
            grad: the objective's gradient at ``params``.
            value: () array: the objective at ``params``.
            step: the iteration's [`StepResult`][cgmpinn_jax.stages.StepResult].

        Returns:
            The new `Guards`; a non-zero ``status`` stops the
                stage.
        """
