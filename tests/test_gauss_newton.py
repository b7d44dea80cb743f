"""The Gauss-Newton (Levenberg-Marquardt) member and the objective's least-squares view."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import cgmpinn_jax as cj
from cgmpinn_jax.training import CompileCache
from cgmpinn_jax.training._driver import init_state
from cgmpinn_jax.solvers._gauss_newton import GaussNewton, _gram, lm_solve_form, memory_bytes
from cgmpinn_jax.methods import LossSpec, Method
from cgmpinn_jax.training._objective import LeastSquares, TermValues
from cgmpinn_jax.training._records import StageStatus
from cgmpinn_jax.training._schedule import resolve

GN = dict(precision="float64", second_stage="gauss_newton")


def _setup(problem, method, **cfg):
    setup = resolve(cj.get_problem(problem) if isinstance(problem, str) else problem,
                    cj.get_method(method) if isinstance(method, str) else method, cj.TrainConfig(**cfg))
    static, eng = CompileCache().engine(setup)
    state, batch = init_state(setup, eng, jax.random.key(3))
    return setup, static, eng, state, batch


def _random_w_lam(n, c, key=1):
    w = jnp.exp(jax.random.normal(jax.random.key(key), (n,)))
    return w / jnp.mean(w), jnp.asarray([1.7, 0.3, 0.9, 1.1][:c])


CONCAT_PINN = Method("pinn_concat", loss=LossSpec(aggregation="concat"), label="PINN (concat)")


@pytest.mark.parametrize("problem,method", [
    ("poisson1d", "cgmpinn"), ("heat", "pinn"), ("heat", "gpinn"), ("damped_wave", "cgmpinn"),
    ("advection_diffusion", "lnn_pinn"), ("poisson2d", "clpinn"), ("heat", CONCAT_PINN), ("fisher_kpp", "gmmpinn"),
])
def test_squared_norm_is_the_objective(problem, method):
    """|r|^2 equals lam . terms + extra to 1e-12 (float64), with non-uniform weights and lambdas."""
    with jax.enable_x64(True):
        setup, static, eng, state, batch = _setup(problem, method, width=12, depth=2, **GN)
        w, lam = _random_w_lam(batch["pde"][0].shape[0], setup.n_terms)
        lsq = LeastSquares(setup.problem, setup.method, static)
        r = jax.jit(lsq.residuals)(state.params, batch, w, lam)  # jitted: one compile, not one per operation
        value, _ = jax.jit(eng.objective)(state.params, w, lam, batch)
        assert r.shape == (lsq.n_rows(batch),)
        assert float(jnp.sum(r**2)) == pytest.approx(float(value), rel=1e-12)


def test_squared_norm_inverse_problem_with_obs_weight():
    with jax.enable_x64(True):
        prob = cj.inverse.inverse_problem("heat", noise=0.01, obs_weight=0.3, key=0)
        setup, static, eng, state, batch = _setup(prob, "cgmpinn", width=12, depth=2, **GN)
        w, lam = _random_w_lam(batch["pde"][0].shape[0], setup.n_terms)
        lsq = LeastSquares(setup.problem, setup.method, static)
        r, J = jax.jit(lsq.jacobian)(state.params, batch, w, lam)
        value, _ = jax.jit(eng.objective)(state.params, w, lam, batch)
        assert float(jnp.sum(r**2)) == pytest.approx(float(value), rel=1e-12)
        # the unknown coefficient is a parameter: its column of J is not zero
        x, _ = jax.flatten_util.ravel_pytree(state.params)
        assert J.shape == (r.shape[0], x.shape[0])
        g = jax.jit(jax.grad(lambda p: eng.objective(p, w, lam, batch)[0]))(state.params)
        assert abs(float(g.coeffs["kappa"])) > 0
        np.testing.assert_allclose(np.asarray(2 * r @ J), np.asarray(jax.flatten_util.ravel_pytree(g)[0]),
                                   rtol=1e-9, atol=1e-9 * float(jnp.max(jnp.abs(2 * r @ J))))


@pytest.mark.parametrize("method", ["cgmpinn", "gpinn"])
def test_jacobian_matches_jacrev(method):
    """The per-point Jacobian equals jax.jacrev of the whole residual vector."""
    with jax.enable_x64(True):
        prob = cj.get_problem("heat", n_pde=40, n_ic=10, n_bc=10)
        setup, static, eng, state, batch = _setup(prob, method, width=6, depth=2, **GN)
        w, lam = _random_w_lam(batch["pde"][0].shape[0], setup.n_terms)
        lsq = LeastSquares(setup.problem, setup.method, static)
        x, unravel = jax.flatten_util.ravel_pytree(state.params)
        r, J = jax.jit(lsq.jacobian)(state.params, batch, w, lam)  # jitted: one compile, not one per operation
        J_ref = jax.jit(jax.jacrev(lambda x: lsq.residuals(unravel(x), batch, w, lam)))(x)
        np.testing.assert_allclose(np.asarray(J), np.asarray(J_ref), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(np.asarray(r), np.asarray(jax.jit(lsq.residuals)(state.params, batch, w, lam)), rtol=1e-12)


def test_lbpinn_is_refused_by_name():
    with pytest.raises(ValueError, match=r"lbpinn.*not a sum of squares.*optax"):
        cj.train("poisson1d", "lbpinn", cj.TrainConfig(stages=(cj.stages.Adam(steps=2), cj.stages.LBFGS(steps=2)), **GN), quiet=True)


def test_memory_limit_gives_sizes_before_compiling():
    with pytest.raises(ValueError, match=r"1502 residual rows x 7801 parameters.*gauss_newton\.memory_limit_gb"):
        cj.train("poisson1d", "pinn", cj.TrainConfig(stages=(cj.stages.Adam(steps=2), cj.stages.LBFGS(steps=2)), 
                                                     **GN),
                 quiet=True)
    assert memory_bytes(1502, 7801) == 8 * (2 * 1502 * 7801 + 3 * 1502**2)
    assert lm_solve_form(100, 50) == "gramian" and lm_solve_form(50, 100) == "kernel"


def test_config_checks_gn_options():
    with pytest.raises(ValueError, match="gauss_newton sets max_trials: Gauss-Newton options"):
        cj.TrainConfig(stages=(cj.stages.Adam(), cj.stages.LBFGS()))
    with pytest.raises(ValueError, match=r"GaussNewtonOptions\.form"):
        cj.TrainConfig(stages=(cj.stages.Adam(), cj.stages.GaussNewton(form="qr")))
    with pytest.raises(ValueError, match="mu_min <= mu_init"):
        cj.TrainConfig(stages=(cj.stages.Adam(), cj.stages.GaussNewton(mu_init=1e9)))
    acc = cj.TrainConfig.preset("accurate")
    assert acc.second_stage == "gauss_newton" and acc.precision == "float64"
    assert cj.TrainConfig.preset("accurate_lbfgs").second_stage == "optax"


def test_gram_is_the_symmetric_product():
    J = jax.random.normal(jax.random.key(0), (600, 130), jnp.float32)
    with jax.default_matmul_precision("highest"):
        np.testing.assert_allclose(np.asarray(_gram(J, "kernel")), np.asarray(J @ J.T), rtol=1e-5, atol=1e-3)
        np.testing.assert_allclose(np.asarray(_gram(J, "gramian")), np.asarray(J.T @ J), rtol=1e-5, atol=1e-3)
    K = _gram(J, "kernel")
    assert bool(jnp.all(K == K.T))


class _Toy:
    """Least squares on two parameters: Rosenbrock's residuals (10 (y - x^2), 1 - x)."""

    @staticmethod
    def residuals(p):
        return jnp.stack([10.0 * (p["y"] - p["x"] ** 2), 1.0 - p["x"]])

    def jacobian(self, params, batch, w, lam):
        x, unravel = jax.flatten_util.ravel_pytree(params)
        return self.residuals(params), jax.jacfwd(lambda x: self.residuals(unravel(x)))(x)

    def n_rows(self, batch):
        return 2

    def objective(self, params, w, lam, batch):
        r = self.residuals(params)
        v = jnp.sum(r**2)
        return v, TermValues(v[None], v[None], jnp.zeros(()))


