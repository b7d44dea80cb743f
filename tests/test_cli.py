"""The ``cgmpinn-jax`` command: help texts, options, listing, and running a user's problem."""

from __future__ import annotations

import argparse
import sys
import textwrap

import pytest

import cgmpinn_jax as cj
from cgmpinn_jax.cli import _main as cli
from cgmpinn_jax.cli._parser import build_config
from cgmpinn_jax.stages import LBFGS, Adam, GaussNewton, SSBroyden


def _run_parser() -> argparse.ArgumentParser:
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices["run"]


def test_every_run_option_has_help_and_a_default():
    r = _run_parser()
    fmt = r._get_formatter()
    names = set()
    for action in r._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        text = fmt._get_help_string(action)
        names.add(action.dest)
        assert action.help and len(action.help) > 10, action.dest
        assert "default" in text, (action.dest, text)
    assert {
        "problem",
        "method",
        "seed",
        "out",
        "no_plots",
        "quiet",
        "width",
        "depth",
        "k_upd",
        "relobralo",
    } <= names
    help_text = r.format_help()
    assert "package.module:ClassName" in help_text
    assert "(default: 1224)" in help_text and "(default: cgmpinn)" in help_text


def _config(*argv) -> cj.TrainConfig:
    return build_config(_run_parser().parse_args(list(argv)))


def test_options_become_config_fields():
    cfg = _config(
        "heat",
        "--width",
        "16",
        "--depth",
        "3",
        "--k-upd",
        "25",
        "--relobralo",
        "adam",
        "--adam-steps",
        "7",
    )
    assert (cfg.width, cfg.depth, cfg.cgm.k_upd, cfg.balancing.stages) == (16, 3, 25, "adam")
    assert cfg.stages == (Adam(steps=7), LBFGS())  # the second stage left at the problem's budget
    assert _config("--relobralo", "off").balancing.stages == "none"
    assert (
        _config() == cj.TrainConfig()
    )  # nothing given: the faithful preset, every option at its default
    assert _config("--lbfgs-lr", "0.5", "--lbfgs-backend", "jaxopt").stages[1] == LBFGS(
        lr=0.5, backend="jaxopt"
    )
    assert _config("--x64").precision == "float64"


def test_stages_and_their_budgets_from_the_command_line():
    cfg = _config(
        "heat", "--stages", "adam, lbfgs,gauss-newton", "--adam-steps", "100", "--second-steps", "9"
    )
    assert cfg.stages == (
        Adam(steps=100),
        LBFGS(steps=9),
        GaussNewton(steps=9),
    )  # --second-steps: every later stage
    assert cfg.stage_names == ("adam", "lbfgs", "gauss_newton")
    assert _config("--second", "gauss-newton").stages == (Adam(), GaussNewton())
    assert _config("--second", "ssbroyden", "--second-steps", "4").stages == (
        Adam(),
        SSBroyden(steps=4),
    )
    assert _config("--stages", "lbfgs").stages == (LBFGS(),)
    for argv, message in (
        (
            ["--stages", "adam,x"],
            r"--stages: 'x' is not a stage; the stages: adam, lbfgs, gauss-newton",
        ),
        (
            ["--stages", "adam,gauss_newton"],
            r"--stages: 'gauss_newton' is not a stage",
        ),  # the flag's spelling
        (["--stages", "adam,lbfgs", "--second", "bfgs"], "give --stages or --second, not both"),
        (["--second", "gauss-newton", "--lbfgs-lr", "0.5"], "the run has none"),
        (["--stages", "lbfgs", "--adam-steps", "3"], "--adam-steps: the run has no Adam stage"),
        (["--stages", "adam,lbfgs,lbfgs"], "twice"),
    ):
        with pytest.raises(ValueError, match=message):
            _config(*argv)


