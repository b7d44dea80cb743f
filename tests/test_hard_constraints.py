"""Hard constraints: the output transform u = g + d N meets its pieces exactly (to round-off) for
any network, the pieces leave the loss and the balancing, and a run trains, sweeps, saves and
reloads with it; every bad input is refused with a message that names it."""

from __future__ import annotations

import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import cgmpinn_jax as cj
from cgmpinn_jax.problems import ConstrainedNetwork, HardConstrained

TINY = cj.TrainConfig(
    stages=(cj.stages.Adam(steps=200, lr=1e-2), cj.stages.LBFGS(steps=0)), cgm={"k_upd": 50}
)


def _random_net(seed: int, n_out: int = 1):
    """An arbitrary smooth network of one point (what the transform must not depend on)."""
    k1, k2 = jax.random.split(jax.random.key(seed))

    def net(z):
        w = jax.random.normal(k1, (n_out, z.shape[0]), z.dtype)
        h = jnp.sin(3.0 * w @ z + jax.random.normal(k2, (n_out,), z.dtype)) + 2.0
        return h[0] if n_out == 1 else h

    return net


@pytest.mark.parametrize(
    "name", ["poisson1d", "heat", "poisson2d", "damped_wave", "wave1d_c", "ns2d_c"]
)
def test_the_pieces_are_met_to_round_off_whatever_the_network(name):
    """At every satisfied piece's points, u - target is round-off (float64), for two unrelated
    networks."""
    with jax.enable_x64(True):
        prob = HardConstrained(cj.get_problem(name))
        fwd, pts = prob.forward, prob.forward.sample_points(jax.random.key(3))
        n_out = len(prob.fields)
        for seed in (0, 1):
            fields = prob.as_fields(prob.constrain(_random_net(seed, n_out)))
            for pid in prob.satisfied:
                term, i = pid.split(":")[0], int(pid.split(":")[1])
                piece = fwd.pieces()[term][i]
                p = jnp.asarray(pts[term][i], jnp.float64)
                target = piece.target(fwd, p)
                miss = np.abs(np.asarray(piece.residual(fields, p, target)))
                assert miss.max() <= 1e-12 * (1 + np.abs(np.asarray(target)).max()), (
                    name,
                    pid,
                    miss.max(),
                )
        # and the transform does change the field inside: a network's value matters there
        inside = jnp.asarray(np.mean([prob.lower, prob.upper], axis=0), jnp.float64)
        a, b = (
            prob.constrain(_random_net(0, n_out))(inside),
            prob.constrain(_random_net(1, n_out))(inside),
        )
        assert np.max(np.abs(np.asarray(a) - np.asarray(b))) > 1e-3


def test_the_lift_uses_boundary_data_only():
    """g is the Coons interpolation of the face values: on 2D Poisson with the face data of u* it
    is bilinear-exact for a bilinear u*, and otherwise differs from u* inside (no interior data
    used)."""
    with jax.enable_x64(True):
        prob = HardConstrained(cj.get_problem("poisson2d"))
        z = jnp.array([0.37, 0.61])
        g, d = prob.lift_and_distance(z)
        assert float(d) == pytest.approx(16 * 0.37 * 0.63 * 0.61 * 0.39, rel=1e-14)
        x, y = 0.37, 0.61
        ex = lambda a, b: float(prob.exact(jnp.array([a, b])))  # noqa: E731
        coons = (
            (1 - x) * ex(0, y)
            + x * ex(1, y)
            + (1 - y) * ex(x, 0)
            + y * ex(x, 1)
            - (
                (1 - x) * (1 - y) * ex(0, 0)
                + x * (1 - y) * ex(1, 0)
                + (1 - x) * y * ex(0, 1)
                + x * y * ex(1, 1)
            )
        )
        assert float(g) == pytest.approx(coons, rel=1e-13)


def test_the_satisfied_pieces_leave_the_loss_and_the_balancing():
    heat = HardConstrained(cj.get_problem("heat"))
    assert heat.terms == () and heat.loss_terms == ("pde",)
    assert heat.satisfied == ("bc:0", "bc:1", "ic:0")
    wave = HardConstrained(
        cj.get_problem("damped_wave")
    )  # u_t(x, 0) is a DerivativeMatch: it stays in the loss
    assert wave.terms == ("ic",) and [type(p).__name__ for p in wave.pieces()["ic"]] == [
        "DerivativeMatch"
    ]
    assert [a.shape for a in wave.sample_points(jax.random.key(0))["ic"]] == [(300, 2)]
    one_edge = HardConstrained(cj.get_problem("heat"), satisfies=("bc:1",))
    assert one_edge.terms == ("ic", "bc") and len(one_edge.pieces()["bc"]) == 1
    adv = HardConstrained(
        cj.get_problem("advection_diffusion")
    )  # only its initial condition is Dirichlet
    assert adv.satisfied == ("ic:0",) and adv.terms == ("bc",)
    batch = heat.sample(jax.random.key(0))
    assert set(batch) == {"pde"}


