"""A run as a sequence of stage objects (``TrainConfig.stages``): a third stage by configuration
alone, results keyed by each stage's name (a Gauss-Newton run reports no L-BFGS stage),
resume from every stage boundary, the removed per-stage attributes, and the configuration's
checks."""

import json
import warnings

import numpy as np
import pytest

import cgmpinn_jax as cj
from cgmpinn_jax.training import _checkpoint as ck

from helpers import assert_same_run, only

F64 = dict(
    precision="float64", cgm={"k_upd": 5}, width=16, depth=2
)  # small: Gauss-Newton solves stay cheap


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
    cfg = cj.TrainConfig(
        stages=(
            cj.stages.Adam(steps=30),
            cj.stages.LBFGS(steps=10),
            cj.stages.GaussNewton(steps=8),
        ),
        **F64,
    )
    return cj.train("poisson1d", "pinn", cfg, key=0, quiet=True)


def test_a_third_stage_is_configuration(three):
    names = [s.name for s in three.stages]
    assert names == ["adam", "lbfgs", "gauss_newton"]
    assert [s.label for s in three.stages] == ["Adam", "L-BFGS", "Gauss-Newton"]
    assert [s.budget for s in three.stages] == [30, 10, 8]
    assert list(three.statuses) == names
    assert all(
        s.iterations == s.budget for s in three.stages if s.status == cj.StageStatus.COMPLETED
    )
    np.testing.assert_array_equal(three.history.k, np.arange(1, 49))
    # the stages' records partition the history
    assert sum(s.iterations for s in three.stages) == len(three.history.k)
    assert sum(s.evaluations for s in three.stages) == int(np.sum(three.history.evals))
    # Gauss-Newton goes on from where L-BFGS stopped and lowers the loss
    loss = np.asarray(three.history.loss)
    assert loss[-1] < loss[40]
    summary = three.summary()
    assert summary["stages"] == names
    for s in three.stages:
        assert (
            summary[f"{s.name}_status"] == s.status.name and summary[f"{s.name}_budget"] == s.budget
        )
        assert summary[f"{s.name}_iterations"] == s.iterations
    assert (
        set(three.evals_per_iteration) == {"lbfgs", "gauss_newton"}
        and "adam_evals_per_iteration" not in summary
    )
    assert three.budgets == {"adam": 30, "lbfgs": 10, "gauss_newton": 8} and three.plan == tuple(
        three.budgets.items()
    )


def test_the_first_two_stages_are_the_two_stage_run(three):
    two = cj.train(
        "poisson1d",
        "pinn",
        cj.TrainConfig(stages=(cj.stages.Adam(steps=30), cj.stages.LBFGS(steps=10)), **F64),
        key=0,
        quiet=True,
    )
    _history_equal(three, two, rows=40)


POISSON = dict(width=8, depth=2)


@pytest.fixture(scope="module")
def poisson():
    return cj.get_problem("poisson1d", n_pde=64)


def test_a_gauss_newton_run_reports_gauss_newton_not_lbfgs(poisson):
    """Adam then Gauss-Newton: every result keys the second stage by its own name; no key of
    the summary speaks of L-BFGS."""
    cfg = cj.TrainConfig(
        stages=(cj.stages.Adam(steps=200), cj.stages.GaussNewton(steps=20)), **POISSON
    )
    res = cj.train(poisson, "cgmpinn", cfg, key=0, quiet=True)
    assert list(res.statuses) == ["adam", "gauss_newton"]
    assert [s.name for s in res.stages] == ["adam", "gauss_newton"] and res.budgets == {
        "adam": 200,
        "gauss_newton": 20,
    }
    summary = res.summary()
    assert not [k for k in summary if "lbfgs" in k], sorted(summary)
    assert summary["stages"] == ["adam", "gauss_newton"]
    assert summary["gauss_newton_status"] == res.statuses["gauss_newton"].name
    assert "gauss_newton_evals_per_iteration" in summary and "gauss_newton_budget" in summary
    assert res.stage_label("gauss_newton") == "Gauss-Newton"
    assert not any("L-BFGS" in line or "lbfgs" in line for line in res.stage_lines())
    assert np.isfinite(res.metrics.rel_e2)


def test_an_lbfgs_run_reports_lbfgs(poisson):
    cfg = cj.TrainConfig(stages=(cj.stages.Adam(steps=200), cj.stages.LBFGS(steps=20)), **POISSON)
    res = cj.train(poisson, "cgmpinn", cfg, key=0, quiet=True)
    assert list(res.statuses) == ["adam", "lbfgs"]
    summary = res.summary()
    assert (
        summary["stages"] == ["adam", "lbfgs"]
        and "lbfgs_status" in summary
        and "lbfgs_budget" in summary
    )
    assert not [k for k in summary if "gauss_newton" in k]
    assert res.stage_label("lbfgs") == "L-BFGS" and res.stage_lines()[1].startswith("L-BFGS: ")