def test_old_stage_flags_are_argparse_errors(capsys):
    """The flags of 0.2 (``--second-stage``, ``--stage-steps``, ``--lbfgs-steps``,
    ``--relobralo-lbfgs``) and its member names are gone: argparse refuses them."""
    for argv in (
        ["--second-stage", "optax"],
        ["--stage-steps", "100,,-"],
        ["--lbfgs-steps", "5"],
        ["--relobralo-lbfgs", "refresh"],
    ):
        with pytest.raises(SystemExit) as exc:
            _run_parser().parse_args(argv)
        assert exc.value.code == 2
        assert "unrecognized arguments: " + argv[0] in capsys.readouterr().err
    for member in ("optax", "jaxopt", "gauss_newton"):
        with pytest.raises(SystemExit):
            _run_parser().parse_args(["--second", member])
        assert "invalid choice: '" + member + "'" in capsys.readouterr().err
    assert not hasattr(cli, "config_kwargs")


def test_the_command_refuses_lbfgs_steps(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["run", "--lbfgs-steps", "5"])
    assert exc.value.code == 2
    assert "unrecognized arguments: --lbfgs-steps" in capsys.readouterr().err


def test_preset_settings_survive_unset_options():
    """An option left at its default must not override the preset (the accurate preset moves
    ReLoBRaLo's lambdas per refresh; the faithful default per iteration)."""
    assert (
        _config().balancing.second_stage_apply == "iteration" and _config().precision == "float32"
    )
    acc = _config("--preset", "accurate")
    assert acc == cj.TrainConfig.preset("accurate")
    assert (acc.precision, acc.balancing.second_stage_apply, acc.stages[1].steps) == (
        "float64",
        "refresh",
        1500,
    )
    assert acc.stage_names == ("adam", "gauss_newton")
    assert (
        _config(
            "--preset", "accurate", "--relobralo-second", "iteration"
        ).balancing.second_stage_apply
        == "iteration"
    )
    # a budget on the command line keeps the preset's other options of that stage and of the groups
    budget = _config("--preset", "accurate", "--second-steps", "7", "--k-upd", "3")
    assert (budget.stages[1].steps, budget.balancing.second_stage_apply, budget.cgm.k_upd) == (
        7,
        "refresh",
        3,
    )
    assert budget.stages[1] == GaussNewton(steps=7)
    assert _config("--preset", "accurate", "--precision", "mixed").precision == "mixed"
    # the preset's own Gauss-Newton stage (its budget) is kept when --stages names it
    assert _config("--preset", "accurate", "--stages", "adam,lbfgs,gauss-newton").stages == (
        Adam(),
        LBFGS(),
        GaussNewton(steps=1500),
    )


def test_run_accurate_prints_the_gauss_newton_stage_by_name(tmp_path, capsys):
    """``--preset accurate`` runs Adam then Gauss-Newton, and the output calls the second
    stage Gauss-Newton, never L-BFGS."""
    out = tmp_path / "run"
    rc = cli.main(
        [
            "run",
            "--preset",
            "accurate",
            "--adam-steps",
            "20",
            "--second-steps",
            "2",
            "--width",
            "8",
            "--depth",
            "2",
            "--no-plots",
            "--quiet",
            "--out",
            str(out),
            "--compile-cache",
            "off",
        ]
    )
    assert rc == 0
    printed = capsys.readouterr().out
    assert "Gauss-Newton" in printed, printed
    assert "stages Adam, Gauss-Newton" in printed, printed
    assert "lbfgs" not in printed.lower() and "l-bfgs" not in printed.lower(), printed
    metrics = __import__("json").loads((out / "metrics.json").read_text())
    assert metrics["stages"] == ["adam", "gauss_newton"] and not [
        k for k in metrics if "lbfgs" in k
    ]


def test_list_explains_relobralo_modes(capsys):
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    assert "ReLoBRaLo modes" in out
    for mode in ("on", "adam", "off"):
        assert f"  {mode} " in out
    assert "second stage keeps the last Adam lambdas" in out
    assert "package.module:ClassName" in out


