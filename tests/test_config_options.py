"""TrainConfig's option groups: one frozen class per part, checked on construction; the flat
names of 0.2 warn and work; stored flat configs load; presets and runs are what they were."""

from __future__ import annotations

import dataclasses
import inspect
import json
import warnings

import pytest

import cgmpinn_jax as cj
from benchmarks import bitwise
from cgmpinn_jax import (AdamOptions, CGMOptions, DenseOptions, GaussNewtonOptions, LBFGSOptions, ReLoBRaLoOptions,
                         SecondStageOptions, TrainConfig)
from cgmpinn_jax._config_flat import MOVED
from cgmpinn_jax.config import flat_dict, stored_config

#: ``TrainConfig().to_dict()`` of 0.2 (the flat form; records, saved models and checkpoints hold it)
FLAT_DEFAULTS = {
    "adam_steps": None, "lbfgs_steps": None, "k_upd": None, "width": None, "depth": None, "adam_lr": 0.001,
    "precision": "float32", "second_stage": "optax", "lbfgs_lr": 1.0, "lbfgs_history": 100, "lbfgs_max_linesearch": 10,
    "lbfgs_linesearch": "zoom", "lbfgs_linesearch_init": "increase", "lbfgs_reset_on_failure": False,
    "dense_max_params": 20000, "gn_form": "auto", "gn_mu_init": 0.001, "gn_mu_min": 1e-15, "gn_mu_max": 1e8,
    "gn_max_trials": 12, "gn_memory_limit_gb": 16.0, "lbfgs_gtol": None, "lbfgs_ftol": None, "lbfgs_tol_patience": None,
    "divergence_ratio": 1e6, "n_components": 4, "beta": 1.0, "eps": 1e-6, "c_sat": 0.8, "variance_factor": True,
    "relobralo": None, "relobralo_alpha": 0.999, "relobralo_rho": 0.99, "relobralo_temperature": 1.0,
    "relobralo_variant": "reference", "relobralo_lbfgs_apply": "iteration",
}
#: the presets of 0.2, as flat fields that differ from the defaults
FLAT_PRESETS = {
    "faithful": {},
    "accurate": {"precision": "float64", "second_stage": "gauss_newton", "lbfgs_steps": 1500,
                 "relobralo_lbfgs_apply": "refresh"},
    "accurate_lbfgs": {"precision": "float64", "second_stage": "optax", "relobralo_lbfgs_apply": "refresh"},
}
#: a valid non-default value of every old flat name, and the member it needs
SAMPLES = {
    "adam_steps": 7, "adam_lr": 2e-3, "lbfgs_steps": 9, "lbfgs_gtol": 0.5, "lbfgs_ftol": 0.25, "lbfgs_tol_patience": 5,
    "lbfgs_lr": 0.5, "lbfgs_history": 7, "lbfgs_max_linesearch": 4, "lbfgs_linesearch": ("backtracking", "jaxopt"),
    "lbfgs_linesearch_init": ("max", "jaxopt"), "lbfgs_reset_on_failure": (True, "jaxopt"), "dense_max_params": 100,
    "gn_form": ("kernel", "gauss_newton"), "gn_mu_init": (1e-2, "gauss_newton"), "gn_mu_min": (1e-12, "gauss_newton"),
    "gn_mu_max": (1e6, "gauss_newton"), "gn_max_trials": (5, "gauss_newton"), "gn_memory_limit_gb": (2.0, "gauss_newton"),
    "k_upd": 3, "n_components": 3, "beta": 2.0, "eps": 1e-5, "c_sat": 0.5, "variance_factor": False,
    "system_weighting": "per_equation", "relobralo": "adam", "relobralo_alpha": 0.9, "relobralo_rho": 0.5,
    "relobralo_temperature": 2.0, "relobralo_variant": "original", "relobralo_lbfgs_apply": "refresh",
}


def test_train_config_composes_one_group_per_part():
    fields = dataclasses.fields(TrainConfig)
    assert len(fields) <= 16
    groups = {f.name: type(f.default) for f in fields if dataclasses.is_dataclass(f.default)}
    assert groups == {"adam": AdamOptions, "second": SecondStageOptions, "lbfgs": LBFGSOptions, "dense": DenseOptions,
                      "gauss_newton": GaussNewtonOptions, "cgm": CGMOptions, "balancing": ReLoBRaLoOptions,
                      "network": cj.NetworkOptions}
    for cls in groups.values():
        assert cls.__dataclass_params__.frozen
    # no Gauss-Newton option, nor any option of the second stage as a whole, is named after L-BFGS
    names = [f.name for f in fields] + [f.name for cls in (SecondStageOptions, GaussNewtonOptions, ReLoBRaLoOptions)
                                        for f in dataclasses.fields(cls)]
    assert not [n for n in names if "lbfgs" in n and n != "lbfgs"]
    # the signature's defaults are the fields' (both are written out)
    params = inspect.signature(TrainConfig.__init__).parameters
    assert {f.name: f.default for f in fields} == {n: p.default for n, p in params.items() if n not in ("self", "flat")}


