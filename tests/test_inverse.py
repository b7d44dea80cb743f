"""Inverse problems (cgmpinn_jax.inverse): identification, the observation term, the coefficient
trajectory, bad input, synthetic observations, the ``infer`` command, and forward problems
left unchanged. One training run (a tiny budget) serves several tests."""

from __future__ import annotations

import dataclasses
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import cgmpinn_jax as cj
from cgmpinn_jax import inverse
from cgmpinn_jax.cli import _main as cli
from cgmpinn_jax.nn import _nets as nets
from cgmpinn_jax.derivatives import partial
from cgmpinn_jax.inverse import InverseProblem, Observations, Unknown, synthetic_observations
from cgmpinn_jax.training._objective import Trainable, init_coeffs
from cgmpinn_jax.problems import Heat


@pytest.fixture(scope="module")
def heat_run():
    """kappa (true 1, guess 0.5) of a smoother heat solution (s = 2) at a tiny budget."""
    prob = inverse.inverse_problem("heat", n_obs=200, noise=0.01, key=0, s=2.0, n_pde=500)
    cfg = cj.TrainConfig(
        stages=(cj.stages.Adam(steps=400, lr=5e-3), cj.stages.LBFGS(steps=150)),
        cgm={"k_upd": 50},
        width=20,
        depth=3,
    )
    return cj.train(prob, "pinn", cfg, key=0, quiet=True)


def test_identification_moves_the_estimate_to_the_truth(heat_run):
    unk = heat_run.unknowns
    assert unk.names == ("kappa",) and unk.true[0] == 1.0 and unk.init[0] == 0.5
    # the error shrinks a lot against the initial guess's (measured: 0.026 against 0.5)
    assert unk.rel_error[0] < 0.2 * abs(unk.init[0] - unk.true[0]) / unk.true[0]
    assert heat_run.metrics.rel_e2 < 0.2


def test_coefficients_train_in_both_stages_and_their_trajectory_is_recorded(heat_run):
    h = heat_run.history
    assert h.coeff_k[0] == 0 and h.coeffs[0, 0] == pytest.approx(0.5, rel=1e-6)
    assert h.coeffs.shape == (len(h.coeff_k), 1) and np.all(np.diff(h.coeff_k) > 0)
    adam_end = h.coeffs[h.coeff_k == 400, 0][0]
    assert (
        adam_end != pytest.approx(0.5) and h.coeffs[-1, 0] != adam_end
    )  # Adam and L-BFGS both moved it
    assert h.coeffs[-1, 0] == pytest.approx(heat_run.unknowns.estimate[0], rel=1e-6)
    d = h.to_dict()
    assert len(d["coeffs"]) == len(d["coeff_k"])


def test_observation_term_is_a_balanced_loss_term(heat_run):
    assert heat_run.problem.loss_terms == ("pde", "ic", "bc", "obs")
    h = heat_run.history
    assert h.terms.shape[1] == 4 and h.raw.shape[1] == 4 and h.lambdas.shape[1] == 4
    obs = h.raw[:, 3]
    assert obs[-1] < 0.05 * obs[0]  # the misfit at the observations falls
    s = heat_run.summary()
    assert set(s["unknowns"]["kappa"]) == {"estimate", "true", "rel_error", "init"}


def test_source_uses_the_true_coefficients():
    prob = inverse.inverse_problem("heat", n_obs=5, key=0)
    bound = prob.bind({"kappa": jnp.log(jnp.asarray(0.5))})  # kappa = 0.5 in the operator
    z = jnp.array([0.3, 0.4])
    u_xx = partial(prob.exact, 0, 0)(z)
    # N_0.5[u*] - f_true = (1 - 0.5) u*_xx: f is data, computed with the true kappa = 1
    np.testing.assert_allclose(
        jax.jit(bound.residual, static_argnums=0)(prob.exact, z), 0.5 * u_xx, rtol=1e-4
    )
    batch = jax.jit(bound.sample)(jax.random.key(0))
    np.testing.assert_array_equal(
        batch["pde"][1], jax.jit(prob.forward.sample)(jax.random.key(0))["pde"][1]
    )
    np.testing.assert_allclose(batch["obs"][0][1], prob.observations.values, rtol=1e-6)


