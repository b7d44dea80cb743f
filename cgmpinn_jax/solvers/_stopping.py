"""The stop rules and guards every stage's solver applies after an iteration (its
``terminate``): the guards shared by all stages (a non-finite loss, divergence, the best
point so far) and a second-stage member's tolerances (`StopRule`:
GRAD_TOL, LOSS_TOL) and its own status (Gauss-Newton's NO_DECREASE).

The guard state (best parameters, their unweighted loss, the status, the stall count) is part
of the engine's state; a solver reads and returns it as a `Guards` record."""

from __future__ import annotations

from typing import Any, NamedTuple, Optional

import jax
import jax.numpy as jnp

from ._protocol import StageStatus

__all__ = ["Guards", "Stopping", "Terminates", "accepts"]


class Guards(NamedTuple):
    """The guard state of the current stage."""

    best_params: Any  # best parameters of the stage (by the unweighted loss)
    best_raw: jax.Array  # () their unweighted loss
    status: jax.Array  # int32 StageStatus
    stall: jax.Array  # int32 iterations since the best loss last improved by ftol


def _tree_max_abs(t) -> jax.Array:
    return jnp.max(jnp.stack([jnp.max(jnp.abs(x)) for x in jax.tree_util.tree_leaves(t)]))


def accepts(status) -> jax.Array:
    """Whether an iteration that ended with ``status`` keeps its new point: it does unless a
    guard or a member's own stop fired (LOSS_TOL still keeps it, GRAD_TOL does not: the
    gradient at the start point was already small)."""
    return (status == StageStatus.COMPLETED) | (status == StageStatus.LOSS_TOL)


class Stopping:
    """``terminate`` for a stage's solver: the guards, then (``rule`` given) the tolerances.

    ``divergence_ratio``: a loss above this times the best unweighted loss of the stage stops it
    (DIVERGED); ``rule``: the second stage's `StopRule` (None for
    Adam, which runs its budget unless a guard fires)."""

    def __init__(self, divergence_ratio: float, rule=None):
        self.divergence_ratio, self.rule = divergence_ratio, rule

    def guard(self, g: Guards, raw_total, params_now) -> Guards:
        """Best params and status after an iteration whose start point ``params_now`` has the
        unweighted loss ``raw_total`` (the stall count unchanged)."""
        finite = jnp.isfinite(raw_total)
        better = finite & (raw_total < g.best_raw)
        best_params = jax.tree_util.tree_map(lambda b, p: jnp.where(better, p, b), g.best_params, params_now)
        best_raw = jnp.where(better, raw_total, g.best_raw)
        diverged = finite & (raw_total > self.divergence_ratio * best_raw)
        status = jnp.where(~finite, StageStatus.NONFINITE, jnp.where(diverged, StageStatus.DIVERGED, g.status))
        return Guards(best_params, best_raw, status.astype(jnp.int32), g.stall)

    def tolerances(self, g: Guards, status, raw_total, grad, value, new_value):
        """The status after the tolerances, and the new stall count (``g``: the guard state
        before the iteration; ``status``: after [`guard`][cgmpinn_jax.solvers.Stopping.guard])."""
        rule = self.rule
        gtol_hit = _tree_max_abs(grad) <= rule.gtol * jnp.maximum(1.0, jnp.abs(value))
        status = jnp.where((status == 0) & ~jnp.isfinite(new_value), StageStatus.NONFINITE, status)
        status = jnp.where((status == 0) & gtol_hit, StageStatus.GRAD_TOL, status)
        # stall: iterations since the best unweighted loss last improved by a relative ftol
        improved = raw_total < g.best_raw * (1.0 - rule.ftol)
        stall = jnp.where(improved, 0, g.stall + 1)
        status = jnp.where((status == 0) & (stall >= rule.patience), StageStatus.LOSS_TOL, status)
        return status.astype(jnp.int32), stall.astype(jnp.int32)

    def terminate(self, g: Guards, params, raw_total, grad, value, new_value, member_status: Optional[jax.Array] = None) -> Guards:
        """The guard state after one iteration from ``params`` (unweighted loss ``raw_total``,
        objective ``value`` and gradient ``grad`` there; ``new_value`` at the new point;
        ``member_status``: the member's own stop, 0 to go on)."""
        after = self.guard(g, raw_total, params)
        if self.rule is None:
            return after
        status, stall = self.tolerances(g, after.status, raw_total, grad, value, new_value)
        if member_status is not None:
            status = jnp.where((status == 0) & (member_status != 0), member_status, status).astype(jnp.int32)
        return after._replace(status=status, stall=stall)


class Terminates:
    """A solver's ``terminate`` by its [`Stopping`][cgmpinn_jax.solvers.Stopping] (``self.stopping``; the factory,
    [`make_stage`][cgmpinn_jax.solvers.make_stage], sets the run's rule)."""

    fresh = False
    stopping: Stopping = Stopping(1e6)

    def with_stopping(self, stopping: Stopping):
        self.stopping = stopping
        return self

    def terminate(self, guards: Guards, params, raw_total, grad, value, step) -> Guards:
        return self.stopping.terminate(guards, params, raw_total, grad, value, step.value, step.status)
