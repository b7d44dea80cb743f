"""TrainConfig: the run's stages as objects and one frozen group per other part, each checked on
construction; the spellings of 0.2 (flat names, option groups per solver) fail with a message
that lists the options; configs, presets and runs round-trip."""

from __future__ import annotations

import argparse
import dataclasses
import json
import warnings
from importlib.machinery import PathFinder

import pytest

import cgmpinn_jax as cj
from helpers import assert_same_run
from cgmpinn_jax import CGMOptions, ReLoBRaLoOptions, TrainConfig
from cgmpinn_jax.config import stored_config, without_time_limits
from cgmpinn_jax.stages import BFGS, LBFGS, SSBFGS, Adam, GaussNewton, SSBroyden, stage_from_dict

OPTIONS = "precision, stages, width, depth, divergence_ratio, time_limit, cgm, balancing, network"

#: one non-default setting of every stage kind, in an order a run accepts (Adam first, each once)
EVERY_STAGE = (
    Adam(steps=7, lr=2e-3, time_limit=30.0),
    LBFGS(
        steps=9,
        gtol=0.5,
        ftol=0.25,
        patience=5,
        backend="jaxopt",
        lr=0.5,
        history=7,
        max_linesearch=4,
        linesearch="backtracking",
        linesearch_init="max",
        reset_on_failure=True,
    ),
    BFGS(steps=3, max_params=100, max_linesearch=3),
    SSBFGS(steps=4, patience=7),
    SSBroyden(steps=5, ftol=1e-4, time_limit=2.5),
    GaussNewton(
        steps=6,
        form="kernel",
        mu_init=1e-2,
        mu_min=1e-12,
        mu_max=1e6,
        max_trials=5,
        memory_limit_gb=2.0,
    ),
)