def test_run_errors_name_the_culprit(capsys):
    assert cli.main(["run", "no_such_module_q:Foo", "--quiet"]) == 2
    assert "no_such_module_q" in capsys.readouterr().err
    assert cli.main(["run", "heat", "--method", "nope", "--quiet"]) == 2
    assert "nope" in capsys.readouterr().err


USER_MODULE = textwrap.dedent("""
    import dataclasses

    import jax.numpy as jnp

    import cgmpinn_jax as cj
    from cgmpinn_jax.derivatives import partial
    from cgmpinn_jax.problems import Dirichlet, box_edges, grid, uniform


    @dataclasses.dataclass(frozen=True)
    class Tiny(cj.Problem):
        n_pde: int = 16

        name = "tiny_cli"
        coords = ("x",)
        lower = (0.0,)
        upper = (1.0,)
        terms = ("bc",)

        def exact(self, z):
            return jnp.sin(3.0 * z[0])

        def operator(self, u, z):
            return partial(u, 0, 0)(z)

        def pieces(self):
            return {"bc": (Dirichlet(), Dirichlet())}

        def sample_points(self, key):
            return {
                "pde": uniform(key, self.n_pde, self.lower, self.upper),
                "bc": box_edges(self.lower, self.upper, 1),
            }

        def test_grid(self):
            return grid(self.lower, self.upper, (9,))


    @dataclasses.dataclass(frozen=True)
    class Broken(Tiny):
        name = "broken_cli"

        def pieces(self):
            return {"bc": (Dirichlet(),)}
""")


def test_run_a_users_problem_from_the_current_directory(tmp_path, monkeypatch, capsys):
    """``cgmpinn-jax run mymod:Class`` finds ./mymod.py, trains, saves a loadable model."""
    (tmp_path / "cli_user_pde_mod.py").write_text(USER_MODULE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    monkeypatch.delitem(sys.modules, "cli_user_pde_mod", raising=False)
    assert cli.main(["run", "cli_user_pde_mod:Broken", "--quiet"]) == 2
    assert "Broken.sample_points(key)['bc']" in capsys.readouterr().err
    out = tmp_path / "run"
    rc = cli.main(
        [
            "run",
            "cli_user_pde_mod:Tiny",
            "--method",
            "pinn",
            "--adam-steps",
            "3",
            "--second-steps",
            "0",
            "--k-upd",
            "1",
            "--width",
            "5",
            "--depth",
            "2",
            "--out",
            str(out),
            "--no-plots",
            "--quiet",
        ]
    )
    assert rc == 0
    printed = capsys.readouterr().out
    assert "tiny_cli / pinn" in printed and "relative e2" in printed
    model, info = cj.load_model(out)
    assert info["problem_class"] == "cli_user_pde_mod:Tiny"
    assert info["width"] == 5 and info["depth"] == 2 and info["config"]["cgm"]["k_upd"] == 1
    assert model(__import__("jax").numpy.zeros(1)).shape == ()
    sys.modules.pop("cli_user_pde_mod", None)


def test_run_compiles_the_second_stage_in_the_background(tmp_path, capsys):
    """The command compiles the second stage's programs while Adam trains (the library's
    ``prefetch_compile``), unless ``--background-compile off``."""
    assert _run_parser().parse_args([]).background_compile == "on"
    assert _run_parser().parse_args(["--background-compile", "off"]).background_compile == "off"
    rc = cli.main(
        [
            "run",
            "poisson1d",
            "--method",
            "pinn",
            "--adam-steps",
            "4",
            "--second-steps",
            "2",
            "--k-upd",
            "1",
            "--width",
            "5",
            "--depth",
            "2",
            "--out",
            str(tmp_path / "run"),
            "--no-plots",
            "--compile-cache",
            "off",
        ]
    )
    assert rc == 0
    err = capsys.readouterr().err
    # said once, when it was waited for (not again at every later chunk that reuses it)
    assert err.count("compiled the lbfgs chunk in the background") == 1, err
    assert err.count("compiled the weight refresh") == 1, err