def test_training_says_so_keeps_the_pieces_exact_and_reduces_the_error():
    lines: list[str] = []
    prob = HardConstrained(cj.get_problem("heat"))
    start = cj.train(prob, "cgmpinn", TINY.with_steps(0, None), key=0, quiet=True)
    res = cj.train(prob, "cgmpinn", TINY, key=0, print_fn=lines.append)
    assert any(
        "hard constraint" in s and "bc:0, bc:1, ic:0" in s and "dropped from the loss" in s
        for s in lines
    )
    assert isinstance(res.model, ConstrainedNetwork)
    assert res.metrics.rel_e2 < 0.5 * start.metrics.rel_e2
    assert set(res.history.lambdas.shape[1:]) == {1}  # one balanced term: the PDE
    z = jnp.array([[0.0, 0.4], [1.0, 0.8], [0.3, 0.0]], jnp.float32)
    np.testing.assert_allclose(jax.vmap(res.model)(z), jax.vmap(prob.exact)(z), atol=2e-6)


@pytest.mark.slow  # Gauss-Newton's compile: ~25 s on the 2-core machine, as without the constraint
def test_gauss_newton():
    cfg = TINY.replace(
        stages=(TINY.stage("adam").replace(steps=20), cj.stages.GaussNewton(steps=3))
    )
    res = cj.train(HardConstrained(cj.get_problem("poisson1d")), "pinn", cfg, key=0, quiet=True)
    assert np.isfinite(res.metrics.rel_e2) and res.budgets == {"adam": 20, "gauss_newton": 3}


def test_a_system():
    cav = cj.train(
        HardConstrained(cj.get_problem("ns2d_c")),
        "pinn",
        TINY.with_steps(5, None),
        key=0,
        quiet=True,
    )
    assert (
        cav.problem.terms == ("bc",)
        and cav.problem.pieces()["bc"][0].__class__.__name__ == "Condition"
    )
    z = jnp.array(
        [[0.0, 0.5], [0.5, 0.0], [1.0, 0.3]], jnp.float32
    )  # no-slip walls: u = v = 0 exactly
    np.testing.assert_allclose(jax.vmap(cav.model)(z)[:, :2], 0.0, atol=1e-7)


def test_a_sweep():
    sw = cj.sweep(
        HardConstrained(cj.get_problem("poisson1d")),
        "pinn",
        TINY.with_steps(20, None),
        seeds=[0, 1],
        quiet=True,
    )
    assert sw.metrics["rel_e2"].shape == (2,) and sw.metrics["rel_e2"][0] != sw.metrics["rel_e2"][1]


def test_a_network_of_the_users_choice_goes_inside_the_transform():
    res = cj.train(
        HardConstrained(cj.get_problem("poisson1d")),
        "pinn",
        TINY.with_steps(5, None),
        key=0,
        quiet=True,
        network=cj.NetworkOptions("siren", {"width": 8, "depth": 2}),
    )
    assert type(res.model.net).__name__ == "Siren"
    assert abs(float(res.model(jnp.array([0.0])) - res.problem.exact(jnp.array([0.0])))) < 1e-6


def test_save_and_reload_built_lift(tmp_path):
    res = cj.train(
        HardConstrained(cj.get_problem("heat"), satisfies=("ic",)),
        "pinn",
        TINY.with_steps(30, None),
        key=0,
        quiet=True,
    )
    folder = cj.save_result(res, tmp_path / "hard")
    model, info = cj.load_model(folder)
    assert isinstance(model, ConstrainedNetwork) and model.problem == res.problem
    z = jnp.asarray(np.random.default_rng(0).uniform(size=(16, 2)), jnp.float32)
    np.testing.assert_array_equal(jax.vmap(model)(z), jax.vmap(res.model)(z))


USER_LIFT = textwrap.dedent("""
    import jax.numpy as jnp

    def lift(z):
        return jnp.zeros((), z.dtype)

    def dist(z):
        return z[0] * z[1]
""")