@pytest.mark.slow  # CI time (run with -m slow); a faster test covers the same path
def test_three_stages_resume_bit_for_bit_from_every_boundary(tmp_path, monkeypatch):
    """A mixed-precision run of three stages, checkpointed at every chunk boundary and
    resumed at both hand-offs and inside the third stage."""
    monkeypatch.setattr(ck, "_KEEP", 1000)
    cfg = cj.TrainConfig(
        stages=(cj.stages.Adam(steps=20), cj.stages.LBFGS(steps=11), cj.stages.SSBFGS(steps=11)),
        precision="mixed",
        cgm={"k_upd": 10},
        width=16,
        depth=2,
    )
    plain = cj.train("poisson1d", "cgmpinn", cfg, key=2, quiet=True)
    folder = tmp_path / "run"
    saved = cj.train(
        "poisson1d", "cgmpinn", cfg, key=2, quiet=True, checkpoint_dir=folder, checkpoint_every=0
    )
    assert_same_run(plain, saved)
    ckpts = sorted((folder / ck.SUBDIR).iterdir())
    where = [json.loads((c / "meta.json").read_text())["position"] for c in ckpts]
    seen = {(p["stage"], p["handed"]) for p in where}
    assert {
        ("adam", True),
        ("lbfgs", False),
        ("lbfgs", True),
        ("ssbfgs", False),
        ("ssbfgs", True),
    } <= seen, where
    # kill points: both hand-offs and the third stage's last refresh (Adam's and the second
    # stage's own are tested in test_checkpoint)
    at = (
        "stage",
        "chunk",
        "handed",
        "done",
    )  # a position also records where inside a chunk it stands
    picks = [
        [{k: p[k] for k in at} for p in where].index(
            {"stage": s, "chunk": 0, "handed": False, "done": 0}
        )
        for s in ("lbfgs", "ssbfgs")
    ]
    for i in picks + [len(where) - 1]:
        assert_same_run(plain, cj.resume(only(folder, ckpts[i]), quiet=True))


def test_the_removed_result_attributes_are_gone(three):
    """The per-stage attributes of 0.2 are no aliases any more: ``statuses[name]``,
    ``budgets[name]``, ``stage_label(name)`` and ``evals_per_iteration[name]`` replace them."""
    for old in (
        "adam_status",
        "lbfgs_status",
        "adam_steps",
        "lbfgs_steps",
        "second_stage_name",
        "evals_per_lbfgs_iteration",
    ):
        with pytest.raises(AttributeError):
            getattr(three, old)
    assert three.budgets["lbfgs"] == 10 and three.stage_label("lbfgs") == "L-BFGS"
    assert three.evals_per_iteration["gauss_newton"] >= 1.0


def test_stages_are_checked():
    with pytest.raises(ValueError, match=r"stages\[1\] must be a stage of cgmpinn_jax\.stages"):
        cj.TrainConfig(stages=(cj.stages.Adam(), "newton"))
    with pytest.raises(
        ValueError, match=r"stages\[0\] must be a stage of cgmpinn_jax\.stages.*got 'adam'"
    ):
        cj.TrainConfig(stages=("adam", "lbfgs"))  # the names of 0.2 are no stages
    with pytest.raises(ValueError, match=r"a stage dict needs a 'name'"):
        cj.TrainConfig(stages=({"name": "adam"}, {"name": "newton"}))
    with pytest.raises(ValueError, match="Adam can only be the first stage"):
        cj.TrainConfig(stages=(cj.stages.LBFGS(), cj.stages.Adam()))
    with pytest.raises(ValueError, match="twice"):
        cj.TrainConfig(stages=(cj.stages.Adam(), cj.stages.LBFGS(), cj.stages.LBFGS()))
    with pytest.raises(ValueError, match="twice"):
        cj.TrainConfig(
            stages=(
                cj.stages.Adam(),
                cj.stages.GaussNewton(steps=3),
                cj.stages.GaussNewton(form="svd"),
            )
        )
    with pytest.raises(ValueError, match="non-empty tuple"):
        cj.TrainConfig(stages=())
    with pytest.raises(ValueError, match=r"one budget per stage \(adam, lbfgs\), got 3"):
        cj.TrainConfig(stages=(cj.stages.Adam(steps=1), cj.stages.LBFGS(steps=2))).with_steps(
            1, 2, 3
        )
    with pytest.raises(ValueError, match=r"Adam\.steps must be None or a non-negative int"):
        cj.stages.Adam(steps=-1)
    with pytest.raises(TypeError, match="TrainConfig has no option 'stage_steps'"):
        cj.TrainConfig(stage_steps=(1, 2))
    # a stage holds its own solver's options: nothing to cross-check against another stage
    cfg = cj.TrainConfig(
        stages=(cj.stages.Adam(), cj.stages.LBFGS(), cj.stages.GaussNewton(max_trials=5))
    )
    assert (
        cfg.stage_names == ("adam", "lbfgs", "gauss_newton")
        and cfg.stage("gauss_newton").max_trials == 5
    )
    assert [type(st) for st in cfg.stages] == [
        cj.stages.Adam,
        cj.stages.LBFGS,
        cj.stages.GaussNewton,
    ]
    # a single stage is a run too (and a lone stage object reads as a one-stage tuple)
    assert cj.TrainConfig(stages=cj.stages.GaussNewton(steps=3)).stages == (
        cj.stages.GaussNewton(steps=3),
    )


