"""The stages' solvers through the adapters the engine drives (cgmpinn_jax/stages/): every
L-BFGS and dense solver reaches Rosenbrock's minimum, jaxopt's curvature filter, and each stage
object's solver with its rule. The dense members' internals: tests/test_ssbfgs.py; Gauss-Newton:
tests/test_gauss_newton.py; the stop rules and Adam: tests/test_stopping.py."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import cgmpinn_jax as cj
from cgmpinn_jax.stages import BFGS, LBFGS, SSBFGS, Adam, GaussNewton, SSBroyden
from cgmpinn_jax.stages._second_stage import JaxoptLBFGS
from cgmpinn_jax.training._objective import TermValues


def _max_abs(t):
    return jnp.max(jnp.stack([jnp.max(jnp.abs(x)) for x in jax.tree_util.tree_leaves(t)]))


def _rosenbrock(params, w, lam, batch):
    """lam_0 w_0 ((c - x)^2 + 100 (y - x^2)^2): its minimum (c, c^2) comes from the batch."""
    x, y = params["xy"][0], params["y"]
    v = lam[0] * w[0] * ((batch["c"] - x) ** 2 + 100.0 * (y - x**2) ** 2)
    return v, TermValues(v[None], v[None], jnp.zeros_like(v))


_MEMBERS = {
    "optax": LBFGS(),
    "jaxopt": LBFGS(backend="jaxopt"),
    "bfgs": BFGS(),
    "ssbfgs": SSBFGS(),
    "ssbroyden": SSBroyden(),
}


@pytest.mark.parametrize("member", list(_MEMBERS))
def test_second_stage_member_reaches_the_minimum(x64, member):
    """Driven as the engine drives it (init, set_point, then stored -> step), 300 iterations at
    most; float64. Gauss-Newton is left out: tests/test_gauss_newton.py solves Rosenbrock
    through its adapter (test_levenberg_marquardt_solves_rosenbrock)."""
    stage = _MEMBERS[member].solver(
        _rosenbrock, n_steps=300, n_params=2, dtype="float32", divergence_ratio=1e6
    )
    w, lam, batch = jnp.asarray([2.0]), jnp.asarray([0.75]), {"c": jnp.asarray(0.7)}
    p0 = {"xy": jnp.asarray([-1.2]), "y": jnp.asarray(1.0)}

    @jax.jit
    def run(p0):
        (v, tv), g = jax.value_and_grad(_rosenbrock, has_aux=True)(p0, w, lam, batch)
        st = stage.set_point(stage.init(p0, w, lam, batch), v, g, tv)

        def cond(c):
            i, p, st, _ = c
            _, g, _ = stage.stored(st, p)
            return (i < 300) & (_max_abs(g) > 1e-11)

        def body(c):
            i, p, st, evals = c
            v, g, _ = stage.stored(st, p)
            out = stage.step(p, st, w, lam, batch, v, g)
            return i + 1, out.params, out.state, evals + out.evals

        return jax.lax.while_loop(cond, body, (0, p0, st, jnp.int32(0)))

    it, p, st, evals = run(p0)
    v, g, _ = stage.stored(st, p)
    assert int(it) < 300, (member, int(it))
    np.testing.assert_allclose(float(p["xy"][0]), 0.7, atol=1e-7)
    np.testing.assert_allclose(float(p["y"]), 0.49, atol=1e-7)
    assert float(v) < 1e-14 and float(v) == pytest.approx(
        float(_rosenbrock(p, w, lam, batch)[0]), abs=1e-15
    )
    assert int(evals) >= int(it)  # every iteration counts at least one evaluation


@pytest.mark.parametrize(
    "stage, kind",
    [
        (Adam(), "AdamSolver"),
        (LBFGS(), "OptaxLBFGS"),
        (LBFGS(backend="jaxopt"), "JaxoptLBFGS"),
        (BFGS(), "DenseQuasiNewton"),
        (GaussNewton(), "GaussNewtonSolver"),
    ],
    ids=lambda x: getattr(x, "name", x),
)
def test_each_stage_builds_its_solver_with_its_own_rule(stage, kind):
    cfg = cj.TrainConfig(
        precision="float64", stages=(Adam(), stage) if stage.name != "adam" else (Adam(), LBFGS())
    )
    solver = cfg.stage(stage.name).solver(
        lambda *a: (0.0, None),
        n_steps=5,
        n_params=10,
        dtype=cfg.second_stage_dtype,
        divergence_ratio=cfg.divergence_ratio,
        lsq=object(),
    )
    assert type(solver).__name__ == kind
    assert solver.stopping.rule == (
        None if stage.name == "adam" else stage.stop_rule(cfg.second_stage_dtype)
    )
    assert solver.stopping.divergence_ratio == cfg.divergence_ratio


def test_jaxopt_keeps_only_positive_curvature_pairs():
    """A pair with y.s <= 1e-10 (float32 noise near a minimum, or an objective that changed)
    leaves jaxopt's memory as it was; a positive one is stored as jaxopt stored it."""
    import jaxopt

    def f(p, w, lam, batch):
        v = 0.5 * jnp.sum(p * p)
        return v, TermValues(v[None], v[None], jnp.zeros_like(v))

    solver = JaxoptLBFGS(
        f,
        lr=1.0,
        history=3,
        max_linesearch=10,
        maxiter=5,
        linesearch="zoom",
        linesearch_init="increase",
        reset_on_failure=False,
    )
    old = solver.init(jnp.ones(2), None, None, None)
    assert isinstance(solver.solver, jaxopt.LBFGS)
    new = old._replace(
        s_history=old.s_history + 1.0, y_history=old.y_history + 2.0, gamma=jnp.asarray(7.0)
    )
    s = jnp.array([1.0, 0.0])
    kept = solver._keep_positive_curvature(old, new, s, jnp.array([0.5, 0.0]))
    np.testing.assert_array_equal(kept.s_history, new.s_history)
    assert float(kept.gamma) == 7.0
    for y in (jnp.array([-0.5, 0.0]), jnp.array([1e-12, 0.0]), jnp.array([0.0, 3.0])):
        dropped = solver._keep_positive_curvature(old, new, s, y)
        np.testing.assert_array_equal(dropped.s_history, old.s_history)
        np.testing.assert_array_equal(dropped.y_history, old.y_history)
        assert float(dropped.gamma) == float(old.gamma)
