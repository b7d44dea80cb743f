"""The Gauss-Newton member's preconditioned-CG form (``gn_form="pcg"``)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import cgmpinn_jax as cj
from cgmpinn_jax.solvers._gauss_newton import GaussNewton, PCGState, _pcg, memory_bytes
from cgmpinn_jax.training import CompileCache
from cgmpinn_jax.training._driver import init_state
from cgmpinn_jax.training._schedule import resolve
from test_gauss_newton import _toy_run


def _system(m=60, p=150, key=0):
    k1, k2, k3 = jax.random.split(jax.random.key(key), 3)
    J = jax.random.normal(k1, (m, p)) * jnp.logspace(0, -6, p)  # a badly conditioned J J^T
    r = jax.random.normal(k2, (m,))
    return J, r, k3


def test_pcg_with_the_exact_factor_needs_one_iteration():
    with jax.enable_x64(True):
        J, r, _ = _system()
        mu = 1e-9
        L = jnp.linalg.cholesky(J @ J.T + mu * jnp.eye(J.shape[0]))
        a, k = _pcg(J, r, mu, L, 50, 1e-10)
        assert int(k) == 1
        np.testing.assert_allclose(np.asarray(a), np.linalg.solve(np.asarray(J @ J.T) + mu * np.eye(60), np.asarray(r)),
                                   rtol=1e-6)


def test_pcg_with_a_stale_factor_solves_the_new_system():
    """The factor of a perturbed J and another damping still preconditions well: CG reaches the
    tolerance in a few iterations where plain CG on this condition number would not."""
    with jax.enable_x64(True):
        J, r, k = _system()
        J0 = J * (1 + 1e-3 * jax.random.normal(k, J.shape))
        L0 = jnp.linalg.cholesky(J0 @ J0.T + 3e-8 * jnp.eye(60))
        mu = 1e-8
        a, its = _pcg(J, r, mu, L0, 50, 1e-10)
        K = np.asarray(J @ J.T) + mu * np.eye(60)
        assert np.linalg.norm(K @ np.asarray(a) - np.asarray(r)) <= 1e-10 * np.linalg.norm(np.asarray(r)) * 1.0001
        assert 1 < int(its) < 50
        _, its_plain = _pcg(J, r, mu, jnp.eye(60), 50, 1e-10)  # identity "factor": plain CG
        assert int(its_plain) == 50


def test_pcg_form_solves_rosenbrock():
    with jax.enable_x64(True):
        params, state, _ = _toy_run("pcg", (-1.2, 1.0), iters=80)
        assert isinstance(state, PCGState) and state.L.shape == (2, 2)
        assert float(params["x"]) == pytest.approx(1.0, abs=1e-8)
        assert float(params["y"]) == pytest.approx(1.0, abs=1e-8)
        assert 1 <= int(state.factorizations)


def _pinn_start(problem="heat", width=10, **points):
    cfg = cj.TrainConfig(precision="float64", stages=(cj.stages.Adam(), cj.stages.GaussNewton()), width=width, depth=2)
    setup = resolve(cj.get_problem(problem, **points), cj.get_method("pinn"), cfg)
    static, eng = CompileCache().engine(setup)
    state, batch = init_state(setup, eng, jax.random.key(2))
    n = batch["pde"][0].shape[0]
    return eng, state.params, batch, jnp.ones(n), jnp.ones(setup.n_terms)


@pytest.mark.parametrize("width, exact, mu_init", [(10, "gramian", 1e-3), (40, "kernel", 1e3)])
def test_first_pcg_step_is_the_exact_step(width, exact, mu_init):
    """The first iteration factors the product plus mu I at the iteration's first damping; every
    trial's CG reaches its tolerance (at once for the first trial), so the accepted step equals
    the exact step: on the Gramian side (J^T J, P x P) where the rows outnumber the parameters
    (heat's 2400 rows, 151 parameters), on the kernel side (J J^T, M x M) where they do not
    (600 rows, 1881 parameters; there from a damping whose first trial is accepted: at 1e-3
    the accepted trial's mu is 1e4 times the factor's and CG stops at its iteration cap)."""
    with jax.enable_x64(True):
        eng, params, batch, w, lam = _pinn_start(width=width, **({} if width == 10 else dict(n_pde=400, n_ic=100, n_bc=100)))
        kw = dict(mu_init=mu_init, mu_min=1e-15, mu_max=1e8, max_trials=12)
        out = {}
        for form in (exact, "pcg"):
            gn = GaussNewton(eng.objective, eng.lsq, form=form, **kw)
            s = gn.init(params, w, lam, batch)
            out[form] = jax.jit(gn.step)(params, s, w, lam, batch, s.value, s.grad)
        xk = jax.flatten_util.ravel_pytree(out[exact].params)[0]
        xp = jax.flatten_util.ravel_pytree(out["pcg"].params)[0]
        x0 = jax.flatten_util.ravel_pytree(params)[0]
        rows, n = eng.lsq.n_rows(batch), x0.shape[0]
        assert out["pcg"].state.L.shape == (min(rows, n),) * 2 and (rows > n) == (exact == "gramian")
        assert float(jnp.linalg.norm(xp - xk)) <= 1e-6 * float(jnp.linalg.norm(xk - x0))
        assert int(out["pcg"].state.factorizations) == 1 and int(out["pcg"].state.cg_iters) < 50


def test_pcg_refactors_before_it_stops_on_a_stale_factor():
    """No trial can lower the objective (CG gets no iterations, so every step is zero): with the
    previous iteration's factor the stage goes on, parameters unchanged, and the next iteration
    refactors at this one's first damping; only with that fresh factor does it stop (NO_DECREASE)."""
    from cgmpinn_jax.solvers._protocol import StageStatus

    flat = lambda p: np.asarray(jax.flatten_util.ravel_pytree(p)[0])
    with jax.enable_x64(True):
        eng, params, batch, w, lam = _pinn_start("poisson1d")
        kw = dict(form="pcg", mu_init=1e-3, mu_min=1e-15, mu_max=1e8, max_trials=40)
        gn = GaussNewton(eng.objective, eng.lsq, **kw)
        s = gn.init(params, w, lam, batch)
        o = jax.jit(gn.step)(params, s, w, lam, batch, s.value, s.grad)  # a real step: a factor to reuse
        assert int(o.status) == 0 and int(o.state.factorizations) == 1 and int(o.state.cg_iters) <= gn.cg_refactor
        stuck = GaussNewton(eng.objective, eng.lsq, cg_max=0, **kw)
        step = jax.jit(stuck.step)
        o2 = step(o.params, o.state, w, lam, batch, o.state.value, o.state.grad)
        assert int(o2.status) == 0 and int(o2.evals) > 1  # the stale factor failed up to the largest damping
        np.testing.assert_array_equal(flat(o2.params), flat(o.params))
        assert int(o2.state.cg_iters) > stuck.cg_refactor and int(o2.state.factorizations) == 1
        assert float(o2.state.mu) == float(o.state.mu) and float(o2.state.nu) == float(o.state.nu)
        o3 = step(o2.params, o2.state, w, lam, batch, o2.state.value, o2.state.grad)
        assert int(o3.status) == StageStatus.NO_DECREASE and int(o3.state.factorizations) == 2
        np.testing.assert_array_equal(flat(o3.params), flat(o.params))


def test_refactor_rule_counts_factorizations():
    """cg_refactor=0 refactors every iteration; a large threshold keeps the first factor while
    CG stays under it."""
    with jax.enable_x64(True):
        eng, params, batch, w, lam = _pinn_start("poisson1d")
        kw = dict(form="pcg", mu_init=1e-3, mu_min=1e-15, mu_max=1e8, max_trials=12)
        counts = {}
        for refactor in (0, 49):
            gn = GaussNewton(eng.objective, eng.lsq, cg_refactor=refactor, **kw)
            s, p = gn.init(params, w, lam, batch), params
            step = jax.jit(gn.step)
            for _ in range(6):
                o = step(p, s, w, lam, batch, s.value, s.grad)
                p, s = o.params, o.state
            counts[refactor] = int(s.factorizations)
            assert float(s.value) < float(gn.init(params, w, lam, batch).value)
        assert counts[0] == 6
        assert counts[49] < 6


@pytest.mark.slow  # CI time (run with -m slow); a faster test covers the same path
def test_pcg_train_end_to_end_reduces_the_error():
    """PINN on heat through cj.train with gauss_newton.form="pcg": far below Adam alone, and
    within a factor 10 of the exact kernel step's error after the same iterations."""
    prob = cj.get_problem("heat", n_pde=400, n_ic=100, n_bc=100)
    base = dict(precision="float64", second_stage="gauss_newton", adam={"steps": 300}, width=12, depth=2)
    adam = cj.train(prob, "pinn", cj.TrainConfig(stages=(cj.stages.Adam(), cj.stages.LBFGS(steps=0)), **base), key=0, quiet=True)
    err = {form: cj.train(prob, "pinn", cj.TrainConfig(stages=(cj.stages.Adam(), cj.stages.LBFGS(steps=40)), **base),
                          key=0, quiet=True).metrics.rel_e2 for form in ("kernel", "pcg")}
    assert err["pcg"] < adam.metrics.rel_e2 / 20
    assert err["pcg"] < 10 * err["kernel"]


def test_pcg_memory_is_the_kernel_forms():
    assert memory_bytes(9200, 19761, 8, "pcg") == memory_bytes(9200, 19761, 8, "kernel")


def test_the_form_is_printed():
    from cgmpinn_jax.training._engine import gn_form_note

    for form, expect in (("auto", "form (chosen)"), ("pcg", "pcg form (set)")):
        cfg = cj.TrainConfig(precision="float64", stages=(cj.stages.Adam(), cj.stages.GaussNewton(form=form)), width=10, depth=2)
        setup = resolve(cj.get_problem("heat"), cj.get_method("pinn"), cfg)
        static, eng = CompileCache().engine(setup)
        state, batch = init_state(setup, eng, jax.random.key(0))
        note = gn_form_note(setup, eng.lsq, batch, state.params)
        assert "Gauss-Newton: 2400 rows x" in note and note.endswith(expect)
    cfg = cj.TrainConfig(width=10, depth=2)
    setup = resolve(cj.get_problem("heat"), cj.get_method("pinn"), cfg)
    assert gn_form_note(setup, None, None, None) is None


def test_auto_form_by_size():
    from cgmpinn_jax.solvers._gauss_newton import PCG_AUTO_ROWS, lm_solve_form

    assert lm_solve_form(1502, 7801) == "kernel"  # 1D Poisson's accurate runs keep the exact step
    assert lm_solve_form(9200, 19761) == "pcg"  # Fisher-KPP
    assert lm_solve_form(2400, 7851) == "pcg" and lm_solve_form(3000, 7851) == "pcg"  # heat, 2D Poisson: 1e-6 sooner
    assert lm_solve_form(PCG_AUTO_ROWS, PCG_AUTO_ROWS + 1) == "pcg"
    assert lm_solve_form(9000, 5000) == "gramian"
    assert lm_solve_form(9200, 19761, "kernel") == "kernel"


def test_auto_resolving_to_pcg_starts_with_its_state(monkeypatch):
    """form="auto" that resolves to pcg (here: from 1 row on) gives init the PCGState its step
    reads (a GNState would fail in the first step), and solves the problem."""
    from cgmpinn_jax.solvers import _gauss_newton

    monkeypatch.setattr(_gauss_newton, "PCG_AUTO_ROWS", 1)
    with jax.enable_x64(True):
        params, state, _ = _toy_run("auto", (-1.2, 1.0), iters=80)
        assert isinstance(state, PCGState)
        assert float(params["x"]) == pytest.approx(1.0, abs=1e-8)
