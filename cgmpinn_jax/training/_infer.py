"""``infer``: train a method on the inverse version of a problem (observations + unknown
coefficients), in one call."""

from __future__ import annotations

from typing import Optional

import jax

from ..inverse._inverse import InverseProblem, inverse_problem
from ..inverse._observations import Observations
from ..problems import Problem
from ._driver import train

__all__ = ["infer"]


def infer(problem: Problem | str, method="cgmpinn", config=None, *, unknowns=None, n_obs: int = 200,
          noise: float = 0.01, observations: Optional[Observations] = None, key: int | jax.Array = 1224,
          obs_key: int | jax.Array | None = None, obs_weight: float = 1.0, **train_kwargs):
    """Train ``method`` on the inverse version of ``problem``:
    [`inverse_problem`][cgmpinn_jax.inverse.inverse_problem] (its
    observations drawn with ``obs_key``, default ``key``), then [`train`][cgmpinn_jax.train].
    An [`InverseProblem`][cgmpinn_jax.inverse.InverseProblem] is trained as it is. Returns the
    [`TrainResult`][cgmpinn_jax.TrainResult]; ``result.unknowns`` holds the coefficients."""
    if isinstance(problem, InverseProblem) and obs_weight != 1.0:
        raise ValueError("infer: obs_weight is an InverseProblem's field; set it there (InverseProblem(..., obs_weight=w))")
    if not isinstance(problem, InverseProblem):
        problem = inverse_problem(problem, unknowns=unknowns, n_obs=n_obs, noise=noise, observations=observations,
                                  key=key if obs_key is None else obs_key, obs_weight=obs_weight)
    return train(problem, method, config, key=key, **train_kwargs)