def test_synthetic_observations_are_reproducible_from_the_key():
    a = synthetic_observations("fisher_kpp", 3, 2000, noise=0.05)
    b = synthetic_observations("fisher_kpp", jax.random.key(3), 2000, noise=0.05)
    c = synthetic_observations("fisher_kpp", 4, 2000, noise=0.05)
    np.testing.assert_array_equal(a.points, b.points)
    np.testing.assert_array_equal(a.values, b.values)
    assert not np.array_equal(a.points, c.points)
    p = cj.get_problem("fisher_kpp")
    assert np.all(a.points >= np.array(p.lower)) and np.all(a.points <= np.array(p.upper))
    exact = np.asarray(p.exact_on(a.points), np.float64)
    assert np.std(a.values - exact) == pytest.approx(
        0.05 * np.std(exact), rel=0.1
    )  # the noise convention
    clean = synthetic_observations("fisher_kpp", 3, 2000, noise=0.0)
    np.testing.assert_allclose(clean.values, exact, atol=1e-6)


def test_declared_unknowns_of_the_benchmarks():
    names = {
        n: [u.name for u in inverse.declared_unknowns(cj.get_problem(n))]
        for n in inverse.INVERSE_BENCHMARKS
    }
    assert names == {
        "fisher_kpp": ["D", "r"],
        "heat": ["kappa"],
        "advection_diffusion": ["a", "nu"],
    }
    p = inverse.inverse_problem("advection_diffusion", unknowns="nu", n_obs=10)
    assert p.unknown_names == ("nu",) and p.true_values().tolist() == [0.01]
    raw = p.init_coeffs()
    assert float(p.coefficient_values(raw)["nu"]) == pytest.approx(0.05, rel=1e-6)
    for t in inverse.TRANSFORMS:
        u = Unknown("c", 0.3, t)
        assert float(
            u.value(
                jnp.asarray(
                    u.to_raw(0.7), jnp.float64 if jax.config.jax_enable_x64 else jnp.float32
                )
            )
        ) == pytest.approx(0.7, rel=1e-5)


def test_bad_input_names_the_culprit():
    heat = cj.get_problem("heat")
    obs = synthetic_observations(heat, 0, 10)
    with pytest.raises(
        ValueError, match=r"unknown coefficient 'D' for Heat: its declared unknowns are kappa"
    ):
        InverseProblem(heat, obs, ("D",))
    with pytest.raises(
        ValueError, match=r"unknown coefficient 'n_pde' for Heat: not a float field"
    ):
        InverseProblem(heat, obs, (Unknown("n_pde", 3.0),))
    with pytest.raises(ValueError, match=r"operator does not read it"):
        InverseProblem(heat, obs, (Unknown("s", 5.0),))  # s only shapes the exact solution
    with pytest.raises(ValueError, match=r"named twice: kappa"):
        InverseProblem(heat, obs, ("kappa", "kappa"))
    pts, vals = obs.points.copy(), obs.values.copy()
    pts[4] = [1.5, 0.5]
    with pytest.raises(
        ValueError,
        match=r"Observations.points\[4\] = \[1.5, 0.5\] is outside the domain of Heat: x = 1.5",
    ):
        InverseProblem(heat, Observations(pts, vals))
    with pytest.raises(ValueError, match=r"Observations.points must have shape \(M, 2\) for Heat"):
        InverseProblem(heat, Observations(np.zeros((10, 3)), vals))
    with pytest.raises(
        ValueError, match=r"Observations.values must have shape \(M,\), got \(10, 1\)"
    ):
        Observations(obs.points, vals[:, None])
    with pytest.raises(ValueError, match=r"10 points .* but 9 values"):
        Observations(obs.points, vals[:9])
    bad = vals.copy()
    bad[3] = np.nan
    with pytest.raises(ValueError, match=r"Observations.values must be finite: values\[3\] = nan"):
        Observations(obs.points, bad)
    bad_pts = obs.points.copy()
    bad_pts[2, 1] = np.inf
    with pytest.raises(
        ValueError, match=r"Observations.points must be finite: points\[2, 1\] = inf"
    ):
        Observations(bad_pts, vals)
    with pytest.raises(ValueError, match=r"Unknown\('D'\).init must be > 0 with transform='log'"):
        Unknown("D", -1.0, "log")
    with pytest.raises(ValueError, match=r"transform must be one of"):
        Unknown("D", 1.0, "exp")
    with pytest.raises(ValueError, match=r"declares no unknown coefficients"):
        inverse.inverse_problem("poisson1d", n_obs=5)
    with pytest.raises(ValueError, match=r"noise must be a finite number >= 0"):
        synthetic_observations(heat, 0, 5, noise=-0.1)


