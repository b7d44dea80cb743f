"""[`infer`][cgmpinn_jax.infer]: train a method on the inverse version of a problem
(observations + unknown coefficients), in one call."""

from __future__ import annotations

from typing import Optional

import jax

from ..inverse import InverseProblem, Observations, inverse_problem
from ..problems import Problem
from ._driver import train

__all__ = ["infer"]


def infer(
    problem: Problem | str,
    method="cgmpinn",
    config=None,
    *,
    unknowns=None,
    n_obs: int = 200,
    noise: float = 0.01,
    observations: Optional[Observations] = None,
    key: int | jax.Array = 1224,
    obs_key: int | jax.Array | None = None,
    obs_weight: float = 1.0,
    **train_kwargs,
):
    """Train ``method`` on the inverse version of ``problem``: the network and the unknown
    coefficients together, from observations of the solution.

    The inverse problem is built by [`inverse_problem`][cgmpinn_jax.inverse.inverse_problem]
    (synthetic observations drawn with ``obs_key``, default ``key``, unless ``observations``
    are given), then trained by [`train`][cgmpinn_jax.train]. An
    [`InverseProblem`][cgmpinn_jax.inverse.InverseProblem] is trained as it is (the
    observation arguments are then unused).

    Args:
        problem: a forward [`Problem`][cgmpinn_jax.Problem], its registry name, or an
            [`InverseProblem`][cgmpinn_jax.inverse.InverseProblem].
        method: a [`Method`][cgmpinn_jax.Method] or a registry name.
        config: options ([`TrainConfig`][cgmpinn_jax.TrainConfig]); ``None``: the defaults.
        unknowns: the coefficients to estimate: names of the problem's declared unknowns or
            [`Unknown`][cgmpinn_jax.inverse.Unknown] objects (``None``: every one it declares).
        n_obs: the number of synthetic observations, points uniform in the domain (200).
        noise: the observations' noise, relative to the standard deviation of the exact
            values there (0.01).
        observations: measured [`Observations`][cgmpinn_jax.inverse.Observations] to use
            instead of synthetic ones.
        key: an int seed or a JAX PRNG key for the training run (points, network,
            ReLoBRaLo), as in [`train`][cgmpinn_jax.train].
        obs_key: the seed or key of the synthetic observations (``None``: ``key``).
        obs_weight: a fixed factor on the observation term of the loss (1.0); for an
            ``InverseProblem`` it is that object's field instead.
        **train_kwargs: passed on to [`train`][cgmpinn_jax.train] (``quiet``, ``progress``,
            ``checkpoint_dir``, ...).

    Returns:
        The run's [`TrainResult`][cgmpinn_jax.TrainResult]; ``result.unknowns`` holds each
            coefficient's estimate, true value and relative error.

    Raises:
        ValueError: ``obs_weight`` given together with an ``InverseProblem``, or an invalid
            argument (the message names it).

    Examples:
        ```python
        import cgmpinn_jax as cj

        res = cj.infer("fisher_kpp", "cgmpinn", unknowns=["D", "r"], n_obs=200, noise=0.01)
        print(res.unknowns.table())  # each coefficient: estimate, true value, error
        ```
    """
    if isinstance(problem, InverseProblem) and obs_weight != 1.0:
        raise ValueError(
            "infer: obs_weight is an InverseProblem's field; "
            "set it there (InverseProblem(..., obs_weight=w))"
        )
    if not isinstance(problem, InverseProblem):
        problem = inverse_problem(
            problem,
            unknowns=unknowns,
            n_obs=n_obs,
            noise=noise,
            observations=observations,
            key=key if obs_key is None else obs_key,
            obs_weight=obs_weight,
        )
    return train(problem, method, config, key=key, **train_kwargs)