def test_stage_objects_are_frozen_hashable_and_checked_by_name():
    gn = cj.stages.GaussNewton(steps=20, form="svd")
    assert gn == cj.stages.GaussNewton(steps=20, form="svd") and hash(gn) == hash(
        cj.stages.GaussNewton(steps=20, form="svd")
    )
    with pytest.raises(Exception, match="cannot assign to field"):
        gn.steps = 5
    for make, message in (
        (lambda: cj.stages.GaussNewton(mu_max=0.0), r"GaussNewton\.mu_max must be > 0"),
        (lambda: cj.stages.LBFGS(history=-3), r"LBFGS\.history must be a positive int"),
        (lambda: cj.stages.SSBroyden(max_params=1.5), r"SSBroyden\.max_params"),
        (lambda: cj.stages.Adam(lr="big"), r"Adam\.lr must be a finite number"),
    ):
        with pytest.raises(ValueError, match=message):
            make()
    with pytest.raises(
        ValueError,
        match=r"LBFGS\.linesearch is a jaxopt option; it has no effect with backend='optax'",
    ):
        cj.stages.LBFGS(linesearch="backtracking")
    assert cj.stages.LBFGS(linesearch="backtracking", backend="jaxopt").linesearch == "backtracking"


def test_stages_round_trip_and_leave_old_records_alone():
    d = cj.TrainConfig().to_dict()
    assert [st["name"] for st in d["stages"]] == ["adam", "lbfgs"] and "stage_steps" not in d
    cfg = cj.TrainConfig(
        stages=(cj.stages.Adam(steps=10), cj.stages.LBFGS(), cj.stages.GaussNewton(steps=5))
    )
    back = cj.TrainConfig(**json.loads(json.dumps(cfg.to_dict())))
    assert back == cfg and isinstance(back.stages, tuple) and hash(back) == hash(cfg)
    every = (
        cj.stages.Adam(steps=1),
        cj.stages.LBFGS(backend="jaxopt", linesearch_init="current"),
        cj.stages.BFGS(),
        cj.stages.SSBFGS(max_params=50),
        cj.stages.SSBroyden(gtol=0.0),
        cj.stages.GaussNewton(form="pcg"),
    )
    cfg = cj.TrainConfig(stages=every)
    assert cj.TrainConfig.from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg
    # a record of 0.2 (its stage names as strings beside second_stage) is not this version's config
    with pytest.raises(TypeError, match="has no option 'second_stage'"):
        cj.TrainConfig.from_dict({"stages": ["adam", "lbfgs"], "second_stage": "gauss_newton"})


def test_stop_rules_follow_each_stage():
    cfg = cj.TrainConfig(
        stages=(cj.stages.Adam(), cj.stages.LBFGS(), cj.stages.GaussNewton()), precision="float64"
    )
    rule = {
        name: cfg.stage(name).stop_rule(cfg.second_stage_dtype)
        for name in ("lbfgs", "gauss_newton")
    }
    assert rule["gauss_newton"].patience != rule["lbfgs"].patience
    assert (
        rule["lbfgs"]
        == cj.stages.LBFGS().stop_rule("float64")
        == cj.stages.StopRule(1e-12, 1e-9, 2000)
    )
    assert not hasattr(cj.config, "stop_rule")
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
    cfg = cj.TrainConfig(
        stages=(cj.stages.Adam(steps=20), cj.stages.LBFGS(steps=6), cj.stages.GaussNewton(steps=5)),
        precision="float64",
        cgm={"k_upd": 5},
        width=8,
        depth=1,
    )
    sw = cj.sweep("poisson1d", "cgmpinn", cfg, seeds=[0, 1], quiet=True, keep_histories=True)
    one = cj.train("poisson1d", "cgmpinn", cfg, key=1, quiet=True)
    assert list(sw.statuses) == ["adam", "lbfgs", "gauss_newton"] and sw.statuses[
        "gauss_newton"
    ].shape == (2,)
    assert "gauss_newton_status" in sw.to_dict()
    assert [int(sw.statuses[n][1]) for n in sw.statuses] == [int(s) for s in one.statuses.values()]
    np.testing.assert_allclose(sw.histories[1].loss, one.history.loss, rtol=1e-6)
    np.testing.assert_allclose(
        sw.histories[1].loss[:26], one.history.loss[:26], rtol=1e-10
    )  # Adam, L-BFGS
