"""The first stage's solver: Adam (optax), behind the stage protocol.

Adam takes a fresh evaluation at every step (``fresh``: the engine evaluates the objective,
balanced by ReLoBRaLo when the stage uses it, at the step's start) and stops only on the
guards (a non-finite loss, divergence); it has no tolerances."""

from __future__ import annotations

import jax.numpy as jnp
import optax

from ._protocol import StepResult
from ._stopping import Stopping, Terminates

__all__ = ["Adam"]


class Adam(Terminates):
    fresh = True

    def __init__(self, lr: float, *, divergence_ratio: float = 1e6):
        self.lr = lr
        self.stopping = Stopping(divergence_ratio)

    def init(self, params, w=None, lam=None, batch=None):
        return optax.adam(self.lr).init(params)

    def set_point(self, state, value, grad, tv):
        return state

    def stored(self, state, params):
        raise TypeError("Adam stores no point: the engine evaluates the objective at every step")

    def step(self, params, state, w, lam, batch, value, grad, hyper=None):
        """One Adam step; the learning rate is ``hyper.adam_lr`` when given (a sweep's axis)."""
        lr = self.lr if hyper is None else hyper.adam_lr
        updates, new = optax.adam(lr).update(grad, state, params)
        return StepResult(optax.apply_updates(params, updates), new, value, jnp.int32(0))
