"""Error tracking the studies share: when a run first reached an error, and a cached Adam start.

    first_reach(k, seconds, errors, thr, offset=0) -> (k - offset, seconds) | (None, None)
    rel_fn(problem, static_model) -> jitted params -> relative L2 on the problem's test grid
    adam_start(problem, seed, adam_steps, overrides) -> (TrainResult, wall seconds)
    second_stage_start(problem, seed, adam_steps)
        -> (engine, setup, static, params, batch, w, lam, meta)

``problem`` is a registry name or ``name:key=int,...`` (`problem_of`). ``second_stage_start`` caches
the Adam parameters and points in the ignored run cache
(``benchmarks/cache/gn_scaling/adam-<problem>-seed<s>-<steps>.*``), so that every second-stage
variant of a study starts from the same float64 state.
"""

from __future__ import annotations

import json
import pickle
import time

import numpy as np

from benchmarks import runcache


def first_reach(k, seconds, errors, thr, offset: int = 0):
    """``(k[i] - offset, seconds[i])`` at the first tracked error ``<= thr``, or ``(None, None)``.

    ``k`` counts steps or iterations (``offset``: the Adam steps, for second-stage iterations)."""
    idx = np.nonzero(np.asarray(errors) <= thr)[0]
    if idx.size == 0:
        return None, None
    i = int(idx[0])
    return int(max(0, k[i] - offset)), float(seconds[i])


def rel_fn(problem, static):
    """jitted ``params -> relative L2 error on the problem's test grid`` (the formula of
    ``cj.train``'s error tracker), against the exact solution or else the reference data
    (``problem.truth``)."""
    import equinox as eqx
    import jax
    import jax.numpy as jnp

    truth = problem.truth(jnp.float64)
    pts, exact = jnp.asarray(truth.points, jnp.float64), jnp.asarray(truth.values, jnp.float64)

    def rel(params):
        pred = jax.vmap(eqx.combine(params, static))(pts)
        return jnp.sqrt(jnp.mean((pred - exact) ** 2) / jnp.mean(exact**2))

    return jax.jit(rel)


def problem_of(spec: str):
    """``"name"`` or ``"name:key=int,..."`` (``burgers_data:n_pde=6000,n_refine=2000``): the
    registry's problem."""
    import cgmpinn_jax as cj

    name, _, args = spec.partition(":")
    return cj.get_problem(
        name, **{k: int(v) for k, v in (a.split("=") for a in args.split(",") if a)}
    )


def adam_start(problem: str, seed: int, adam_steps, net: dict):
    """The accurate preset's Adam stage alone, PINN (its error tracked at chunk ends)."""
    import cgmpinn_jax as cj

    cfg = cj.TrainConfig.preset("accurate", **net).with_steps(adam_steps, 0)
    t0 = time.perf_counter()
    res = cj.train(problem_of(problem), "pinn", cfg, key=seed, quiet=True, track_error_every=0)
    return res, time.perf_counter() - t0


def second_stage_start(problem_name: str, seed: int, adam_steps):
    """``(engine, setup, static, params0, batch, w, lam, meta)`` after a cached float64 Adam
    stage (PINN: uniform weights, unbalanced terms); ``meta`` holds its steps, seconds and error."""
    import equinox as eqx
    import jax
    import jax.numpy as jnp

    import cgmpinn_jax as cj
    from cgmpinn_jax.training import CompileCache
    from cgmpinn_jax.training._driver import init_state
    from cgmpinn_jax.training._schedule import resolve

    cfg = cj.TrainConfig.preset("accurate")
    with jax.enable_x64(True), jax.default_matmul_precision("highest"):
        setup = resolve(problem_of(problem_name), cj.get_method("pinn"), cfg)
        static, eng = CompileCache().engine(setup)
        state, _ = init_state(setup, eng, jax.random.key(seed))
        cache = (
            runcache.CACHE
            / "gn_scaling"
            / f"adam-{problem_name}-seed{seed}-{adam_steps or 'preset'}"
        )
        if cache.with_suffix(".json").exists():
            meta = json.loads(cache.with_suffix(".json").read_text())
            model = eqx.tree_deserialise_leaves(
                cache.with_suffix(".eqx"),
                eqx.combine(eqx.partition(state.params.model, eqx.is_array)[0], static.model),
            )
            batch = pickle.loads(cache.with_suffix(".pkl").read_bytes())
        else:
            res, wall = adam_start(problem_name, seed, adam_steps, {})
            model, batch = (
                res.model,
                jax.tree_util.tree_map(lambda a: np.asarray(a, np.float64), res.batch),
            )
            meta = {
                "adam_steps": res.budgets["adam"],
                "adam_seconds": wall,
                "rel_e2_adam": float(res.metrics.rel_e2),
            }
            cache.parent.mkdir(parents=True, exist_ok=True)
            eqx.tree_serialise_leaves(cache.with_suffix(".eqx"), model)
            cache.with_suffix(".pkl").write_bytes(pickle.dumps(batch))
            cache.with_suffix(".json").write_text(json.dumps(meta))
        batch = jax.tree_util.tree_map(lambda a: jnp.asarray(a, jnp.float64), batch)
        params0 = eqx.tree_at(
            lambda t: t.model, state.params, eqx.partition(model, eqx.is_array)[0]
        )
        params0 = jax.tree_util.tree_map(lambda a: jnp.asarray(a, jnp.float64), params0)
        n = batch["pde"][0].shape[0]
        w, lam = jnp.ones(n, jnp.float64), jnp.ones(setup.n_terms, jnp.float64)
    return eng, setup, static, params0, batch, w, lam, meta
