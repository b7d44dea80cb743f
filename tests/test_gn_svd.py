"""The Gauss-Newton member's SVD form (``gauss_newton.form="svd"``): every trial's damped step
from one thin SVD of J, without the kernel's squared condition number (issue 44, item 3)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import cgmpinn_jax as cj
from cgmpinn_jax.solvers._gauss_newton import SVD_AUTO_MAX, GaussNewton, GNState, lm_solve_form, memory_bytes
from cgmpinn_jax.solvers._gn_linear import svd_direction
from test_gauss_newton import _toy_run
from test_gn_matfree import KW, _small_pinn


def test_svd_direction_is_the_damped_least_squares_step_and_its_decrease():
    """Against numpy: d = -J^T (J J^T + mu I)^{-1} r (M < P) or -(J^T J + mu I)^{-1} J^T r (M > P),
    and the predicted decrease |r|^2 - |r + J d|^2, at several dampings."""
    with jax.enable_x64(True):
        for shape in ((30, 50), (50, 30)):
            J = np.asarray(jax.random.normal(jax.random.key(0), shape))
            r = np.asarray(jax.random.normal(jax.random.key(1), (shape[0],)))
            direction = jax.jit(svd_direction(jnp.asarray(J), jnp.asarray(r)))
            for mu in (1e-6, 1e-2, 10.0):
                d, pred, its = direction(mu)
                if shape[0] < shape[1]:  # the kernel form (well conditioned: J J^T has full rank)
                    want = -J.T @ np.linalg.solve(J @ J.T + mu * np.eye(shape[0]), r)
                else:
                    want = -np.linalg.solve(J.T @ J + mu * np.eye(shape[1]), J.T @ r)
                np.testing.assert_allclose(np.asarray(d), want, rtol=1e-8, atol=1e-10)
                m = r + J @ want
                assert float(pred) == pytest.approx(r @ r - m @ m, rel=1e-9) and int(its) == 0


def test_svd_resolves_directions_a_cholesky_of_the_kernel_cannot():
    """A Jacobian with singular values 1 .. 1e-10 (float64): the SVD step at mu = 1e-28 solves
    J d = -r to the round-off of J d (|d| ~ 1e9); the kernel J J^T + mu I (eigenvalues down to
    1e-20) does not factor below mu ~ 1e-16, and where it first does, its step leaves a tenth of r."""
    with jax.enable_x64(True):
        rng = np.random.default_rng(0)
        U, _ = np.linalg.qr(rng.standard_normal((20, 20)))
        V, _ = np.linalg.qr(rng.standard_normal((40, 20)))
        J = (U * np.geomspace(1.0, 1e-10, 20)) @ V.T
        r = U @ rng.standard_normal(20)
        d, _, _ = svd_direction(jnp.asarray(J), jnp.asarray(r))(1e-28)
        assert np.linalg.norm(r + J @ np.asarray(d)) <= 1e-6 * np.linalg.norm(r)
        for mu in 10.0 ** np.arange(-28, -8):
            try:
                L = np.linalg.cholesky(J @ J.T + mu * np.eye(20))
            except np.linalg.LinAlgError:
                continue
            a = np.linalg.solve(L.T, np.linalg.solve(L, r))
            assert mu >= 1e-18 and np.linalg.norm(r - J @ (J.T @ a)) > 0.1 * np.linalg.norm(r)
            break


def test_svd_form_solves_rosenbrock_like_the_kernel_form():
    with jax.enable_x64(True):
        params, state, _ = _toy_run("svd", (-1.2, 1.0), iters=80)
        assert isinstance(state, GNState)
        assert float(params["x"]) == pytest.approx(1.0, abs=1e-8) and float(params["y"]) == pytest.approx(1.0, abs=1e-8)


def test_svd_first_step_is_the_kernel_step_on_a_pinn():
    with jax.enable_x64(True):
        eng, params, batch, w, lam = _small_pinn()
        r, J = (np.asarray(a) for a in eng.lsq.jacobian(params, batch, w, lam))
        mu = 10.0 * float(np.sum(J * J) / J.shape[1])
        gn = GaussNewton(eng.objective, eng.lsq, form="svd", **KW)
        s = gn.init(params, w, lam, batch)._replace(mu=jnp.asarray(mu))
        out = jax.jit(gn.step)(params, s, w, lam, batch, s.value, s.grad)
        assert int(out.evals) == 1
        x0 = np.asarray(jax.flatten_util.ravel_pytree(params)[0])
        d = -J.T @ np.linalg.solve(J @ J.T + mu * np.eye(J.shape[0]), r)
        xs = np.asarray(jax.flatten_util.ravel_pytree(out.params)[0])
        assert np.linalg.norm(xs - (x0 + d)) <= 1e-9 * np.linalg.norm(d)
    assert memory_bytes(100, 1000, 8, "svd") == 8 * (4 * 100 * 1000 + 2 * 100**2)


def test_auto_takes_the_svd_form_in_float32_and_it_trains():
    """float32 (itemsize 4): "auto" is "svd" up to SVD_AUTO_MAX rows or parameters; float64 keeps
    its rule. A float32 Gauss-Newton stage with it lowers the error of the Adam start."""
    assert lm_solve_form(1502, 7801, itemsize=4) == "svd" and lm_solve_form(1502, 7801, itemsize=8) == "kernel"
    assert lm_solve_form(SVD_AUTO_MAX + 1, 20000, itemsize=4) == "pcg" and lm_solve_form(9000, 500, itemsize=4) == "svd"
    assert memory_bytes(1502, 7801, 4) == memory_bytes(1502, 7801, 4, "svd")
    prob = cj.get_problem("poisson1d", n_pde=200)
    cfg = cj.TrainConfig(stages=(cj.stages.Adam(steps=300), cj.stages.GaussNewton(steps=0)), width=16, depth=2)
    adam = cj.train(prob, "pinn", cfg, key=0, quiet=True)
    gn = cj.train(prob, "pinn", cfg.replace().with_steps(None, 30), key=0, quiet=True)
    assert gn.metrics.rel_e2 < 0.5 * adam.metrics.rel_e2
