"""The stop rules and guards every stage's solver applies after an iteration (its
``terminate``): the guards shared by all stages (a non-finite loss, divergence, the best
point so far) and a second-stage member's tolerances (`StopRule`:
GRAD_TOL, LOSS_TOL) and its own status (Gauss-Newton's NO_DECREASE).

The guard state (best parameters, their unweighted loss, the status, the stall count) is part
of the engine's state; a solver reads and returns it as a `Guards` record."""

from __future__ import annotations

import copy
from typing import Any, NamedTuple, Optional

import jax
import jax.numpy as jnp

from ._protocol import StageStatus

__all__ = ["Guards", "Stopping", "Terminates", "accepts"]


class Guards(NamedTuple):
    """The guard state of the running stage, part of the engine's state between iterations.

    A solver's [`terminate`][cgmpinn_jax.stages.Stage.terminate] reads it and returns the
    next one (`Stopping.terminate`).

    Attributes:
        best_params: the stage's best point so far (lowest unweighted loss among the iteration
            start points), a pytree shaped like the parameters.
        best_raw: () array: the unweighted loss at ``best_params``.
        status: () int32 array: the [`StageStatus`][cgmpinn_jax.StageStatus] code, 0 while
            the stage runs.
        stall: () int32 array: iterations since the best unweighted loss last improved by a
            relative ``ftol`` (the ``LOSS_TOL`` rule's count).
    """

    best_params: Any  # best parameters of the stage (by the unweighted loss)
    best_raw: jax.Array  # () their unweighted loss
    status: jax.Array  # int32 StageStatus
    stall: jax.Array  # int32 iterations since the best loss last improved by ftol


def _tree_max_abs(t) -> jax.Array:
    return jnp.max(jnp.stack([jnp.max(jnp.abs(x)) for x in jax.tree_util.tree_leaves(t)]))


def accepts(status) -> jax.Array:
    """Whether an iteration that ended with ``status`` keeps its new point: it does unless a
    guard or the solver's own stop fired (LOSS_TOL still keeps it, GRAD_TOL does not: the
    gradient at the start point was already small).

    Args:
        status: int32 array of [`StageStatus`][cgmpinn_jax.StageStatus] codes.

    Examples:
        >>> bool(accepts(StageStatus.LOSS_TOL)), bool(accepts(StageStatus.DIVERGED))
        (True, False)
    """
    return (status == StageStatus.COMPLETED) | (status == StageStatus.LOSS_TOL)


