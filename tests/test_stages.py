"""A run as a sequence of stages (``TrainConfig.stages``): a third stage by configuration
alone, the same results as the two-stage spelling, resume from every stage boundary, the
deprecated per-stage status names, and the configuration's checks."""

import json
import warnings

import numpy as np
import pytest

import cgmpinn_jax as cj
from cgmpinn_jax.training import _checkpoint as ck

from test_checkpoint import assert_same_run, only

F64 = dict(precision="float64", cgm={"k_upd": 5}, width=16, depth=2)  # small: Gauss-Newton solves stay cheap


def _history_equal(a, b, rows=None):
    for name in ("k", "loss", "terms", "raw", "lambdas", "evals"):
        x, y = np.asarray(getattr(a.history, name)), np.asarray(getattr(b.history, name))
        if rows is not None:
            x = x[:rows]
        np.testing.assert_array_equal(x, y, err_msg=name)


@pytest.fixture(scope="module")
def three():
    """Adam, L-BFGS, then Gauss-Newton, by configuration only (PINN: no curriculum, so the
    first two stages do not depend on the third's budget)."""
    cfg = cj.TrainConfig(stages=(cj.stages.Adam(steps=30), cj.stages.LBFGS(steps=10), cj.stages.GaussNewton(steps=8)), **F64)
    return cj.train("poisson1d", "pinn", cfg, key=0, quiet=True)


def test_a_third_stage_is_configuration(three):
    names = [s.name for s in three.stages]
    assert names == ["adam", "lbfgs", "gauss_newton"]
    assert [s.label for s in three.stages] == ["Adam", "L-BFGS", "Gauss-Newton"]
    assert [s.budget for s in three.stages] == [30, 10, 8]
    assert list(three.statuses) == names
    assert all(s.iterations == s.budget for s in three.stages if s.status == cj.StageStatus.COMPLETED)
    np.testing.assert_array_equal(three.history.k, np.arange(1, 49))
    # the stages' records partition the history
    assert sum(s.iterations for s in three.stages) == len(three.history.k)
    assert sum(s.evaluations for s in three.stages) == int(np.sum(three.history.evals))
    # Gauss-Newton goes on from where L-BFGS stopped and lowers the loss
    loss = np.asarray(three.history.loss)
    assert loss[-1] < loss[40]
    assert three.summary()["stages"] == {n: s.name for n, s in three.statuses.items()}


def test_the_first_two_stages_are_the_two_stage_run(three):
    two = cj.train("poisson1d", "pinn", cj.TrainConfig(stages=(cj.stages.Adam(steps=30), cj.stages.LBFGS(steps=10)), **F64), key=0, quiet=True)
    _history_equal(three, two, rows=40)


def test_stages_spell_the_second_stage_bit_for_bit():
    """``stages=("adam", "gauss_newton")`` is ``second_stage="gauss_newton"`` under another
    stage name: every history entry and the metrics equal."""
    a = cj.train("poisson1d", "cgmpinn", cj.TrainConfig(stages=(cj.stages.Adam(steps=20), cj.stages.GaussNewton(steps=6)), 
                                                        **F64), key=1, quiet=True)
    b = cj.train("poisson1d", "cgmpinn", cj.TrainConfig(stages=(cj.stages.Adam(steps=20), cj.stages.GaussNewton(steps=6)), **F64),
                 key=1, quiet=True)
    _history_equal(a, b)
    assert a.metrics == b.metrics and a.e_loss == b.e_loss
    assert list(b.statuses) == ["adam", "gauss_newton"] and a.statuses["lbfgs"] == b.statuses["gauss_newton"]


@pytest.mark.slow  # CI time (run with -m slow); a faster test covers the same path
def test_three_stages_resume_bit_for_bit_from_every_boundary(tmp_path, monkeypatch):
    """A mixed-precision run of three stages, checkpointed at every chunk boundary and
    resumed at both hand-offs and inside the third stage."""
    monkeypatch.setattr(ck, "_KEEP", 1000)
    cfg = cj.TrainConfig(stages=(cj.stages.Adam(steps=20), cj.stages.LBFGS(steps=11), cj.stages.SSBFGS(steps=11)), precision="mixed", cgm={"k_upd": 10},
                         width=16, depth=2)
    plain = cj.train("poisson1d", "cgmpinn", cfg, key=2, quiet=True)
    folder = tmp_path / "run"
    saved = cj.train("poisson1d", "cgmpinn", cfg, key=2, quiet=True, checkpoint_dir=folder, checkpoint_every=0)
    assert_same_run(plain, saved)
    ckpts = sorted((folder / ck.SUBDIR).iterdir())
    where = [json.loads((c / "meta.json").read_text())["position"] for c in ckpts]
    seen = {(p["stage"], p["handed"]) for p in where}
    assert {("adam", True), ("lbfgs", False), ("lbfgs", True), ("ssbfgs", False), ("ssbfgs", True)} <= seen, where
    # kill points: both hand-offs and the third stage's last refresh (Adam's and the second
    # stage's own are tested in test_checkpoint)
    at = ("stage", "chunk", "handed", "done")  # a position also records where inside a chunk it stands
    picks = [[{k: p[k] for k in at} for p in where].index({"stage": s, "chunk": 0, "handed": False, "done": 0})
             for s in ("lbfgs", "ssbfgs")]
    for i in picks + [len(where) - 1]:
        assert_same_run(plain, cj.resume(only(folder, ckpts[i]), quiet=True))