def test_forward_problems_unchanged():
    heat = cj.get_problem("heat")
    assert init_coeffs(heat) is None

    # the heat operator with kappa = 1 is bit for bit u_t - u_xx (the paper's heat operator)
    @dataclasses.dataclass(frozen=True)
    class PaperHeat(Heat):
        def operator(self, u, z):
            return partial(u, 1)(z) - partial(u, 0, 0)(z)

    net = nets.mlp(jax.random.key(0), 2, 16, 2)
    pts = jax.random.uniform(jax.random.key(1), (64, 2))
    src = jnp.zeros(64)

    def residuals(prob):
        return jax.jit(lambda n: prob.pde_residuals(n, pts, src))(net)

    np.testing.assert_array_equal(residuals(heat), residuals(PaperHeat()))
    # a forward trainable has the same leaves as before coefficients existed
    a = jax.tree_util.tree_leaves(Trainable(net, None))
    b = jax.tree_util.tree_leaves(Trainable(net, None, init_coeffs(heat)))
    assert len(a) == len(b) and all(x is y for x, y in zip(a, b))
    res = cj.train(
        heat,
        "pinn",
        cj.TrainConfig(
            stages=(cj.stages.Adam(steps=0), cj.stages.LBFGS(steps=0)), width=8, depth=1
        ),
        key=0,
        quiet=True,
    )
    assert res.unknowns is None and res.history.coeffs is None
    assert "unknowns" not in res.summary() and "coeffs" not in res.history.to_dict()


def test_infer_command(tmp_path, capsys):
    out = tmp_path / "run"
    rc = cli.main(
        [
            "infer",
            "heat",
            "--n-obs",
            "20",
            "--noise",
            "0.05",
            "--adam-steps",
            "0",
            "--second-steps",
            "0",
            "--width",
            "8",
            "--depth",
            "1",
            "--quiet",
            "--out",
            str(out),
            "--obs-weight",
            "0.5",
        ]
    )
    assert rc == 0
    text = capsys.readouterr().out
    assert (
        "kappa" in text
        and "rel. error" in text
        and "relative e2" in text
        and "observation weight 0.5" in text
    )
    m = json.loads((out / "metrics.json").read_text())
    assert m["unknowns"]["kappa"] == pytest.approx(
        {"estimate": 0.5, "true": 1.0, "rel_error": 0.5, "init": 0.5}, rel=1e-6
    )
    assert {"rel_e2", "e2", "e_inf"} <= set(m)
    saved_obs = json.loads((out / "observations.json").read_text())
    assert len(saved_obs["values"]) == 20 and saved_obs["obs_weight"] == 0.5
    pytest.importorskip("matplotlib")
    assert (out / "unknowns.png").exists() and (out / "solution.png").exists()


def test_infer_is_only_at_the_top_level():
    """The deprecated alias ``cgmpinn_jax.inverse.infer`` (a lazy upward import) is gone."""
    assert not hasattr(inverse, "infer") and "infer" not in dir(inverse)
    with pytest.raises(ImportError):
        from cgmpinn_jax.inverse import infer  # noqa: F401
    from cgmpinn_jax.training import infer

    assert cj.infer is infer
    res = cj.infer(
        "heat",
        "pinn",
        cj.TrainConfig(
            stages=(cj.stages.Adam(steps=0), cj.stages.LBFGS(steps=0)), width=8, depth=1
        ),
        n_obs=10,
        quiet=True,
    )
    assert res.unknowns.as_dict()["kappa"]["estimate"] == pytest.approx(0.5, rel=1e-6)