class Stopping:
    """The stop rule and guards a stage's solver applies after every iteration (its
    ``terminate``).

    The guards, shared by every stage: a non-finite unweighted loss stops the stage
    (``NONFINITE``), and so does one above ``divergence_ratio`` times the stage's best
    (``DIVERGED``); both restore the best parameters. The tolerances, for a second stage only
    (``rule`` given): ``GRAD_TOL`` when the largest gradient entry is at most
    ``gtol * max(1, |objective|)``, ``LOSS_TOL`` when the best unweighted loss has not improved
    by a relative ``ftol`` in ``patience`` iterations. A solver's own stop (Gauss-Newton's
    ``NO_DECREASE``) comes last. The first status that fires wins.

    each stage's `solver` gives its solver the run's rule.

    Args:
        divergence_ratio: a loss above this times the stage's best unweighted loss stops it
            (``TrainConfig.divergence_ratio``).
        rule: the second stage's tolerances, a [`StopRule`][cgmpinn_jax.config.StopRule]
            (from [`stop_rule`][cgmpinn_jax.config.stop_rule]), or ``None`` for Adam, which runs
            its budget unless a guard fires.

    Examples:
        >>> import jax.numpy as jnp
        >>> from cgmpinn_jax import StageStatus
        >>> from cgmpinn_jax.stages._stopping import Guards, Stopping
        >>> g = Guards(best_params=jnp.zeros(2), best_raw=jnp.asarray(1.0), status=jnp.int32(0),
        ...            stall=jnp.int32(0))
        >>> stop = Stopping(divergence_ratio=10.0)
        >>> StageStatus(int(stop.guard(g, jnp.asarray(0.5), jnp.ones(2)).status)).name
        'COMPLETED'
        >>> StageStatus(int(stop.guard(g, jnp.asarray(20.0), jnp.ones(2)).status)).name
        'DIVERGED'
    """

    def __init__(self, divergence_ratio: float, rule=None):
        self.divergence_ratio, self.rule = divergence_ratio, rule

    def guard(self, g: Guards, raw_total, params_now) -> Guards:
        """The guards alone: the best point and the status after an iteration from
        ``params_now``.

        Args:
            g: the guard state before the iteration.
            raw_total: () array: the unweighted loss at ``params_now``.
            params_now: the iteration's start point, a pytree of arrays.

        Returns:
            The new `Guards` (``stall`` unchanged): ``params_now``
                becomes the best point if its loss is lower, and the status turns ``NONFINITE``
                or ``DIVERGED`` when the loss is non-finite or above ``divergence_ratio`` times
                the best.
        """
        finite = jnp.isfinite(raw_total)
        better = finite & (raw_total < g.best_raw)
        best_params = jax.tree_util.tree_map(
            lambda b, p: jnp.where(better, p, b), g.best_params, params_now
        )
        best_raw = jnp.where(better, raw_total, g.best_raw)
        diverged = finite & (raw_total > self.divergence_ratio * best_raw)
        status = jnp.where(
            ~finite, StageStatus.NONFINITE, jnp.where(diverged, StageStatus.DIVERGED, g.status)
        )
        return Guards(best_params, best_raw, status.astype(jnp.int32), g.stall)

    def tolerances(self, g: Guards, status, raw_total, grad, value, new_value):
        """The second stage's tolerances after an iteration (``rule`` must be set).

        Args:
            g: the guard state before the iteration.
            status: () int32 array: the status after `guard`.
            raw_total: () array: the unweighted loss at the iteration's start point.
            grad: the objective's gradient at the start point, a pytree of arrays.
            value: () array: the objective at the start point.
            new_value: () array: the objective at the new point (non-finite: ``NONFINITE``).

        Returns:
            ``(status, stall)``: the int32 status after ``NONFINITE``, ``GRAD_TOL`` and
                ``LOSS_TOL``, and the new stall count.
        """
        rule = self.rule
        gtol_hit = _tree_max_abs(grad) <= rule.gtol * jnp.maximum(1.0, jnp.abs(value))
        status = jnp.where((status == 0) & ~jnp.isfinite(new_value), StageStatus.NONFINITE, status)
        status = jnp.where((status == 0) & gtol_hit, StageStatus.GRAD_TOL, status)
        # stall: iterations since the best unweighted loss last improved by a relative ftol
        improved = raw_total < g.best_raw * (1.0 - rule.ftol)
        stall = jnp.where(improved, 0, g.stall + 1)
        status = jnp.where((status == 0) & (stall >= rule.patience), StageStatus.LOSS_TOL, status)
        return status.astype(jnp.int32), stall.astype(jnp.int32)

    def terminate(
        self,
        g: Guards,
        params,
        raw_total,
        grad,
        value,
        new_value,
        member_status: Optional[jax.Array] = None,
    ) -> Guards:
        """The guard state after one iteration: the guards, then (``rule`` given) the
        tolerances, then the solver's own stop.

        Args:
            g: the guard state before the iteration.
            params: the iteration's start point, a pytree of arrays.
            raw_total: () array: the unweighted loss at ``params``.
            grad: the objective's gradient at ``params``.
            value: () array: the objective at ``params``.
            new_value: () array: the objective at the iteration's new point.
            member_status: () int32 array: the solver's own stop
                ([`StepResult.status`][cgmpinn_jax.stages.StepResult]), 0 or ``None`` to go on.

        Returns:
            The new `Guards`.
        """
        after = self.guard(g, raw_total, params)
        if self.rule is None:
            return after
        status, stall = self.tolerances(g, after.status, raw_total, grad, value, new_value)
        if member_status is not None:
            status = jnp.where((status == 0) & (member_status != 0), member_status, status).astype(
                jnp.int32
            )
        return after._replace(status=status, stall=stall)


class Terminates:
    """A solver's ``terminate`` by its `Stopping` (``self.stopping``; each stage object's
    ``solver`` gives it the run's rule with `with_stopping`)."""

    fresh = False
    stopping: Stopping = Stopping(1e6)

    def with_stopping(self, stopping: Stopping):
        """A copy of this solver that stops by ``stopping`` (the solver itself is unchanged)."""
        new = copy.copy(self)
        new.stopping = stopping
        return new

    def terminate(self, guards: Guards, params, raw_total, grad, value, step) -> Guards:
        return self.stopping.terminate(
            guards, params, raw_total, grad, value, step.value, step.status
        )
