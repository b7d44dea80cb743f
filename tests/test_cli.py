"""The ``cgmpinn-jax`` command: help texts, options, listing, and running a user's problem."""

from __future__ import annotations

import argparse
import sys
import textwrap

import pytest

import cgmpinn_jax as cj
from cgmpinn_jax.cli import _main as cli


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
    assert {"problem", "method", "seed", "out", "no_plots", "quiet", "width", "depth", "k_upd", "relobralo"} <= names
    help_text = r.format_help()
    assert "package.module:ClassName" in help_text
    assert "(default: 1224)" in help_text and "(default: cgmpinn)" in help_text


def test_options_become_config_fields():
    args = _run_parser().parse_args(["heat", "--width", "16", "--depth", "3", "--k-upd", "25", "--relobralo", "adam",
                                     "--adam-steps", "7"])
    kw = cli.config_kwargs(args)
    assert kw["width"] == 16 and kw["depth"] == 3 and kw["cgm"] == {"k_upd": 25} and kw["adam"] == {"steps": 7}
    assert kw["balancing"] == {"stages": "adam"}
    assert "second" not in kw  # left at the problem's default
    cfg = cj.TrainConfig(**kw)
    assert (cfg.width, cfg.depth, cfg.cgm.k_upd, cfg.balancing.stages) == (16, 3, 25, "adam")
    assert cli.config_kwargs(_run_parser().parse_args(["--relobralo", "off"]))["balancing"] == {"stages": "none"}


def test_stages_and_their_budgets_from_the_command_line():
    args = _run_parser().parse_args(["heat", "--stages", "adam, lbfgs,gauss_newton", "--stage-steps", "100,,-"])
    kw = cli.config_kwargs(args)
    assert kw["stages"] == ("adam", "lbfgs", "gauss_newton") and kw["stage_steps"] == (100, None, None)
    assert cj.TrainConfig(**kw).members == ("optax", "gauss_newton")
    with pytest.raises(ValueError, match="--stage-steps: 'x'"):
        cli.config_kwargs(_run_parser().parse_args(["--stage-steps", "1,x"]))


def test_preset_settings_survive_unset_options():
    """An option left at its default must not override the preset (the accurate preset moves
    ReLoBRaLo's lambdas per refresh; the faithful default per iteration)."""
    def cfg(*argv):
        a = _run_parser().parse_args(list(argv))
        return cj.TrainConfig.preset(a.preset, **cli.config_kwargs(a))

    assert cfg().balancing.second_stage_apply == "iteration" and cfg().precision == "float32"
    acc = cfg("--preset", "accurate")
    assert (acc.precision, acc.balancing.second_stage_apply, acc.second.steps) == ("float64", "refresh", 1500)
    assert cfg("--preset", "accurate", "--relobralo-second", "iteration").balancing.second_stage_apply == "iteration"
    # a budget on the command line keeps the preset's other options of that group and of the others
    budget = cfg("--preset", "accurate", "--second-steps", "7", "--k-upd", "3")
    assert (budget.second.steps, budget.balancing.second_stage_apply, budget.cgm.k_upd) == (7, "refresh", 3)
    assert cfg("--preset", "accurate", "--precision", "mixed").precision == "mixed"


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


USER_MODULE = textwrap.dedent('''
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
            return {"pde": uniform(key, self.n_pde, self.lower, self.upper), "bc": box_edges(self.lower, self.upper, 1)}

        def test_grid(self):
            return grid(self.lower, self.upper, (9,))


    @dataclasses.dataclass(frozen=True)
    class Broken(Tiny):
        name = "broken_cli"

        def pieces(self):
            return {"bc": (Dirichlet(),)}
''')


def test_run_a_users_problem_from_the_current_directory(tmp_path, monkeypatch, capsys):
    """``cgmpinn-jax run mymod:Class`` finds ./mymod.py, trains, saves a loadable model."""
    (tmp_path / "cli_user_pde_mod.py").write_text(USER_MODULE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    monkeypatch.delitem(sys.modules, "cli_user_pde_mod", raising=False)
    assert cli.main(["run", "cli_user_pde_mod:Broken", "--quiet"]) == 2
    assert "Broken.sample_points(key)['bc']" in capsys.readouterr().err
    out = tmp_path / "run"
    rc = cli.main(["run", "cli_user_pde_mod:Tiny", "--method", "pinn", "--adam-steps", "3", "--second-steps", "0",
                   "--k-upd", "1", "--width", "5", "--depth", "2", "--out", str(out), "--no-plots", "--quiet"])
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
    rc = cli.main(["run", "poisson1d", "--method", "pinn", "--adam-steps", "4", "--second-steps", "2", "--k-upd", "1",
                   "--width", "5", "--depth", "2", "--out", str(tmp_path / "run"), "--no-plots", "--compile-cache", "off"])
    assert rc == 0
    err = capsys.readouterr().err
    # said once, when it was waited for (not again at every later chunk that reuses it)
    assert err.count("compiled the lbfgs chunk in the background") == 1, err
    assert err.count("compiled the weight refresh") == 1, err
