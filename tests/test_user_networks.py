"""A network of the user's choice: any equinox module or factory, through train, a vmapped
sweep and the command line; saved, reloaded in a fresh process and resumed; each bad input
refused before anything compiles, with a message that names it."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import cgmpinn_jax as cj
from cgmpinn_jax import cli

# a user's module, importable by name from the folder it is written to
USER_NETS = textwrap.dedent("""
    import equinox as eqx
    import jax
    import jax.numpy as jnp


    class SineNet(eqx.Module):
        inner: eqx.nn.Linear
        outer: eqx.nn.Linear

        def __call__(self, z):
            return self.outer(jnp.sin(self.inner(z)))


    def sine_net(key, in_dim, out_dim, width=12):
        k1, k2 = jax.random.split(key)
        return SineNet(eqx.nn.Linear(in_dim, width, key=k1),
                       eqx.nn.Linear(width, "scalar" if out_dim == 1 else out_dim, key=k2))


    def float32_net(key, in_dim, out_dim):
        return eqx.nn.MLP(in_dim, "scalar", 8, 1, key=key, dtype=jnp.float32)
""")
TINY = cj.TrainConfig(
    stages=(cj.stages.Adam(steps=300, lr=1e-2), cj.stages.LBFGS(steps=0)), cgm={"k_upd": 50}
)


@pytest.fixture
def user_nets(tmp_path, monkeypatch):
    (tmp_path / "my_nets_mod.py").write_text(USER_NETS)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "my_nets_mod", raising=False)
    import my_nets_mod

    yield my_nets_mod
    sys.modules.pop("my_nets_mod", None)


def _before_training(problem, method, network, config=TINY):
    return cj.train(problem, method, config.with_steps(0, None), network=network, key=0, quiet=True)


def test_a_users_factory_trains_and_is_saved_by_name(user_nets, tmp_path):
    res = cj.train(
        "advection_diffusion", "cgmpinn", TINY, network=user_nets.sine_net, key=0, quiet=True
    )
    assert type(res.model).__name__ == "SineNet"
    assert res.config.network == cj.NetworkOptions(
        "my_nets_mod:sine_net"
    )  # importable: recorded by name
    start = _before_training("advection_diffusion", "cgmpinn", user_nets.sine_net)
    assert (
        res.metrics.rel_e2 < 0.3 * start.metrics.rel_e2
    )  # training cut the error (1.1 to 0.07 at writing)
    folder = cj.save_result(res, tmp_path / "run")
    assert json.loads((folder / "model.json").read_text())["config"]["network"] == {
        "name": "my_nets_mod:sine_net",
        "options": {},
    }
    # a fresh process rebuilds the network from its factory and predicts the same values
    code = (
        f"import sys, numpy as np; sys.path.insert(0, {str(tmp_path)!r}); "
        "import cgmpinn_jax as cj; "
        f"m = cj.load_model({str(folder)!r}); "
        f"print(np.asarray(m.predict(np.array([[0.1, 0.2], [0.5, 0.9]]))).tolist())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    np.testing.assert_allclose(
        json.loads(out.stdout),
        np.asarray(res.predict(np.array([[0.1, 0.2], [0.5, 0.9]]))),
        rtol=1e-6,
        atol=1e-7,
    )


def test_options_of_a_factory_and_a_changed_factory(user_nets, tmp_path):
    cfg = TINY.replace(
        network={"name": "my_nets_mod:sine_net", "options": {"width": 7}}
    ).with_steps(5, None)
    res = cj.train("poisson1d", "pinn", cfg, key=0, quiet=True)
    assert res.model.inner.weight.shape == (7, 1)
    folder = cj.save_result(res, tmp_path / "run")
    info = json.loads((folder / "model.json").read_text())
    info["config"]["network"]["options"]["width"] = 9  # the saved parameters no longer fit
    (folder / "model.json").write_text(json.dumps(info))
    with pytest.raises(ValueError, match="do not fit the network built now"):
        cj.load_model(folder)
    info["config"]["network"] = {"name": "my_nets_mod:gone", "options": {}}
    (folder / "model.json").write_text(json.dumps(info))
    with pytest.raises(ValueError, match="has no callable 'gone'"):
        cj.load_model(folder)


def test_a_module_object_runs_and_reloads_only_when_given_again(user_nets, tmp_path):
    net = user_nets.sine_net(jax.random.key(3), 1, 1)
    res = cj.train("poisson1d", "pinn", TINY.with_steps(5, None), network=net, key=0, quiet=True)
    assert res.config.network.name is None  # a module cannot be saved by name
    folder = cj.save_result(res, tmp_path / "run")
    with pytest.raises(ValueError, match="pass it again"):
        cj.load_model(folder)
    loaded = cj.load_model(folder, network=net)
    pts = np.array([[0.1], [0.7]])
    np.testing.assert_allclose(
        loaded.predict(pts), np.asarray(res.predict(pts)), rtol=1e-6, atol=1e-7
    )


METHOD_CASES = [
    ("pinn", TINY.with_steps(3, 2)),
    ("cgmpinn", cj.TrainConfig.preset("accurate", cgm={"k_upd": 2}).with_steps(3, 2)),
    pytest.param("gpinn", TINY.with_steps(3, 2), marks=pytest.mark.slow),
]


@pytest.mark.parametrize(
    "method, cfg", METHOD_CASES, ids=["pinn-lbfgs", "cgmpinn-gauss_newton", "gpinn-lbfgs"]
)
def test_every_method_with_an_mlp_and_both_second_stage_families(user_nets, method, cfg):
    """L-BFGS in float32 and Gauss-Newton in float64 (gPINN's gradient term: slow)."""
    res = cj.train("poisson1d", method, cfg, network=user_nets.sine_net, key=0, quiet=True)
    assert np.isfinite(res.metrics.rel_e2)
    dtype = jax.tree_util.tree_leaves(eqx.filter(res.model, eqx.is_inexact_array))[0].dtype
    assert dtype == (jnp.float64 if cfg.precision == "float64" else jnp.float32)


def test_a_system_gets_one_output_per_field(user_nets):
    res = cj.train(
        "cavity", "pinn", TINY.with_steps(2, None), network=user_nets.sine_net, key=0, quiet=True
    )
    assert res.model.outer.weight.shape[0] == 3  # u, v, p


def test_a_vmapped_sweep_over_seeds(user_nets):
    cfg = TINY.replace(network={"name": "my_nets_mod:sine_net"}).with_steps(5, None)
    res = cj.sweep("poisson1d", "pinn", cfg, seeds=[0, 1], quiet=True)
    assert res.metrics["rel_e2"].shape == (2,)
    assert res.metrics["rel_e2"][0] != res.metrics["rel_e2"][1]  # each seed its own network
    # the same through sweep's own network argument
    by_arg = cj.sweep(
        "poisson1d",
        "pinn",
        TINY.with_steps(5, None),
        seeds=[0, 1],
        quiet=True,
        network=user_nets.sine_net,
    )
    np.testing.assert_allclose(by_arg.metrics["rel_e2"], res.metrics["rel_e2"], rtol=1e-5)


def test_checkpoint_and_resume(user_nets, tmp_path):
    from helpers import assert_same_run

    cfg = TINY.replace(cgm={"k_upd": 5}).with_steps(20, 0)
    plain = cj.train("poisson1d", "cgmpinn", cfg, network=user_nets.sine_net, key=0, quiet=True)
    folder = tmp_path / "ckpt"
    cj.train(
        "poisson1d",
        "cgmpinn",
        cfg,
        network=user_nets.sine_net,
        key=0,
        quiet=True,
        checkpoint_dir=folder,
        checkpoint_every=0,
    )
    assert_same_run(plain, cj.resume(folder, quiet=True))


def test_the_command_line(user_nets, tmp_path, capsys):
    out = tmp_path / "run"
    rc = cli.main(
        [
            "run",
            "poisson1d",
            "--method",
            "pinn",
            "--adam-steps",
            "3",
            "--second-steps",
            "0",
            "--network",
            "my_nets_mod:sine_net",
            "--network-option",
            "width=6",
            "--out",
            str(out),
            "--no-plots",
            "--quiet",
        ]
    )
    assert rc == 0, capsys.readouterr().err
    model, info = cj.load_model(out)
    assert info["config"]["network"] == {"name": "my_nets_mod:sine_net", "options": {"width": 6}}
    assert model.inner.weight.shape == (6, 1)


@pytest.mark.parametrize(
    "network, match",
    [
        (
            lambda k, i, o: eqx.nn.MLP(i, 2, 4, 1, key=k),
            r"maps one point \(1,\) to \(2,\); expected a scalar",
        ),
        (lambda k, i, o: eqx.nn.Lambda(jnp.sin), "no trainable parameters"),
        (lambda k, i, o: lambda z: z[0], "must be an equinox Module"),
        ("no_such_builtin_net", "unknown network 'no_such_builtin_net'"),
        ("no_such_module_zz:net", "does not import"),
        (3.0, "network must be"),
    ],
)
def test_bad_networks_are_refused_before_compiling(network, match):
    with pytest.raises((ValueError, TypeError), match=match):
        cj.train("poisson1d", "pinn", TINY, network=network, key=0, quiet=True)


def test_a_network_of_the_wrong_dtype_is_refused(user_nets):
    cfg = cj.TrainConfig(
        precision="float64", stages=(cj.stages.Adam(steps=2), cj.stages.LBFGS(steps=0))
    )
    with pytest.raises(ValueError, match="has float32 parameters; the run is in float64"):
        cj.train("poisson1d", "pinn", cfg, network=user_nets.float32_net, key=0, quiet=True)


def test_methods_with_their_own_network_refuse_another(user_nets):
    with pytest.raises(ValueError, match="has a network of its own"):
        cj.train("poisson1d", "lnn_pinn", TINY, network=user_nets.sine_net, key=0, quiet=True)


def test_the_default_network_is_not_recorded():
    assert "network" not in cj.TrainConfig().to_dict()
    assert "network" not in cj.TrainConfig.preset("accurate").to_dict()
    with pytest.raises(ValueError, match="no network name"):
        cj.NetworkOptions(None, {"width": 3})


SLOW = (
    pytest.mark.slow
)  # the same path as the others; their properties are tested in test_networks_zoo


@pytest.mark.parametrize(
    "name, options",
    [
        ("siren", {"omega0": 10.0}),
        ("fourier", {"n_features": 8}),
        ("periodic", {"periods": ((0, 2.0),)}),
        pytest.param("laaf", {}, marks=SLOW),
        pytest.param("gaaf", {}, marks=SLOW),
        pytest.param("mlp_activation", {"activation": "sin"}, marks=SLOW),
    ],
)
def test_built_in_choices_train_save_and_reload(name, options, tmp_path):
    cfg = TINY.replace(width=8, depth=2, network={"name": name, "options": options}).with_steps(
        3, None
    )
    res = cj.train("advection_diffusion", "pinn", cfg, key=0, quiet=True)
    assert type(res.model) is type(
        cj.nn.NETWORKS[name](jax.random.key(0), 2, 1, width=8, depth=2, **options)
    )
    loaded = cj.load_model(cj.save_result(res, tmp_path / name))
    pts = np.array([[0.1, 0.2], [0.6, 0.9]])
    np.testing.assert_allclose(
        loaded.predict(pts), np.asarray(res.predict(pts)), rtol=1e-5, atol=1e-7
    )