def test_a_given_g_and_d(tmp_path, monkeypatch):
    (tmp_path / "my_lift_mod.py").write_text(USER_LIFT)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "my_lift_mod", raising=False)
    import my_lift_mod

    prob = cj.get_problem(
        "heat"
    )  # u* = 0 at t = 0 and at x = 0: g = 0 and d = x t meet ic and bc:0
    hard = HardConstrained(prob, satisfies=("ic", "bc:0"), g=my_lift_mod.lift, d=my_lift_mod.dist)
    assert hard.terms == ("bc",) and "the given g and d" in hard.note
    res = cj.train(hard, "pinn", TINY.with_steps(10, None), key=0, quiet=True)
    folder = cj.save_result(res, tmp_path / "given")
    model, _ = cj.load_model(folder)
    assert model.problem.g is my_lift_mod.lift and model.problem.satisfied == ("bc:0", "ic:0")
    # the lift vanishes from its module: loading names the hard constraint's g, not a network
    (tmp_path / "my_lift_mod.py").write_text(USER_LIFT.replace("def lift(", "def renamed_lift("))
    monkeypatch.delitem(sys.modules, "my_lift_mod")
    with pytest.raises(
        ValueError, match=r"hard constraint's g 'my_lift_mod:lift': 'my_lift_mod' has no callable"
    ):
        cj.load_model(folder)


def test_checkpoint_and_resume(tmp_path):
    from helpers import assert_same_run

    prob, cfg = (
        HardConstrained(cj.get_problem("heat")),
        TINY.replace(cgm={"k_upd": 5}).with_steps(20, None),
    )
    plain = cj.train(prob, "pinn", cfg, key=0, quiet=True)
    cj.train(
        prob, "pinn", cfg, key=0, quiet=True, checkpoint_dir=tmp_path / "ckpt", checkpoint_every=0
    )
    assert_same_run(plain, cj.resume(tmp_path / "ckpt", quiet=True))


def test_a_closure_lift_reloads_only_when_the_problem_is_given_again(tmp_path):
    prob = cj.get_problem(
        "heat"
    )  # u*(x, 0) = 0 and u* at x = 0 is 0: g = 0, d = x t works for ic and bc:0
    hard = HardConstrained(
        prob, satisfies=("ic", "bc:0"), g=lambda z: jnp.zeros((), z.dtype), d=lambda z: z[0] * z[1]
    )
    res = cj.train(hard, "pinn", TINY.with_steps(10, None), key=0, quiet=True)
    folder = cj.save_result(res, tmp_path / "closure")
    with pytest.raises(ValueError, match="not an importable module-level function"):
        cj.load_model(folder)
    model, _ = cj.load_model(folder, problem=hard)
    z = jnp.array([[0.2, 0.3]], jnp.float32)
    np.testing.assert_array_equal(jax.vmap(model)(z), jax.vmap(res.model)(z))


P = cj.get_problem


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(forward=P("heat"), satisfies=("nope",)), "names the term 'nope'"),
        (dict(forward=P("heat"), satisfies=("bc:5",)), r"has pieces 0..1"),
        (dict(forward=P("advection_diffusion"), satisfies=("bc",)), "is a Periodic"),
        (dict(forward=P("poisson2d_c")), "has a geometry"),
        (dict(forward=P("heat"), g=lambda z: 0.0), "give g and d together"),
        (dict(forward=P("heat"), g=1.0, d=1.0), "must be a function"),
        (
            dict(forward=P("heat"), satisfies=("ic",), g=lambda z: z[0], d=lambda z: z[1]),
            "misses piece 0 of 'ic'",
        ),
        (dict(forward=3), "forward must be a Problem"),
    ],
)
def test_bad_input_is_refused(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        HardConstrained(**kwargs)


def test_an_inverse_problem_is_refused():
    from cgmpinn_jax.inverse import InverseProblem, Observations

    heat = cj.get_problem("heat")
    z = np.random.default_rng(0).uniform(size=(8, 2))
    inv = InverseProblem(
        heat, Observations(z, np.asarray(jax.vmap(heat.exact)(jnp.asarray(z)), np.float64))
    )
    with pytest.raises(ValueError, match="builds its own training batch"):
        HardConstrained(inv)


def test_nesting_is_refused():
    with pytest.raises(ValueError, match="already hard-constrained"):
        HardConstrained(HardConstrained(cj.get_problem("heat")))
