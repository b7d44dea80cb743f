"""The Gauss-Newton member's matrix-free form (``gauss_newton.form="matfree"``): CG on products
with J and J^T from automatic differentiation, no Jacobian stored (issue 44, item 2)."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import cgmpinn_jax as cj
from cgmpinn_jax.solvers._gauss_newton import GaussNewton, GNState, _cg, lm_solve_form, memory_bytes
from cgmpinn_jax.training import CompileCache
from cgmpinn_jax.training._driver import init_state
from cgmpinn_jax.training._schedule import resolve
from test_gauss_newton import _Toy

KW = dict(mu_init=1e-3, mu_min=1e-15, mu_max=1e8, max_trials=12)


def test_cg_solves_a_symmetric_system_like_numpy():
    with jax.enable_x64(True):
        A = jax.random.normal(jax.random.key(0), (40, 25))
        K = A @ A.T + 0.5 * jnp.eye(40)
        r = jax.random.normal(jax.random.key(1), (40,))
        a, k = _cg(lambda u: K @ u, lambda v: v, r, 200, 1e-12)
        np.testing.assert_allclose(np.asarray(a), np.linalg.solve(np.asarray(K), np.asarray(r)), rtol=1e-9)
        assert 1 < int(k) <= 41  # at most n + 1 in exact arithmetic; here a few more for rounding


class _ToyLsq(_Toy):
    """Rosenbrock's residuals with the engine's ``residuals(params, batch, w, lam)`` signature."""

    def residuals(self, params, batch=None, w=None, lam=None):
        return _Toy.residuals(params)

    def objective(self, params, w, lam, batch):
        return _Toy.objective(self, params, w, lam, batch)


def test_matfree_form_solves_rosenbrock():
    with jax.enable_x64(True):
        toy = _ToyLsq()
        gn = GaussNewton(toy.objective, toy, form="matfree", **KW)
        params = {"x": jnp.asarray(-1.2), "y": jnp.asarray(1.0)}
        state = gn.init(params, None, None, None)
        assert isinstance(state, GNState)
        step = jax.jit(gn.step)
        for _ in range(80):
            out = step(params, state, None, None, None, state.value, state.grad)
            params, state = out.params, out.state
            if int(out.status):
                break
        assert float(params["x"]) == pytest.approx(1.0, abs=1e-8)
        assert float(params["y"]) == pytest.approx(1.0, abs=1e-8)


@functools.lru_cache(maxsize=1)
def _small_pinn():
    prob = cj.get_problem("heat", n_pde=100, n_ic=30, n_bc=30)
    cfg = cj.TrainConfig(precision="float64", stages=(cj.stages.Adam(), cj.stages.GaussNewton()), width=10, depth=2)
    setup = resolve(prob, cj.get_method("pinn"), cfg)
    static, eng = CompileCache().engine(setup)
    state, batch = init_state(setup, eng, jax.random.key(2))
    return eng, state.params, batch, jnp.ones(batch["pde"][0].shape[0]), jnp.ones(setup.n_terms)


def test_matfree_step_is_the_kernel_step_at_the_same_damping():
    """J v by the linear transpose of the residuals' VJP (through the Taylor fast path), J^T u
    by the VJP: with CG run to a tight tolerance the first trial is the exact kernel step
    ``-J^T (J J^T + mu I)^{-1} r`` (numpy, from the member's own Jacobian)."""
    with jax.enable_x64(True):
        eng, params, batch, w, lam = _small_pinn()
        r, J = (np.asarray(a) for a in jax.jit(eng.lsq.jacobian)(params, batch, w, lam))
        mu = 10.0 * float(np.sum(J * J) / J.shape[1])  # damped enough that the first trial is taken
        gn = GaussNewton(eng.objective, eng.lsq, form="matfree", cg_tol=1e-12, matfree_max=2000, **KW)
        s = jax.jit(gn.init)(params, w, lam, batch)._replace(mu=jnp.asarray(mu))
        out = jax.jit(gn.step)(params, s, w, lam, batch, s.value, s.grad)
        assert int(out.evals) == 1  # the first trial was taken
        x0 = np.asarray(jax.flatten_util.ravel_pytree(params)[0], np.float64)
        d = -J.T @ np.linalg.solve(J @ J.T + mu * np.eye(J.shape[0]), r)
        xm = np.asarray(jax.flatten_util.ravel_pytree(out.params)[0])
        assert np.linalg.norm(xm - (x0 + d)) <= 1e-6 * np.linalg.norm(d)
        np.testing.assert_allclose(np.asarray(jax.flatten_util.ravel_pytree(out.state.grad)[0]), 2 * r @ J,
                                   rtol=1e-9, atol=1e-12 * float(np.max(np.abs(2 * r @ J))))


def test_matfree_scale_estimate_is_near_the_exact_one():
    with jax.enable_x64(True):
        eng, params, batch, w, lam = _small_pinn()
        _, J = jax.jit(eng.lsq.jacobian)(params, batch, w, lam)
        gn = GaussNewton(eng.objective, eng.lsq, form="matfree", **KW)
        x, unravel = jax.flatten_util.ravel_pytree(params)

        def products(x):  # jitted: one compile, not one per operation
            r, _, g, scale = gn._products(x, unravel, batch, w, lam)
            return r, g, scale

        r, g, scale = jax.jit(products)(x)
        exact = float(jnp.sum(J * J) / J.shape[1])
        assert exact / 2 < float(scale) < 2 * exact
        np.testing.assert_allclose(np.asarray(g), np.asarray(r @ J), rtol=1e-9, atol=1e-12)


@pytest.mark.slow  # ~40 s: the step's equivalence and the auto test cover the form in CI
def test_matfree_train_end_to_end_reduces_the_error():
    prob = cj.get_problem("heat", n_pde=200, n_ic=50, n_bc=50)
    base = dict(precision="float64", second_stage="gauss_newton", adam={"steps": 200}, width=10, depth=2)
    adam = cj.train(prob, "pinn", cj.TrainConfig(stages=(cj.stages.Adam(), cj.stages.LBFGS(steps=0)), **base), key=0, quiet=True)
    res = cj.train(prob, "pinn", cj.TrainConfig(stages=(cj.stages.Adam(), cj.stages.LBFGS(steps=30)), **base),
                   key=0, quiet=True)
    assert res.metrics.rel_e2 < adam.metrics.rel_e2 / 5


def test_auto_takes_matfree_where_the_matrices_would_not_fit():
    limit = 16 * 2**30
    assert lm_solve_form(9200, 19761, "auto", limit) == "pcg"  # Fisher-KPP: 4.9 GB, fits
    assert lm_solve_form(50_000, 50_000, "auto", limit) == "matfree"  # J alone is 20 GB
    assert lm_solve_form(50_000, 50_000, "auto") == "pcg"  # no limit given: the size rule alone
    assert lm_solve_form(50_000, 50_000, "kernel", limit) == "kernel"  # a form that is set stays
    assert memory_bytes(50_000, 50_000, 8, "matfree") == 8 * (10 * 50_000 + 6 * 50_000) < 2**30


def test_auto_trains_above_the_limit_and_a_set_form_is_refused():
    from cgmpinn_jax.training._engine import gn_form_note

    base = dict(precision="float64", second_stage="gauss_newton", adam={"steps": 2}, second={"steps": 2})
    with pytest.raises(ValueError, match=r"1502 residual rows x 7801 parameters \(kernel form.*memory_limit_gb"):
        cj.train("poisson1d", "pinn", cj.TrainConfig(stages=(cj.stages.Adam(), cj.stages.LBFGS()), **base),
                 quiet=True)
    cfg = cj.TrainConfig(stages=(cj.stages.Adam(), cj.stages.LBFGS()), **base)
    setup = resolve(cj.get_problem("poisson1d"), cj.get_method("pinn"), cfg)
    static, eng = CompileCache().engine(setup)  # the memory check passes: auto resolves to matfree
    state, batch = init_state(setup, eng, jax.random.key(0))
    assert gn_form_note(setup, eng.lsq, batch, state.params).endswith("matfree form (chosen)")