def _toy_run(form, start, iters=60):
    toy = _Toy()
    gn = GaussNewton(toy.objective, toy, form=form, mu_init=1e-3, mu_min=1e-15, mu_max=1e8, max_trials=12)
    params = {"x": jnp.asarray(start[0]), "y": jnp.asarray(start[1])}
    state = gn.init(params, None, None, None)
    step = jax.jit(gn.step)
    statuses = []
    for _ in range(iters):
        out = step(params, state, None, None, None, state.value, state.grad)
        params, state = out.params, out.state
        statuses.append(int(out.status))
        if statuses[-1]:
            break
    return params, state, statuses


@pytest.mark.parametrize("form", ["kernel", "gramian"])
def test_levenberg_marquardt_solves_rosenbrock(form):
    with jax.enable_x64(True):
        params, state, statuses = _toy_run(form, (-1.2, 1.0))
        assert float(params["x"]) == pytest.approx(1.0, abs=1e-8)
        assert float(params["y"]) == pytest.approx(1.0, abs=1e-8)
        assert float(state.value) < 1e-20


def test_no_decrease_at_the_largest_damping_keeps_the_point():
    """At the exact minimum no trial can decrease the loss: mu grows to its bound, the
    member says NO_DECREASE and the point is unchanged."""
    with jax.enable_x64(True):
        params, state, statuses = _toy_run("kernel", (1.0, 1.0), iters=5)
        assert statuses[-1] == StageStatus.NO_DECREASE
        assert float(params["x"]) == 1.0 and float(params["y"]) == 1.0


