"""A stage's stop rule and guards (cgmpinn_jax/stages/_stopping.py) on hand-made iterations,
and the Adam stage's solver against optax."""

import jax
import jax.numpy as jnp
import numpy as np
import optax

import cgmpinn_jax as cj
from cgmpinn_jax.stages import StageStatus, StepResult, StopRule
from cgmpinn_jax.stages._adam import AdamSolver
from cgmpinn_jax.stages._stopping import Guards, Stopping, accepts

RULE = StopRule(gtol=1e-6, ftol=0.1, patience=3)
P0 = {"w": jnp.array([1.0, 2.0])}


def fresh(best_raw=jnp.inf):
    return Guards(P0, jnp.asarray(best_raw), jnp.int32(0), jnp.int32(0))


def test_guard_tracks_the_best_point_and_stops_on_nan_and_divergence():
    s = Stopping(divergence_ratio=10.0)
    p1 = {"w": jnp.array([3.0, 4.0])}
    g = s.guard(fresh(), jnp.asarray(5.0), p1)
    assert float(g.best_raw) == 5.0 and g.status == StageStatus.COMPLETED
    np.testing.assert_array_equal(g.best_params["w"], p1["w"])
    worse = s.guard(g, jnp.asarray(40.0), P0)  # worse, below 10x the best: go on, best kept
    assert worse.status == StageStatus.COMPLETED and float(worse.best_raw) == 5.0
    np.testing.assert_array_equal(worse.best_params["w"], p1["w"])
    assert s.guard(g, jnp.asarray(51.0), P0).status == StageStatus.DIVERGED
    assert s.guard(g, jnp.asarray(jnp.nan), P0).status == StageStatus.NONFINITE
    assert s.guard(g, jnp.asarray(jnp.inf), P0).status == StageStatus.NONFINITE


def test_tolerances_grad_tol_loss_tol_and_the_stall_count():
    s = Stopping(1e6, RULE)
    big, tiny = {"w": jnp.array([1.0, -2.0])}, {"w": jnp.array([1e-9, 0.0])}
    g = s.terminate(fresh(), P0, jnp.asarray(1.0), big, jnp.asarray(1.0), jnp.asarray(0.5))
    assert g.status == StageStatus.COMPLETED and int(g.stall) == 0  # improved on inf
    assert (
        s.terminate(g, P0, jnp.asarray(0.5), tiny, jnp.asarray(1.0), jnp.asarray(0.4)).status
        == StageStatus.GRAD_TOL
    )
    # no 10% gain for `patience` iterations: LOSS_TOL on the third
    for n in (1, 2):
        g = s.terminate(g, P0, jnp.asarray(0.95), big, jnp.asarray(1.0), jnp.asarray(0.9))
        assert int(g.stall) == n and g.status == StageStatus.COMPLETED
    g3 = s.terminate(g, P0, jnp.asarray(0.95), big, jnp.asarray(1.0), jnp.asarray(0.9))
    assert g3.status == StageStatus.LOSS_TOL
    # a 10% gain resets the count
    assert (
        int(s.terminate(g, P0, jnp.asarray(0.5), big, jnp.asarray(1.0), jnp.asarray(0.4)).stall)
        == 0
    )
    # a non-finite trial value stops the stage
    assert (
        s.terminate(g, P0, jnp.asarray(0.5), big, jnp.asarray(1.0), jnp.asarray(jnp.nan)).status
        == StageStatus.NONFINITE
    )


def test_a_members_own_status_applies_only_when_nothing_else_fired():
    s = Stopping(10.0, RULE)
    big = {"w": jnp.array([1.0, 1.0])}
    nd = jnp.int32(StageStatus.NO_DECREASE)
    g = s.terminate(fresh(), P0, jnp.asarray(1.0), big, jnp.asarray(1.0), jnp.asarray(1.0), nd)
    assert g.status == StageStatus.NO_DECREASE
    g = s.terminate(fresh(1.0), P0, jnp.asarray(100.0), big, jnp.asarray(1.0), jnp.asarray(1.0), nd)
    assert g.status == StageStatus.DIVERGED
    assert (
        s.terminate(
            fresh(), P0, jnp.asarray(1.0), big, jnp.asarray(1.0), jnp.asarray(1.0), jnp.int32(0)
        ).status
        == 0
    )


def test_accepts_keeps_the_new_point_unless_a_guard_or_a_member_stopped():
    kept = {s for s in StageStatus if bool(accepts(jnp.int32(s)))}
    assert kept == {StageStatus.COMPLETED, StageStatus.LOSS_TOL}


def test_adam_stage_is_optax_adam_and_has_no_tolerances():
    params = {"a": jnp.array([0.3, -1.2]), "b": jnp.array(2.0)}
    grad = {"a": jnp.array([0.5, 0.1]), "b": jnp.array(-3.0)}
    solver = AdamSolver(1e-2)
    state = solver.init(params)
    step = solver.step(params, state, None, None, None, jnp.asarray(1.0), grad)
    upd, ref_state = optax.adam(1e-2).update(grad, optax.adam(1e-2).init(params), params)
    for x, y in zip(
        jax.tree_util.tree_leaves(step.params),
        jax.tree_util.tree_leaves(optax.apply_updates(params, upd)),
    ):
        np.testing.assert_array_equal(x, y)
    assert int(step.evals) == 0 and solver.fresh
    # the learning rate of a sweep's hyperparameters wins
    hyper = cj.config.Hyper.from_config(
        cj.TrainConfig(stages=(cj.stages.Adam(lr=0.5), cj.stages.LBFGS()))
    )
    fast = solver.step(params, state, None, None, None, jnp.asarray(1.0), grad, hyper)
    assert not np.allclose(fast.params["b"], step.params["b"])
    # a tiny gradient and no progress never stop Adam: only the guards do
    tiny = jax.tree_util.tree_map(jnp.zeros_like, grad)
    g0 = Guards(params, jnp.asarray(0.5), jnp.int32(0), jnp.int32(0))
    g = solver.terminate(
        g0, params, jnp.asarray(0.6), tiny, jnp.asarray(0.6), StepResult(params, state, 0.6, 0)
    )
    assert g.status == StageStatus.COMPLETED