def test_infer_command_errors(capsys):
    assert cli.main(["infer", "heat", "--unknowns", "D,r", "--quiet"]) == 2
    assert "unknown coefficient 'D' for Heat" in capsys.readouterr().err
    assert cli.main(["infer", "fisher_kpp", "--noise", "-1", "--quiet"]) == 2
    assert "noise must be" in capsys.readouterr().err
    assert cli.main(["infer", "heat", "--n-obs", "0", "--quiet"]) == 2
    assert "n must be a positive int" in capsys.readouterr().err


def test_observation_weight_scales_the_observation_term_only():
    obs = synthetic_observations("heat", 3, 40, noise=0.05)
    plain = InverseProblem(cj.get_problem("heat"), obs)
    heavy = InverseProblem(cj.get_problem("heat"), obs, obs_weight=0.04)
    assert (
        plain.pieces()["obs"][0] == cj.problems.Dirichlet() and plain != heavy
    )  # distinct compile keys
    net = nets.mlp(jax.random.key(0), 2, 12, 2)
    batch = jax.jit(plain.sample)(jax.random.key(1))
    r1 = plain.constraint_residuals(net, batch)
    r2 = heavy.constraint_residuals(net, batch)
    # the term is obs_weight * mean((u - y)^2): residuals scale by sqrt(0.04) = 0.2; the rest
    # unchanged
    np.testing.assert_allclose(r2["obs"][0], 0.2 * r1["obs"][0], rtol=1e-6)
    np.testing.assert_allclose(
        np.mean(np.square(r2["obs"][0])), 0.04 * np.mean(np.square(r1["obs"][0])), rtol=1e-5
    )
    for term in ("ic", "bc"):
        for a, b in zip(r1[term], r2[term]):
            np.testing.assert_array_equal(a, b)
    p = inverse.inverse_problem("fisher_kpp", n_obs=10, key=0, obs_weight=0.5)
    assert p.obs_weight == 0.5 and p.pieces()["obs"][0].weight == 0.5


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf"), True, "0.1"])
def test_observation_weight_bad_input(bad):
    obs = synthetic_observations("heat", 0, 5)
    with pytest.raises(ValueError, match="obs_weight must be a finite number > 0"):
        InverseProblem(cj.get_problem("heat"), obs, obs_weight=bad)


def test_observation_weight_belongs_to_the_problem_in_infer(capsys):
    prob = inverse.inverse_problem("heat", n_obs=5, key=0)
    with pytest.raises(ValueError, match="obs_weight is an InverseProblem's field"):
        cj.infer(prob, "pinn", obs_weight=0.5)
    assert cli.main(["infer", "heat", "--obs-weight", "0", "--quiet"]) == 2
    assert "obs_weight must be a finite number > 0" in capsys.readouterr().err


@pytest.mark.parametrize("obs_weight", [1.0, 0.5])
def test_a_forward_problem_with_a_reference_only(obs_weight):
    """A forward problem stated by reference data (no exact solution): the inverse problem says
    so, trains, measures its error against the reference, and its observation targets are the
    observed values."""
    prob = cj.get_problem("burgers1d_c", n_pde=200, n_ic=50, n_bc=50)
    ref = prob.reference_data()
    obs = Observations(ref.points[:40], ref.values[:40, 0])
    inv = InverseProblem(prob, obs, (Unknown("nu", 0.5 * prob.nu),), obs_weight=obs_weight)
    assert not inv.has_exact and inv.reference_data() is ref and inv.fields == prob.fields
    batch = inv.sample(jax.random.key(0))
    np.testing.assert_array_equal(
        np.asarray(batch["obs"][0][1]), np.asarray(ref.values[:40, 0], np.float32)
    )
    res = cj.train(
        inv,
        "pinn",
        cj.TrainConfig(
            stages=(cj.stages.Adam(steps=3), cj.stages.LBFGS(steps=0)), width=8, depth=1
        ),
        key=0,
        quiet=True,
    )
    assert np.isfinite(res.metrics.rel_e2) and res.unknowns.names == ("nu",)
    assert str(res.metrics.as_dict()["against"]).startswith("reference")
