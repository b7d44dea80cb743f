"""The first stage's solver: Adam (optax), behind the stage protocol.

Adam takes a fresh evaluation at every step (``fresh``: the engine evaluates the objective,
balanced by ReLoBRaLo when the stage uses it, at the step's start) and stops only on the
guards (a non-finite loss, divergence); it has no tolerances."""

from __future__ import annotations

import jax.numpy as jnp
import optax

from ._protocol import StepResult
from ._stopping import Stopping, Terminates

__all__ = ["AdamSolver"]


class AdamSolver(Terminates):
    """The first stage's solver: Adam (``optax.adam``) with a fixed learning rate.

    Adam stores no point: the engine evaluates the objective (balanced by ReLoBRaLo where the
    stage uses it) at every step's start (``fresh`` is True) and hands the step its gradient.
    The stage stops only on the guards (a non-finite or diverging loss, see
    `Stopping`); it has no tolerances and otherwise runs its
    whole budget. Its state is optax's Adam state (step count and the first and second moment
    estimates, pytrees shaped like the parameters). Each step costs no evaluation beyond the
    engine's one at the start point (``evals`` is 0).

    Args:
        lr: the learning rate (the [`Adam`][cgmpinn_jax.stages.Adam] stage's ``lr``); a sweep
            may override it per run through ``hyper.adam_lr``.
        divergence_ratio: a loss above this times the stage's best unweighted loss stops the
            stage (``DIVERGED``).

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> from cgmpinn_jax.stages._adam import AdamSolver
        >>> adam = AdamSolver(0.1)
        >>> params = {"a": jnp.zeros(2)}
        >>> value, grad = jax.value_and_grad(lambda p: jnp.sum((p["a"] - 1.0) ** 2))(params)
        >>> step = adam.step(params, adam.init(params), None, None, None, value, grad)
        >>> # a first step of about lr per coordinate
        >>> [round(float(a), 4) for a in step.params["a"]]
        [0.1, 0.1]
    """

    fresh = True

    def __init__(self, lr: float, *, divergence_ratio: float = 1e6):
        self.lr = lr
        self.stopping = Stopping(divergence_ratio)

    def init(self, params, w=None, lam=None, batch=None):
        """Adam's state at ``params`` (``w``, ``lam``, ``batch`` are not read)."""
        return optax.adam(self.lr).init(params)

    def set_point(self, state, value, grad, tv):
        return state

    def stored(self, state, params):
        raise TypeError("Adam stores no point: the engine evaluates the objective at every step")

    def step(self, params, state, w, lam, batch, value, grad, hyper=None):
        """One Adam step along ``grad`` ([`Stage.step`][cgmpinn_jax.stages.Stage.step]); the
        learning rate is ``hyper.adam_lr`` when ``hyper`` is given (a sweep's axis), else ``lr``.
        ``w``, ``lam`` and ``batch`` are not read."""
        lr = self.lr if hyper is None else hyper.adam_lr
        updates, new = optax.adam(lr).update(grad, state, params)
        return StepResult(optax.apply_updates(params, updates), new, value, jnp.int32(0))