@pytest.mark.parametrize("make, message", [
    (lambda: AdamOptions(steps=-1), r"AdamOptions\.steps must be None or a non-negative int"),
    (lambda: AdamOptions(lr=0.0), r"AdamOptions\.lr must be > 0"),
    (lambda: AdamOptions(lr=float("nan")), r"AdamOptions\.lr must be a finite number"),
    (lambda: SecondStageOptions(steps=1.5), r"SecondStageOptions\.steps"),
    (lambda: SecondStageOptions(gtol=-1.0), r"SecondStageOptions\.gtol must be >= 0"),
    (lambda: SecondStageOptions(patience=0), r"SecondStageOptions\.patience must be None or a positive int"),
    (lambda: LBFGSOptions(history=0), r"LBFGSOptions\.history must be a positive int"),
    (lambda: LBFGSOptions(linesearch="wolfe"), r"LBFGSOptions\.linesearch must be one of"),
    (lambda: LBFGSOptions(reset_on_failure="yes"), r"LBFGSOptions\.reset_on_failure must be True or False"),
    (lambda: DenseOptions(max_params=0), r"DenseOptions\.max_params"),
    (lambda: GaussNewtonOptions(form="qr"), r"GaussNewtonOptions\.form must be one of \('auto', 'kernel', 'gramian', 'pcg', 'matfree', 'svd'\)"),
    (lambda: GaussNewtonOptions(mu_init=1e9), r"mu_min <= mu_init <= mu_max"),
    (lambda: GaussNewtonOptions(max_trials=True), r"GaussNewtonOptions\.max_trials"),
    (lambda: GaussNewtonOptions(memory_limit_gb=-1.0), r"GaussNewtonOptions\.memory_limit_gb must be > 0"),
    (lambda: CGMOptions(k_upd=0), r"CGMOptions\.k_upd"),
    (lambda: CGMOptions(n_components=0), r"CGMOptions\.n_components must be a positive int or 'bic'"),
    (lambda: CGMOptions(beta=-1.0), r"CGMOptions\.beta must be >= 0"),
    (lambda: CGMOptions(c_sat=1.5), r"CGMOptions\.c_sat must be in \(0, 1\]"),
    (lambda: CGMOptions(system_weighting="sum"), r"CGMOptions\.system_weighting"),
    (lambda: ReLoBRaLoOptions(stages="always"), r"ReLoBRaLoOptions\.stages"),
    (lambda: ReLoBRaLoOptions(rho=2.0), r"ReLoBRaLoOptions\.rho must be in \[0, 1\]"),
    (lambda: ReLoBRaLoOptions(temperature=float("inf")), r"ReLoBRaLoOptions\.temperature"),
    (lambda: ReLoBRaLoOptions(second_stage_apply="sometimes"), r"ReLoBRaLoOptions\.second_stage_apply"),
    (lambda: TrainConfig(width=0), r"TrainConfig\.width"),
    (lambda: TrainConfig(divergence_ratio=float("nan")), r"TrainConfig\.divergence_ratio"),
    (lambda: TrainConfig(cgm={"beta": -1.0}), r"CGMOptions\.beta"),
    (lambda: TrainConfig(stages=(cj.stages.Adam(step=3), cj.stages.LBFGS())), r"TrainConfig\.adam: AdamOptions has no option 'step'; its options: steps, lr"),
    (lambda: TrainConfig(stages=(cj.stages.Adam(), cj.stages.LBFGS())),
     r"TrainConfig\.gauss_newton sets max_trials: Gauss-Newton options.*second_stage='optax'"),
    (lambda: TrainConfig(stages=(cj.stages.Adam(), cj.stages.LBFGS(linesearch="backtracking"))), r"TrainConfig\.lbfgs\.linesearch is a jaxopt"),
])
def test_each_option_is_checked_by_name(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_wrong_types_and_names_are_type_errors():
    with pytest.raises(TypeError, match=r"TrainConfig\.adam must be a AdamOptions \(or a dict of its options\)"):
        TrainConfig(adam=5)
    with pytest.raises(TypeError, match="unexpected keyword argument 'adam_step'"):
        TrainConfig(adam_step=5)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        TrainConfig().nope  # noqa: B018


def test_groups_as_objects_or_dicts_and_the_round_trips():
    a = TrainConfig(stages=(cj.stages.Adam(steps=10), cj.stages.GaussNewton(steps=5, mu_init=1e-2)), 
                    cgm=CGMOptions(system_weighting="norm"))
    b = TrainConfig(stages=(cj.stages.Adam(steps=10), cj.stages.GaussNewton(steps=5, mu_init=1e-2)), 
                    cgm={"system_weighting": "norm"})
    assert a == b and hash(a) == hash(b)
    d = json.loads(json.dumps(a.to_dict()))
    assert d["adam"] == {"steps": 10, "lr": 1e-3} and d["cgm"]["system_weighting"] == "norm"
    assert TrainConfig.from_dict(d) == a == TrainConfig(**d)
    assert TrainConfig().cgm.system_weighting == "per_equation"
    assert "system_weighting" not in TrainConfig().to_dict()["cgm"]  # at its default: the dict (and hash) of 0.2
    assert "stages" not in TrainConfig().to_dict()
    # replace and preset change only the options they name
    acc = TrainConfig.preset("accurate", cgm={"k_upd": 4}).with_steps(None, 3)
    assert (acc.second.steps, acc.balancing.second_stage_apply, acc.cgm.k_upd) == (3, "refresh", 4)
    assert acc.replace(balancing={"alpha": 0.5}).balancing == ReLoBRaLoOptions(alpha=0.5, second_stage_apply="refresh")
    assert acc.replace(balancing=ReLoBRaLoOptions()).balancing == ReLoBRaLoOptions()  # an object replaces the group


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_flat_name_warns_naming_the_new_spelling_and_works(old):
    value, member = SAMPLES[old] if isinstance(SAMPLES[old], tuple) else (SAMPLES[old], "optax")
    group, option = MOVED[old]
    with pytest.warns(DeprecationWarning, match=rf"TrainConfig option '{old}' is deprecated.*{group}\.{option}") as rec:
        cfg = TrainConfig(second_stage=member, **{old: value})
    assert rec[0].filename == __file__  # the warning points at the caller
    assert getattr(getattr(cfg, group), option) == value
    with pytest.warns(DeprecationWarning, match=rf"'{old}'.*read as config\.{group}\.{option}") as rec:
        assert getattr(cfg, old) == value
    assert rec[0].filename == __file__
    with pytest.warns(DeprecationWarning, match=old):
        assert dataclasses.replace(TrainConfig(second_stage=member), **{old: value}) == cfg


def test_old_spellings_mix_with_groups_and_presets():
    with pytest.warns(DeprecationWarning, match="lbfgs_steps"):
        acc = TrainConfig.preset("accurate", lbfgs_steps=20)
    assert acc == TrainConfig.preset("accurate").with_steps(None, 20)
    with pytest.warns(DeprecationWarning) as rec:
        cfg = TrainConfig(stages=(cj.stages.Adam(), cj.stages.LBFGS(steps=3, ftol=0.5)), lbfgs_steps=4, lbfgs_max_linesearch=6)
    assert "lbfgs.max_linesearch and dense.max_linesearch" in str(rec[1].message) and len(rec) == 2
    assert cfg.second == SecondStageOptions(steps=4, ftol=0.5)  # the old name goes on top of the group given
    assert cfg.lbfgs.max_linesearch == cfg.dense.max_linesearch == 6  # the dense members read it too in 0.2


def test_the_library_uses_no_old_name():
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        cfg = TrainConfig.preset("accurate").with_steps(5, None)
        TrainConfig.from_dict(cfg.to_dict())
        TrainConfig.from_dict(flat_dict(cfg))  # a stored flat config: data, read without a warning
        cj.config.Hyper.from_config(cfg)
        cj.config.stop_rule(cfg)
        cj.config.Hyper.option(cfg, "adam_lr", 0.5)


def test_flat_dict_is_the_to_dict_of_0_2():
    """``flat_dict`` keys the paper-table runs cached before the move: it must stay 0.2's dict."""
    assert flat_dict(TrainConfig()) == FLAT_DEFAULTS
    for name, over in FLAT_PRESETS.items():
        assert flat_dict(TrainConfig.preset(name)) == {**FLAT_DEFAULTS, **over}
    cfg = TrainConfig(stages=(cj.stages.Adam(), cj.stages.GaussNewton()), cgm={"system_weighting": "norm"})
    assert flat_dict(cfg) == {**FLAT_DEFAULTS, "stages": ("adam", "gauss_newton"), "system_weighting": "norm"}
    assert flat_dict(TrainConfig(stages=(cj.stages.Adam(), cj.stages.LBFGS())))["dense_max_linesearch"] == 3  # not a 0.2 setting


def test_stored_flat_configs_of_0_2_load():
    """Records, saved models and checkpoints of 0.2 hold flat dicts; they read as the same
    settings (the presets are those of 0.2 exactly, so their runs are the same bit for bit)."""
    for name, over in FLAT_PRESETS.items():
        old = json.loads(json.dumps({**FLAT_DEFAULTS, **over}))
        assert TrainConfig.from_dict(old) == TrainConfig.preset(name)
        assert stored_config(old) == json.loads(json.dumps(TrainConfig.preset(name).to_dict()))
    partial = {"lbfgs_steps": 10, "gn_mu_init": 1e-2, "second_stage": "gauss_newton", "stages": ["adam", "lbfgs"]}
    assert TrainConfig.from_dict(partial) == TrainConfig(stages=(cj.stages.Adam(), cj.stages.GaussNewton(steps=10, mu_init=1e-2)))
    assert stored_config({"not": "a config"}) == {"not": "a config"}


def test_configs_stored_under_the_old_default_weighting_name_it():
    """Until ``CONFIG_DEFAULTS`` 2 a left-out ``cgm.system_weighting`` meant "norm"; today's
    default is "per_equation". A dict of either stored form read under version 1 names "norm";
    under version 2 it is unchanged; an explicit value is kept."""
    from cgmpinn_jax.config import CONFIG_DEFAULTS, legacy_config

    assert CONFIG_DEFAULTS == 2
    old_grouped, old_flat = TrainConfig(stages=(cj.stages.Adam(steps=7), cj.stages.LBFGS())).to_dict(), {**FLAT_DEFAULTS}
    assert "system_weighting" not in old_grouped["cgm"] and "system_weighting" not in old_flat
    for d in (old_grouped, old_flat):
        assert TrainConfig.from_dict(d).cgm.system_weighting == "per_equation"  # read as today's
        assert TrainConfig.from_dict(legacy_config(d)).cgm.system_weighting == "norm"  # read as stored
        assert TrainConfig.from_dict(legacy_config(d, 2)).cgm.system_weighting == "per_equation"
    explicit = TrainConfig(cgm={"system_weighting": "norm"}).to_dict()
    assert legacy_config(explicit) == explicit
    assert legacy_config({"system_weighting": "per_equation"})["system_weighting"] == "per_equation"


def test_a_saved_model_of_0_2_loads(tmp_path):
    res = cj.train(cj.get_problem("poisson1d", n_pde=32), "pinn", TrainConfig(stages=(cj.stages.Adam(steps=3), cj.stages.LBFGS(steps=0)), 
                   width=4, depth=1), key=0, quiet=True)
    cj.save_result(res, tmp_path)
    info = json.loads((tmp_path / "model.json").read_text())
    info["config"] = json.loads(json.dumps(flat_dict(res.config)))  # as 0.2 wrote it
    (tmp_path / "model.json").write_text(json.dumps(info))
    loaded = cj.load_model(tmp_path)
    assert TrainConfig.from_dict(loaded.info["config"]) == res.config
    pts = res.problem.test_grid().points[:5]
    assert (loaded.predict(pts) == res.predict(pts)).all()


def test_old_and_new_spellings_train_bit_identically():
    """The accurate preset (float64 Gauss-Newton, ReLoBRaLo's lambdas per refresh) spelt both
    ways is one config: the same compiled programs and the same numbers, bit for bit."""
    problem = cj.get_problem("poisson1d", n_pde=48)
    new = TrainConfig.preset("accurate", cgm={"k_upd": 10}, width=6, depth=1).with_steps(20, 4)
    with pytest.warns(DeprecationWarning):
        old = TrainConfig.preset("accurate", adam_steps=20, lbfgs_steps=4, k_upd=10, width=6, depth=1)
    assert old == new
    cache = cj.CompileCache()
    a = cj.train(problem, "cgmpinn", new, key=0, quiet=True, cache=cache)
    b = cj.train(problem, "cgmpinn", old, key=0, quiet=True, cache=cache)
    assert bitwise.compare({"runs": {"r": bitwise.fingerprint(a)}}, {"runs": {"r": bitwise.fingerprint(b)}}) == []


def test_command_line_old_flags_still_work_with_a_message(capsys):
    import argparse

    from cgmpinn_jax.cli import _main as cli

    sub = next(a for a in cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    run = sub.choices["run"]
    kw = cli.config_kwargs(run.parse_args(["--lbfgs-steps", "7", "--relobralo-lbfgs", "refresh"]))
    assert kw["second"] == {"steps": 7} and kw["balancing"] == {"second_stage_apply": "refresh"}
    err = capsys.readouterr().err
    assert "--lbfgs-steps is deprecated" in err and "use --second-steps" in err and "--relobralo-second" in err
    assert cli.config_kwargs(run.parse_args(["--second-steps", "7"]))["second"] == {"steps": 7}
    assert capsys.readouterr().err == ""
    with pytest.raises(ValueError, match="give only --second-steps"):
        cli.config_kwargs(run.parse_args(["--second-steps", "7", "--lbfgs-steps", "8"]))
    helps = {a.dest: a.help for a in run._actions}
    assert "Gauss-Newton" in helps["second_steps"] and "deprecated spelling of --second-steps" in helps["lbfgs_steps"]