def test_kernel_and_gramian_steps_agree():
    """(J^T J + mu I)^-1 J^T r == J^T (J J^T + mu I)^-1 r (Woodbury)."""
    with jax.enable_x64(True):
        J = jax.random.normal(jax.random.key(0), (30, 80))
        r = jax.random.normal(jax.random.key(1), (30,))
        mu = 0.37
        d_kernel = J.T @ jnp.linalg.solve(J @ J.T + mu * jnp.eye(30), r)
        d_gram = jnp.linalg.solve(J.T @ J + mu * jnp.eye(80), J.T @ r)
        np.testing.assert_allclose(np.asarray(d_kernel), np.asarray(d_gram), rtol=1e-9, atol=1e-12)


def test_gauss_newton_stage_beats_adam_alone():
    """Tiny end-to-end run: 150 Gauss-Newton iterations after 300 Adam steps cut the error
    by far more than 10x; the history counts trials, the stage ends cleanly."""
    prob = cj.get_problem("poisson1d", n_pde=200)
    base = dict(adam={"steps": 300}, width=16, depth=2, cgm={"k_upd": 20}, balancing={"second_stage_apply": "refresh"},
                **GN)
    adam = cj.train(prob, "cgmpinn", cj.TrainConfig(stages=(cj.stages.Adam(), cj.stages.LBFGS(steps=0)), **base), key=0, quiet=True)
    res = cj.train(prob, "cgmpinn", cj.TrainConfig(stages=(cj.stages.Adam(), cj.stages.LBFGS(steps=150)), **base), key=0, quiet=True)
    assert res.statuses["lbfgs"] in (StageStatus.COMPLETED, StageStatus.LOSS_TOL, StageStatus.NO_DECREASE)
    assert res.metrics.rel_e2 < adam.metrics.rel_e2 / 100
    second = res.history.k > 300
    assert np.all(res.history.evals[second] >= 1)
    loss = res.history.loss[second]
    assert loss[-1] < 1e-3 * loss[0]


@pytest.mark.slow  # CI time (about 38 s on one core); run with -m slow
def test_sweep_members_each_with_their_own_damping():
    """A vmapped Gauss-Newton sweep: each member equals its own train() run."""
    prob = cj.get_problem("poisson1d", n_pde=60)
    cfg = cj.TrainConfig(stages=(cj.stages.Adam(steps=40), cj.stages.LBFGS(steps=6)), cgm={"k_upd": 10}, width=8, depth=2, **GN)
    res = cj.sweep(prob, "cgmpinn", cfg, seeds=[0, 1], quiet=True, shard=False)
    for seed in (0, 1):
        one = cj.train(prob, "cgmpinn", cfg, key=seed, quiet=True)
        assert res.at(seed=seed)["rel_e2"] == pytest.approx(one.metrics.rel_e2, rel=1e-6)
    assert not np.isclose(res.metrics["rel_e2"][0], res.metrics["rel_e2"][1])


def test_error_tracking_in_pieces_changes_nothing():
    """track_error_every runs a chunk's loop in pieces: every loss of the history and the
    final error are the same bit for bit, and the tracked error ends at the final one."""
    prob = cj.get_problem("poisson1d", n_pde=80)
    # ReLoBRaLo's lambdas per refresh: a later piece must keep the chunk's lambdas
    cfg = cj.TrainConfig(stages=(cj.stages.Adam(steps=30), cj.stages.LBFGS(steps=20)), cgm={"k_upd": 10}, width=8, depth=2,
                         balancing={"second_stage_apply": "refresh"}, **GN)
    a = cj.train(prob, "cgmpinn", cfg, key=0, quiet=True)
    b = cj.train(prob, "cgmpinn", cfg, key=0, quiet=True, track_error_every=7)
    assert np.array_equal(a.history.loss, b.history.loss) and a.metrics.rel_e2 == b.metrics.rel_e2
    assert a.history.error_k is None
    assert list(b.history.error_k[:4]) == [7, 10, 17, 20]
    assert b.history.error_k[-1] == 50 and np.all(np.diff(b.history.error_seconds) >= 0)
    assert b.history.error_rel_e2[-1] == pytest.approx(b.metrics.rel_e2, rel=1e-9)


def test_sweep_memory_check_counts_members():
    cfg = cj.TrainConfig(stages=(cj.stages.Adam(steps=2), cj.stages.LBFGS(steps=2)), **GN)
    with jax.enable_x64(True):  # one member fits in 0.25 GiB (0.23 GiB) ...
        CompileCache().engine(resolve(cj.get_problem("poisson1d"), cj.get_method("pinn"), cfg))
    with pytest.raises(ValueError, match="2 members"):  # ... two do not
        cj.sweep("poisson1d", "pinn", cfg, seeds=[0, 1], quiet=True, shard=False)
