"""``train(init=...)``: start from a trained network (a TrainResult or its model)."""

import numpy as np
import pytest

import cgmpinn_jax as cj

SMALL = dict(width=10, depth=2)


def _cfg(adam, second=0, **kw):
    return cj.TrainConfig(
        stages=(cj.stages.Adam(steps=adam), cj.stages.LBFGS(steps=second)), **SMALL, **kw
    )


@pytest.fixture(scope="module")
def adam_run():
    return cj.train("poisson1d", "pinn", _cfg(200), key=0, quiet=True)


def test_init_without_steps_returns_the_same_network(adam_run):
    for init in (adam_run, adam_run.model):
        again = cj.train("poisson1d", "pinn", _cfg(0), key=0, quiet=True, init=init)
        assert again.metrics.rel_e2 == adam_run.metrics.rel_e2
        x = np.linspace(0.0, 1.0, 7)[:, None]
        np.testing.assert_array_equal(
            np.asarray([again.model(z) for z in x]), np.asarray([adam_run.model(z) for z in x])
        )


def test_second_stage_alone_from_an_adam_run_lowers_the_error():
    """Adam in one run; Gauss-Newton alone (adam steps 0) from its network in another, on more
    points: the error falls far below the Adam run's."""
    cfg = dict(precision="float64", width=12, depth=2)
    adam = cj.train(
        cj.get_problem("heat", n_pde=400, n_ic=100, n_bc=100),
        "pinn",
        cj.TrainConfig(stages=(cj.stages.Adam(steps=300), cj.stages.LBFGS(steps=0)), **cfg),
        key=0,
        quiet=True,
    )
    gn = cj.train(
        cj.get_problem("heat", n_pde=800, n_ic=100, n_bc=100),
        "pinn",
        cj.TrainConfig(stages=(cj.stages.Adam(steps=0), cj.stages.GaussNewton(steps=30)), **cfg),
        key=0,
        quiet=True,
        init=adam,
    )
    assert gn.budgets == {"adam": 0, "gauss_newton": 30} and list(gn.statuses) == [
        "adam",
        "gauss_newton",
    ]
    assert gn.metrics.rel_e2 < adam.metrics.rel_e2 / 10


def test_bad_init_is_a_clear_error(adam_run, tmp_path):
    with pytest.raises(ValueError, match=r"init's network is not this run's.*\(12, 1\)"):
        cj.train(
            "poisson1d",
            "pinn",
            cj.TrainConfig(
                stages=(cj.stages.Adam(steps=0), cj.stages.LBFGS(steps=0)), width=12, depth=2
            ),
            key=0,
            quiet=True,
            init=adam_run,
        )
    with pytest.raises(TypeError, match="init must be a TrainResult or its model"):
        cj.train("poisson1d", "pinn", _cfg(0), key=0, quiet=True, init={"w": 1})
    with pytest.raises(ValueError, match="not both"):
        cj.train("poisson1d", "pinn", _cfg(0), key=0, quiet=True, init=adam_run, resume=tmp_path)
