"""Precision options, the stages after Adam and their stop rules (tiny budgets)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import cgmpinn_jax as cj
from cgmpinn_jax.stages import LBFGS, SSBFGS, Adam
from cgmpinn_jax.training._precision import cast_floats, precision_scope
from stop_rules import loss_tol_fires_at

TINY = dict(stages=(Adam(steps=30), LBFGS(steps=20)), cgm={"k_upd": 10})


def _problem():
    return cj.get_problem("poisson1d", n_pde=64)


def _leaf_dtypes(model):
    return {str(x.dtype) for x in jax.tree_util.tree_leaves(model) if isinstance(x, jax.Array)}


@pytest.mark.parametrize("global_x64", [False, True])
def test_float64_run_leaves_global_config_as_it_was(global_x64):
    with jax.enable_x64(global_x64):
        res = cj.train(
            _problem(), "pinn", cj.TrainConfig(precision="float64", **TINY), key=0, quiet=True
        )
        assert jax.config.jax_enable_x64 == global_x64
    assert _leaf_dtypes(res.model) == {"float64"}
    assert np.isfinite(res.metrics.rel_e2) and res.history.loss.shape == (50,)
    assert res.predict(np.linspace(0, 1, 5)[:, None]).dtype == np.float64


@pytest.mark.slow  # CI time: heavy compile; run with -m slow
def test_float32_run_is_float32_even_under_global_x64():
    with jax.enable_x64(True):
        res = cj.train(_problem(), "pinn", cj.TrainConfig(**TINY), key=0, quiet=True)
        assert jax.config.jax_enable_x64
    assert _leaf_dtypes(res.model) == {"float32"}


@pytest.mark.slow  # CI time: heavy compile; run with -m slow
def test_mixed_casts_at_the_hand_off():
    res = cj.train(
        _problem(), "cgmpinn", cj.TrainConfig(precision="mixed", **TINY), key=0, quiet=True
    )
    assert not jax.config.jax_enable_x64
    assert _leaf_dtypes(res.model) == {"float64"}
    assert {str(x.dtype) for x in jax.tree_util.tree_leaves(res.batch)} == {"float64"}
    # the Adam stage is the float32 one: its first losses equal a float32 run's
    f32 = cj.train(_problem(), "cgmpinn", cj.TrainConfig(**TINY), key=0, quiet=True)
    np.testing.assert_array_equal(res.history.loss[:30], f32.history.loss[:30])
    assert res.statuses["lbfgs"] in (cj.StageStatus.COMPLETED, cj.StageStatus.LOSS_TOL)


def test_cast_floats_only_touches_floats():
    with precision_scope("float64", "adam"):
        tree = {"a": jnp.ones(2, jnp.float32), "i": jnp.arange(3), "k": jax.random.key(0)}
        out = cast_floats(tree, jnp.float64)
        assert out["a"].dtype == jnp.float64 and out["i"].dtype == tree["i"].dtype
        assert jax.dtypes.issubdtype(out["k"].dtype, jax.dtypes.prng_key)


SECOND = {
    "optax": LBFGS(steps=40),
    "jaxopt": LBFGS(steps=40, backend="jaxopt"),
    "ssbfgs": SSBFGS(steps=40),
}


@pytest.mark.parametrize("member", list(SECOND))
@pytest.mark.slow  # CI time: heavy compile; run with -m slow
def test_second_stage_members_cut_the_loss(member):
    """Each stage after Adam (L-BFGS by optax or jaxopt, dense self-scaled BFGS) takes the Adam
    result further down in float64. Measured (1D Poisson, 64 points, 200 Adam steps, 40
    iterations): optax 0.94, jaxopt 0.95, ssbfgs 0.70 of the starting loss; jaxopt before its
    first direction was scaled: 1.38 (a saturating first step)."""
    cfg = cj.TrainConfig(
        precision="float64", stages=(Adam(steps=200), SECOND[member]), cgm={"k_upd": 20}
    )
    res = cj.train(_problem(), "pinn", cfg, key=0, quiet=True)
    h = res.history
    start = h.loss[h.k == 201][0]
    assert res.e_loss < 0.97 * start, (start, res.e_loss)
    assert np.all(h.evals[200:][h.evals[200:] > 0] >= 1)


def test_dense_member_refuses_large_networks_before_compiling():
    cfg = cj.TrainConfig(
        stages=(Adam(steps=30), SSBFGS(steps=20, max_params=1000)),
        width=50,
        depth=4,
        cgm={"k_upd": 10},
    )
    with pytest.raises(ValueError, match=r"SSBFGS\.max_params=1000"):
        cj.train(_problem(), "pinn", cfg, key=0, quiet=True)


def test_presets_and_stop_rules():
    acc = cj.TrainConfig.preset("accurate")
    assert acc.precision == "float64" and acc.stages == cj.PRESETS["accurate"]["stages"]
    assert acc.stage_names == ("adam", "gauss_newton") and acc.stages[1].steps == 1500
    assert (
        acc.balancing.second_stage_apply == "refresh"
    )  # the measured choice (precision.md, 5 seeds)
    assert cj.TrainConfig.preset("faithful") == cj.TrainConfig()
    assert cj.TrainConfig.preset("accurate").with_steps(10, None).stage("adam").steps == 10
    with pytest.raises(ValueError, match="preset"):
        cj.TrainConfig.preset("fastest")

    # float32 keeps the tolerances every table run used; float64 stops only on a true stall
    def stop_rule(cfg):
        return cfg.stages[1].stop_rule(cfg.second_stage_dtype)

    assert stop_rule(cj.TrainConfig()) == (1e-7, 1e-3, 1000)
    f64 = stop_rule(cj.TrainConfig(precision="float64"))
    assert f64.ftol < 1e-6 and f64.gtol < 1e-7
    assert stop_rule(cj.TrainConfig(precision="mixed")) == f64
    assert (
        stop_rule(cj.TrainConfig(precision="float64", stages=(Adam(), LBFGS(ftol=0.1)))).ftol == 0.1
    )


@pytest.mark.slow  # CI time: heavy compile; run with -m slow
def test_loss_tol_fires_where_the_rule_says():
    """With a huge ftol almost every iteration is a stall; the stage stops (LOSS_TOL) at the
    iteration a replay of the rule on the recorded unweighted losses gives."""
    cfg = cj.TrainConfig(
        stages=(cj.stages.Adam(steps=20), cj.stages.LBFGS(steps=60, ftol=0.9, patience=7)),
        cgm={"k_upd": 10},
    )
    res = cj.train(_problem(), "pinn", cfg, key=0, quiet=True)
    assert res.statuses["lbfgs"] == cj.StageStatus.LOSS_TOL
    raw = res.history.raw[res.history.k > 20].sum(1)
    fired = loss_tol_fires_at(raw, ftol=0.9, patience=7)
    assert fired is not None and len(raw) == fired + 1