def test_train_config_composes_stages_and_one_group_per_part():
    fields = dataclasses.fields(TrainConfig)
    assert ", ".join(f.name for f in fields) == OPTIONS
    groups = {f.name: type(f.default) for f in fields if dataclasses.is_dataclass(f.default)}
    assert groups == {
        "cgm": CGMOptions,
        "balancing": ReLoBRaLoOptions,
        "network": cj.NetworkOptions,
    }
    for cls in (*groups.values(), *cj.stages.STAGES.values()):
        assert cls.__dataclass_params__.frozen
    assert TrainConfig().stages == (Adam(), LBFGS()) and TrainConfig().stage_names == (
        "adam",
        "lbfgs",
    )
    # no option of the config, of a stage other than L-BFGS, nor of the balancing is named after
    # L-BFGS
    names = [f.name for f in fields] + [
        f.name for cls in (GaussNewton, BFGS, ReLoBRaLoOptions) for f in dataclasses.fields(cls)
    ]
    assert not [n for n in names if "lbfgs" in n]


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: Adam(steps=-1), r"Adam\.steps must be None or a non-negative int"),
        (lambda: Adam(lr=0.0), r"Adam\.lr must be > 0"),
        (lambda: Adam(lr=float("nan")), r"Adam\.lr must be a finite number"),
        (lambda: Adam(time_limit=0), r"Adam\.time_limit must be > 0"),
        (lambda: LBFGS(steps=1.5), r"LBFGS\.steps"),
        (lambda: LBFGS(gtol=-1.0), r"LBFGS\.gtol must be >= 0"),
        (lambda: LBFGS(patience=0), r"LBFGS\.patience must be None or a positive int"),
        (lambda: LBFGS(history=0), r"LBFGS\.history must be a positive int"),
        (lambda: LBFGS(backend="scipy"), r"LBFGS\.backend must be one of \('optax', 'jaxopt'\)"),
        (lambda: LBFGS(backend="jaxopt", linesearch="wolfe"), r"LBFGS\.linesearch must be one of"),
        (
            lambda: LBFGS(backend="jaxopt", reset_on_failure="yes"),
            r"LBFGS\.reset_on_failure must be True or False",
        ),
        (
            lambda: LBFGS(linesearch="backtracking"),
            r"LBFGS\.linesearch is a jaxopt option.*backend='optax'",
        ),
        (lambda: LBFGS(linesearch_init="max"), r"LBFGS\.linesearch_init is a jaxopt option"),
        (lambda: LBFGS(reset_on_failure=True), r"LBFGS\.reset_on_failure is a jaxopt option"),
        (lambda: BFGS(max_params=0), r"BFGS\.max_params"),
        (lambda: SSBFGS(max_linesearch=0), r"SSBFGS\.max_linesearch must be a positive int"),
        (lambda: SSBroyden(ftol=float("inf")), r"SSBroyden\.ftol"),
        (
            lambda: GaussNewton(form="qr"),
            r"GaussNewton\.form must be one of "
            r"\('auto', 'kernel', 'gramian', 'pcg', 'matfree', 'svd'\)",
        ),
        (lambda: GaussNewton(mu_init=1e9), r"mu_min <= mu_init <= mu_max"),
        (lambda: GaussNewton(max_trials=True), r"GaussNewton\.max_trials"),
        (lambda: GaussNewton(memory_limit_gb=-1.0), r"GaussNewton\.memory_limit_gb must be > 0"),
        (lambda: CGMOptions(k_upd=0), r"CGMOptions\.k_upd"),
        (
            lambda: CGMOptions(n_components=0),
            r"CGMOptions\.n_components must be a positive int or 'bic'",
        ),
        (lambda: CGMOptions(beta=-1.0), r"CGMOptions\.beta must be >= 0"),
        (lambda: CGMOptions(c_sat=1.5), r"CGMOptions\.c_sat must be in \(0, 1\]"),
        (lambda: CGMOptions(system_weighting="sum"), r"CGMOptions\.system_weighting"),
        (lambda: ReLoBRaLoOptions(stages="always"), r"ReLoBRaLoOptions\.stages"),
        (lambda: ReLoBRaLoOptions(rho=2.0), r"ReLoBRaLoOptions\.rho must be in \[0, 1\]"),
        (lambda: ReLoBRaLoOptions(temperature=float("inf")), r"ReLoBRaLoOptions\.temperature"),
        (
            lambda: ReLoBRaLoOptions(second_stage_apply="sometimes"),
            r"ReLoBRaLoOptions\.second_stage_apply",
        ),
        (lambda: TrainConfig(width=0), r"TrainConfig\.width"),
        (lambda: TrainConfig(divergence_ratio=float("nan")), r"TrainConfig\.divergence_ratio"),
        (lambda: TrainConfig(cgm={"beta": -1.0}), r"CGMOptions\.beta"),
        (
            lambda: TrainConfig(stages=[{"name": "adam", "step": 3}]),
            r"Adam has no option 'step'; its options: steps, time_limit, lr",
        ),
        (
            lambda: TrainConfig(stages=[{"name": "optax"}]),
            r"a stage dict needs a 'name', one of \('adam', 'lbfgs'",
        ),
        (
            lambda: TrainConfig(stages=()),
            r"TrainConfig\.stages must be a non-empty tuple of stages",
        ),
        (
            lambda: TrainConfig(stages=(Adam(), "lbfgs")),
            r"TrainConfig\.stages\[1\] must be a stage of cgmpinn_jax\.stages",
        ),
        (
            lambda: TrainConfig(stages=(LBFGS(), Adam())),
            r"TrainConfig\.stages\[1\]: Adam can only be the first stage",
        ),
        (
            lambda: TrainConfig(stages=(Adam(), LBFGS(), GaussNewton(), LBFGS(lr=0.5))),
            r"TrainConfig\.stages runs 'lbfgs' twice",
        ),
        (
            lambda: TrainConfig().with_steps(5),
            r"with_steps takes one budget per stage \(adam, lbfgs\), got 1",
        ),
    ],
)
def test_each_option_is_checked_by_name(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_wrong_types_and_names_are_type_errors():
    with pytest.raises(
        TypeError, match=r"TrainConfig\.cgm must be a CGMOptions \(or a dict of its options\)"
    ):
        TrainConfig(cgm=5)
    with pytest.raises(
        TypeError, match=rf"TrainConfig has no option 'adam_step'; its options: {OPTIONS}"
    ):
        TrainConfig(adam_step=5)
    with pytest.raises(TypeError, match="unexpected keyword argument 'step'"):
        Adam(step=3)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        TrainConfig().nope  # noqa: B018
    with pytest.raises(KeyError, match="the run has no stage 'bfgs'; its stages: adam, lbfgs"):
        TrainConfig().stage("bfgs")


def test_stage_objects_are_frozen_hashable_values():
    a, b = GaussNewton(steps=20, mu_init=1e-2), GaussNewton(steps=20, mu_init=1e-2)
    assert a == b and hash(a) == hash(b) and a is not b
    assert a != GaussNewton(steps=21, mu_init=1e-2) and Adam() != LBFGS()
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.steps = 3
    assert len({a, b, Adam(), Adam(), LBFGS()}) == 3
    assert (
        a.replace(steps=5) == GaussNewton(steps=5, mu_init=1e-2) and a.steps == 20
    )  # a copy, validated again
    with pytest.raises(ValueError, match=r"GaussNewton\.steps"):
        a.replace(steps=-5)
    # a config of stages keys the compile cache: equal settings hash equal
    assert hash(TrainConfig(stages=(Adam(steps=3), a))) == hash(
        TrainConfig(stages=(Adam(steps=3), b))
    )
    assert [cls().name for cls in cj.stages.STAGES.values()] == list(cj.stages.STAGES)
    assert [cls.label for cls in cj.stages.STAGES.values()] == [
        "Adam",
        "L-BFGS",
        "dense bfgs",
        "dense ssbfgs",
        "dense ssbroyden",
        "Gauss-Newton",
    ]


def test_every_stage_kind_round_trips_through_to_dict():
    cfg = TrainConfig(stages=EVERY_STAGE, precision="mixed", cgm={"k_upd": 3}, time_limit=100.0)
    d = json.loads(json.dumps(cfg.to_dict()))
    assert [st["name"] for st in d["stages"]] == [
        "adam",
        "lbfgs",
        "bfgs",
        "ssbfgs",
        "ssbroyden",
        "gauss_newton",
    ]
    assert d["stages"][0] == {"name": "adam", "steps": 7, "time_limit": 30.0, "lr": 2e-3}
    assert d["stages"][1]["linesearch"] == "backtracking" and d["stages"][5]["form"] == "kernel"
    back = TrainConfig.from_dict(d)
    assert back == cfg and hash(back) == hash(cfg) and back.stages == EVERY_STAGE
    assert TrainConfig(**d) == cfg
    assert tuple(stage_from_dict(s) for s in d["stages"]) == EVERY_STAGE
    for st in EVERY_STAGE:
        assert stage_from_dict(json.loads(json.dumps(st.to_dict()))) == st
    # the optax backend writes no jaxopt-only option; an unset time limit is left out
    assert "linesearch" not in LBFGS().to_dict() and "time_limit" not in LBFGS().to_dict()
    # a run's identity leaves out the time limits, the run's and each stage's
    ident = without_time_limits(d)
    assert "time_limit" not in ident and all("time_limit" not in st for st in ident["stages"])
    assert ident == without_time_limits(TrainConfig.from_dict(d).replace(time_limit=None).to_dict())


def test_with_steps_sets_one_budget_per_stage():
    cfg = TrainConfig(
        stages=(
            Adam(steps=10, lr=2e-3),
            LBFGS(steps=20, history=7),
            GaussNewton(steps=30, form="svd"),
        )
    )
    out = cfg.with_steps(1, None, 3)
    assert [st.steps for st in out.stages] == [1, 20, 3]
    assert (
        out.stages[0].lr == 2e-3 and out.stages[1].history == 7 and out.stages[2].form == "svd"
    )  # options kept
    assert cfg.with_steps(None, None, None) == cfg and [st.steps for st in cfg.stages] == [
        10,
        20,
        30,
    ]
    assert TrainConfig().with_steps(200, 40).stages == (Adam(steps=200), LBFGS(steps=40))
    with pytest.raises(ValueError, match="one budget per stage"):
        cfg.with_steps(1, 2)
    with pytest.raises(ValueError, match=r"LBFGS\.steps"):
        cfg.with_steps(None, -1, None)


def test_groups_as_objects_or_dicts_and_the_round_trips():
    a = TrainConfig(
        stages=(Adam(steps=10), GaussNewton(steps=5, mu_init=1e-2)),
        cgm=CGMOptions(system_weighting="norm"),
    )
    b = TrainConfig(
        stages=(Adam(steps=10), GaussNewton(steps=5, mu_init=1e-2)),
        cgm={"system_weighting": "norm"},
    )
    assert a == b and hash(a) == hash(b)
    d = json.loads(json.dumps(a.to_dict()))
    assert (
        d["stages"][0] == {"name": "adam", "steps": 10, "lr": 1e-3}
        and d["cgm"]["system_weighting"] == "norm"
    )
    assert d["stages"][1]["name"] == "gauss_newton" and d["stages"][1]["mu_init"] == 1e-2
    assert TrainConfig.from_dict(d) == a == TrainConfig(**d)
    assert TrainConfig().cgm.system_weighting == "per_equation"
    assert TrainConfig().to_dict()["cgm"]["system_weighting"] == "per_equation"  # always written
    assert TrainConfig().to_dict()["stages"] == [
        {"name": "adam", "steps": None, "lr": 0.001},
        {
            "name": "lbfgs",
            "steps": None,
            "gtol": None,
            "ftol": None,
            "patience": None,
            "backend": "optax",
            "lr": 1.0,
            "history": 100,
            "max_linesearch": 10,
        },
    ]
    # replace and preset change only the options they name
    acc = TrainConfig.preset("accurate", cgm={"k_upd": 4}).with_steps(None, 3)
    assert acc.stages == (Adam(), GaussNewton(steps=3))
    assert (acc.stages[1].steps, acc.balancing.second_stage_apply, acc.cgm.k_upd) == (
        3,
        "refresh",
        4,
    )
    assert acc.replace(balancing={"alpha": 0.5}).balancing == ReLoBRaLoOptions(
        alpha=0.5, second_stage_apply="refresh"
    )
    assert (
        acc.replace(balancing=ReLoBRaLoOptions()).balancing == ReLoBRaLoOptions()
    )  # an object replaces the group
    assert acc.replace(stages=(Adam(), LBFGS())).stage_names == ("adam", "lbfgs")
    assert acc.stage("gauss_newton").stop_rule(acc.second_stage_dtype) == cj.stages.StopRule(
        0.0, 1e-10, 200
    )


@pytest.mark.parametrize(
    "old",
    [
        "lbfgs_steps",
        "adam_steps",
        "adam_lr",
        "second_stage",
        "k_upd",
        "gn_form",
        "relobralo_lbfgs_apply",
        "adam",
        "second",
        "lbfgs",
        "dense",
        "gauss_newton",
        "stage_steps",
    ],
)
def test_an_old_spelling_is_a_type_error_that_lists_the_options(old):
    """The flat names of 0.2 and its groups per solver are gone: each one is a TypeError whose
    message lists the options (so a user sees where the setting went)."""
    message = rf"TrainConfig has no option '{old}'; its options: {OPTIONS} \(a stage's budget"
    with pytest.raises(TypeError, match=message):
        TrainConfig(**{old: 5})
    with pytest.raises(TypeError, match=message):
        TrainConfig.preset("accurate", **{old: 5})
    with pytest.raises(TypeError, match=message):
        TrainConfig().replace(**{old: 5})
    with pytest.raises(AttributeError):
        getattr(TrainConfig(), old)


def test_the_legacy_layer_is_gone():
    for name in (
        "flat_dict",
        "legacy_config",
        "record_config",
        "CONFIG_DEFAULTS",
        "SecondStage",
        "stop_rule",
    ):
        assert not hasattr(cj.config, name), name
    for name in (
        "AdamOptions",
        "SecondStageOptions",
        "LBFGSOptions",
        "DenseOptions",
        "GaussNewtonOptions",
        "solvers",
    ):
        assert not hasattr(cj, name), name
    with pytest.raises(ImportError):
        from cgmpinn_jax.config import flat_dict  # noqa: F401
    # the modules of the legacy layer are not in the package (searched in the package's own
    # folder: a development install of another checkout may still hold them)
    for name in ("_config_flat", "_deprecated", "solvers"):
        assert PathFinder.find_spec(f"cgmpinn_jax.{name}", cj.__path__) is None, name


def test_the_library_uses_no_deprecated_call():
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        cfg = TrainConfig.preset("accurate").with_steps(5, None)
        TrainConfig.from_dict(cfg.to_dict())
        cj.config.Hyper.from_config(cfg)
        cfg.stage("gauss_newton").stop_rule(cfg.second_stage_dtype)
        assert cj.config.Hyper.option(cfg, "adam_lr", 0.5).stages[0].lr == 0.5


def test_stored_configs_of_0_2_are_refused_clearly():
    """A flat dict of 0.2 (``adam_steps``, ``second_stage``, ...) and its grouped dict
    (``adam``, ``second``, ...) are not this version's: ``from_dict`` is a TypeError listing the
    options; ``stored_config`` leaves such a dict as it is (it compares unequal to any config)."""
    flat = {
        "adam_steps": None,
        "lbfgs_steps": None,
        "second_stage": "optax",
        "k_upd": None,
        "precision": "float32",
    }
    grouped = {"adam": {"steps": 7, "lr": 1e-3}, "second": {"steps": None}, "precision": "float32"}
    for old in (flat, grouped):
        with pytest.raises(TypeError, match=rf"its options: {OPTIONS}"):
            TrainConfig.from_dict(old)
        assert stored_config(old) == old
    assert stored_config({"not": "a config"}) == {"not": "a config"}
    # this version's dicts normalise: a partial stage reads with every default written
    assert stored_config({"stages": [{"name": "adam", "steps": 10}]}) == json.loads(
        json.dumps(TrainConfig(stages=(Adam(steps=10),)).to_dict())
    )
    for name in cj.PRESETS:
        assert stored_config(TrainConfig.preset(name).to_dict()) == json.loads(
            json.dumps(TrainConfig.preset(name).to_dict())
        )


def test_a_saved_model_records_its_stages_and_loads(tmp_path):
    res = cj.train(
        cj.get_problem("poisson1d", n_pde=32),
        "pinn",
        TrainConfig(stages=(Adam(steps=3), LBFGS(steps=0)), width=4, depth=1),
        key=0,
        quiet=True,
    )
    cj.save_result(res, tmp_path)
    info = json.loads((tmp_path / "model.json").read_text())
    assert info["config"]["stages"] == [
        {"name": "adam", "steps": 3, "lr": 1e-3},
        {**LBFGS(steps=0).to_dict()},
    ]
    loaded = cj.load_model(tmp_path)
    assert TrainConfig.from_dict(loaded.info["config"]) == res.config == loaded.config
    pts = res.problem.test_grid().points[:5]
    assert (loaded.predict(pts) == res.predict(pts)).all()


def test_preset_and_explicit_stages_train_bit_identically():
    """The accurate preset (float64 Gauss-Newton, ReLoBRaLo's lambdas per refresh) with its
    budgets set by ``with_steps`` and the same settings spelt out stage by stage are one config:
    the same compiled programs and the same numbers, bit for bit."""
    problem = cj.get_problem("poisson1d", n_pde=48)
    preset = TrainConfig.preset("accurate", cgm={"k_upd": 10}, width=6, depth=1).with_steps(20, 4)
    spelt = TrainConfig(
        precision="float64",
        stages=(Adam(steps=20), GaussNewton(steps=4)),
        balancing={"second_stage_apply": "refresh"},
        cgm={"k_upd": 10},
        width=6,
        depth=1,
    )
    assert preset == spelt and hash(preset) == hash(spelt)
    cache = cj.CompileCache()
    a = cj.train(problem, "cgmpinn", preset, key=0, quiet=True, cache=cache)
    b = cj.train(problem, "cgmpinn", spelt, key=0, quiet=True, cache=cache)
    assert list(a.statuses) == ["adam", "gauss_newton"]
    assert_same_run(a, b)


def test_command_line_old_flags_are_errors(capsys):
    from cgmpinn_jax.cli import _main as cli
    from cgmpinn_jax.cli._parser import build_config

    sub = next(a for a in cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    run = sub.choices["run"]
    for old in (
        ["--lbfgs-steps", "7"],
        ["--relobralo-lbfgs", "refresh"],
        ["--second-stage", "optax"],
        ["--stage-steps", "1,2"],
    ):
        with pytest.raises(SystemExit) as exc:
            run.parse_args(old)
        assert exc.value.code == 2
        assert "unrecognized arguments" in capsys.readouterr().err
    cfg = build_config(run.parse_args(["--second-steps", "7", "--relobralo-second", "refresh"]))
    assert cfg.stages == (Adam(), LBFGS(steps=7)) and cfg.balancing.second_stage_apply == "refresh"
    assert capsys.readouterr().err == ""
    helps = {a.dest: a.help for a in run._actions}
    assert (
        "Gauss-Newton" in helps["second_steps"]
        and "lbfgs_steps" not in helps
        and "relobralo_lbfgs" not in helps
    )
    assert not hasattr(cli, "config_kwargs")