def test_deprecated_status_names_warn_and_agree(three):
    with pytest.warns(DeprecationWarning, match="statuses"):
        assert three.adam_status == three.statuses["adam"]
    with pytest.warns(DeprecationWarning, match="statuses"):
        assert three.lbfgs_status == three.statuses["lbfgs"]


def test_stages_are_checked():
    with pytest.raises(ValueError, match=r"stages\[1\] must be one of"):
        cj.TrainConfig(stages=("adam", "newton"))
    with pytest.raises(ValueError, match="'adam' can only be the first stage"):
        cj.TrainConfig(stages=(cj.stages.LBFGS(), cj.stages.Adam()))
    with pytest.raises(ValueError, match="twice"):
        cj.TrainConfig(stages=(cj.stages.Adam(), cj.stages.LBFGS(), cj.stages.LBFGS()))
    with pytest.raises(ValueError, match="non-empty tuple"):
        cj.TrainConfig(stages=())
    with pytest.raises(ValueError, match="3 budgets"):
        cj.TrainConfig(stages=(cj.stages.Adam(steps=1), cj.stages.LBFGS(steps=2)))
    with pytest.raises(ValueError, match=r"stage_steps\[0\]"):
        cj.TrainConfig(stage_steps=(-1, 2))
    # a member's own options are accepted when some stage runs that member
    cfg = cj.TrainConfig(stages=(cj.stages.Adam(), cj.stages.LBFGS(), cj.stages.GaussNewton(max_trials=5)))
    assert cfg.members == ("optax", "gauss_newton")
    with pytest.raises(ValueError, match="Gauss-Newton option"):
        cj.TrainConfig(stages=(cj.stages.Adam(), cj.stages.LBFGS()))


def test_stages_round_trip_and_leave_old_records_alone():
    assert "stages" not in cj.TrainConfig().to_dict() and "stage_steps" not in cj.TrainConfig().to_dict()
    cfg = cj.TrainConfig(stages=(cj.stages.Adam(steps=10), cj.stages.LBFGS(), cj.stages.GaussNewton(steps=5)))
    back = cj.TrainConfig(**json.loads(json.dumps(cfg.to_dict())))
    assert back == cfg and isinstance(back.stages, tuple) and hash(back) == hash(cfg)


def test_stop_rules_follow_each_stage_member():
    from cgmpinn_jax.config import stop_rule

    cfg = cj.TrainConfig(stages=(cj.stages.Adam(), cj.stages.LBFGS(), cj.stages.GaussNewton()), precision="float64")
    assert stop_rule(cfg, "gauss_newton").patience != stop_rule(cfg, "optax").patience
    assert stop_rule(cfg) == stop_rule(cfg, "optax")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from cgmpinn_jax.training._schedule import resolve

        setup = resolve(cj.get_problem("poisson1d"), cj.get_method("pinn"), cfg)
    assert setup.stages == (("adam", 5000), ("lbfgs", 10000), ("gauss_newton", 10000))
    assert setup.k_max == 25000


@pytest.mark.slow  # CI time (run with -m slow); a faster test covers the same path
def test_a_sweep_runs_the_same_stages():
    """``cj.sweep`` over seeds with three stages: each member has every stage's status and
    follows ``cj.train`` (vmapped float64 programs round differently in the last digits, and
    the Gauss-Newton solves amplify that: 1e-6)."""
    cfg = cj.TrainConfig(stages=(cj.stages.Adam(steps=20), cj.stages.LBFGS(steps=6), cj.stages.GaussNewton(steps=5)), precision="float64",
                         cgm={"k_upd": 5}, width=8, depth=1)
    sw = cj.sweep("poisson1d", "cgmpinn", cfg, seeds=[0, 1], quiet=True, keep_histories=True)
    one = cj.train("poisson1d", "cgmpinn", cfg, key=1, quiet=True)
    assert list(sw.statuses) == ["adam", "lbfgs", "gauss_newton"] and sw.statuses["gauss_newton"].shape == (2,)
    assert "gauss_newton_status" in sw.to_dict()
    assert [int(sw.statuses[n][1]) for n in sw.statuses] == [int(s) for s in one.statuses.values()]
    np.testing.assert_allclose(sw.histories[1].loss, one.history.loss, rtol=1e-6)
    np.testing.assert_allclose(sw.histories[1].loss[:26], one.history.loss[:26], rtol=1e-10)  # Adam, L-BFGS
