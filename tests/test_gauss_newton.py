"""The Gauss-Newton (Levenberg-Marquardt) stage: the objective's least-squares view, the solver in
each of its linear-solve forms (``GaussNewton(form=...)``: kernel, gramian, pcg, matfree, svd),
the choice of ``form="auto"``, the memory check, and end-to-end runs.

Tests of one property for several forms are parametrised over the form; what only one form has
(the preconditioned CG's stale factor, the matrix-free scale estimate, the SVD's resolution)
has its own test."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import cgmpinn_jax as cj
from cgmpinn_jax.methods import LossSpec, Method
from cgmpinn_jax.stages import Adam, GaussNewton
from cgmpinn_jax.stages._gauss_newton import (
    PCG_AUTO_ROWS,
    SVD_AUTO_MAX,
    GaussNewtonSolver,
    GNState,
    PCGState,
    lm_solve_form,
    memory_bytes,
)
from cgmpinn_jax.stages._gn_linear import _cg, _gram, _pcg, svd_direction
from cgmpinn_jax.training import CompileCache
from cgmpinn_jax.training._driver import init_state
from cgmpinn_jax.training._objective import LeastSquares, TermValues
from cgmpinn_jax.training._records import StageStatus
from cgmpinn_jax.training._schedule import resolve

GN = dict(precision="float64", stages=(Adam(), GaussNewton()))
KW = dict(mu_init=1e-3, mu_min=1e-15, mu_max=1e8, max_trials=12)


def _gn(adam=None, steps=None, **gn):
    """A float64 run of Adam then Gauss-Newton (``gn``: the Gauss-Newton stage's options)."""
    return dict(precision="float64", stages=(Adam(steps=adam), GaussNewton(steps=steps, **gn)))


def _setup(problem, method, **cfg):
    setup = resolve(
        cj.get_problem(problem) if isinstance(problem, str) else problem,
        cj.get_method(method) if isinstance(method, str) else method,
        cj.TrainConfig(**cfg),
    )
    static, eng = CompileCache().engine(setup)
    state, batch = init_state(setup, eng, jax.random.key(3))
    return setup, static, eng, state, batch


def _random_w_lam(n, c, key=1):
    w = jnp.exp(jax.random.normal(jax.random.key(key), (n,)))
    return w / jnp.mean(w), jnp.asarray([1.7, 0.3, 0.9, 1.1][:c])


@functools.lru_cache(maxsize=4)
def _pinn_start(problem="heat", width=10, **points):
    """PINN's float64 engine on ``problem`` (a 2-layer network of ``width``), its initial
    parameters and points (key 2), and uniform weights and lambdas; call it under x64."""
    cfg = cj.TrainConfig(**GN, width=width, depth=2)
    setup = resolve(cj.get_problem(problem, **points), cj.get_method("pinn"), cfg)
    static, eng = CompileCache().engine(setup)
    state, batch = init_state(setup, eng, jax.random.key(2))
    n = batch["pde"][0].shape[0]
    return eng, state.params, batch, jnp.ones(n), jnp.ones(setup.n_terms)


def _small_pinn():
    """PINN on heat with 100 + 30 + 30 points, width 10."""
    return _pinn_start("heat", 10, n_pde=100, n_ic=30, n_bc=30)


class _Toy:
    """Least squares on two parameters: Rosenbrock's residuals (10 (y - x^2), 1 - x), with the
    engine's ``residuals(params, batch, w, lam)`` signature (the matrix-free form calls it)."""

    @staticmethod
    def residuals(p, batch=None, w=None, lam=None):
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
    gn = GaussNewtonSolver(toy.objective, toy, form=form, **KW)
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


# --- the objective's least-squares view -----------------------------------------------------------
CONCAT_PINN = Method("pinn_concat", loss=LossSpec(aggregation="concat"), label="PINN (concat)")


@pytest.mark.parametrize(
    "problem,method",
    [
        ("poisson1d", "cgmpinn"),
        ("heat", "pinn"),
        ("heat", "gpinn"),
        ("damped_wave", "cgmpinn"),
        ("advection_diffusion", "lnn_pinn"),
        ("poisson2d", "clpinn"),
        ("heat", CONCAT_PINN),
        ("fisher_kpp", "gmmpinn"),
    ],
)
def test_squared_norm_is_the_objective(problem, method):
    """|r|^2 equals lam . terms + extra to 1e-12 (float64), with non-uniform weights and lambdas."""
    with jax.enable_x64(True):
        setup, static, eng, state, batch = _setup(problem, method, width=12, depth=2, **GN)
        w, lam = _random_w_lam(batch["pde"][0].shape[0], setup.n_terms)
        lsq = LeastSquares(setup.problem, setup.method, static)
        r = jax.jit(lsq.residuals)(
            state.params, batch, w, lam
        )  # jitted: one compile, not one per operation
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
        np.testing.assert_allclose(
            np.asarray(2 * r @ J),
            np.asarray(jax.flatten_util.ravel_pytree(g)[0]),
            rtol=1e-9,
            atol=1e-9 * float(jnp.max(jnp.abs(2 * r @ J))),
        )


@pytest.mark.parametrize("method", ["cgmpinn", "gpinn"])
def test_jacobian_matches_jacrev(method):
    """The per-point Jacobian equals jax.jacrev of the whole residual vector."""
    with jax.enable_x64(True):
        prob = cj.get_problem("heat", n_pde=40, n_ic=10, n_bc=10)
        setup, static, eng, state, batch = _setup(prob, method, width=6, depth=2, **GN)
        w, lam = _random_w_lam(batch["pde"][0].shape[0], setup.n_terms)
        lsq = LeastSquares(setup.problem, setup.method, static)
        x, unravel = jax.flatten_util.ravel_pytree(state.params)
        r, J = jax.jit(lsq.jacobian)(
            state.params, batch, w, lam
        )  # jitted: one compile, not one per operation
        J_ref = jax.jit(jax.jacrev(lambda x: lsq.residuals(unravel(x), batch, w, lam)))(x)
        np.testing.assert_allclose(np.asarray(J), np.asarray(J_ref), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(
            np.asarray(r),
            np.asarray(jax.jit(lsq.residuals)(state.params, batch, w, lam)),
            rtol=1e-12,
        )


def test_lbpinn_is_refused_by_name():
    with pytest.raises(ValueError, match=r"lbpinn.*not a sum of squares.*LBFGS\(\)"):
        cj.train("poisson1d", "lbpinn", cj.TrainConfig(**_gn(2, 2)), quiet=True)


# --- options, sizes and the choice of form --------------------------------------------------------
def test_config_checks_gn_options():
    with pytest.raises(ValueError, match=r"GaussNewton\.form"):
        cj.TrainConfig(stages=(Adam(), GaussNewton(form="qr")))
    with pytest.raises(ValueError, match="mu_min <= mu_init"):
        cj.TrainConfig(stages=(Adam(), GaussNewton(mu_init=1e9)))
    acc = cj.TrainConfig.preset("accurate")
    assert acc.stage_names[1] == "gauss_newton" and acc.precision == "float64"
    second = cj.TrainConfig.preset("accurate_lbfgs").stages[1]
    assert isinstance(second, cj.stages.LBFGS) and second.backend == "optax"


def test_memory_limit_gives_sizes_before_compiling():
    with pytest.raises(
        ValueError, match=r"1502 residual rows x 7801 parameters.*GaussNewton\(memory_limit_gb"
    ):
        cj.train(
            "poisson1d",
            "pinn",
            cj.TrainConfig(**_gn(2, 2, memory_limit_gb=0.01, form="kernel")),
            quiet=True,
        )
    assert memory_bytes(1502, 7801) == 8 * (2 * 1502 * 7801 + 3 * 1502**2)
    assert lm_solve_form(100, 50) == "gramian" and lm_solve_form(50, 100) == "kernel"


def test_memory_of_each_form():
    """What an iteration holds, per form: pcg the kernel form's matrices, matfree vectors
    only, svd J, its factors and two s x s matrices; float32's auto form is svd's."""
    assert memory_bytes(9200, 19761, 8, "pcg") == memory_bytes(9200, 19761, 8, "kernel")
    assert memory_bytes(50_000, 50_000, 8, "matfree") == 8 * (10 * 50_000 + 6 * 50_000) < 2**30
    assert memory_bytes(100, 1000, 8, "svd") == 8 * (4 * 100 * 1000 + 2 * 100**2)
    assert memory_bytes(1502, 7801, 4) == memory_bytes(1502, 7801, 4, "svd")


def test_auto_form_by_size():
    assert lm_solve_form(1502, 7801) == "kernel"  # 1D Poisson's accurate runs keep the exact step
    assert lm_solve_form(9200, 19761) == "pcg"  # Fisher-KPP
    assert (
        lm_solve_form(2400, 7851) == "pcg" and lm_solve_form(3000, 7851) == "pcg"
    )  # heat, 2D Poisson: 1e-6 sooner
    assert lm_solve_form(PCG_AUTO_ROWS, PCG_AUTO_ROWS + 1) == "pcg"
    assert lm_solve_form(9000, 5000) == "gramian"
    assert lm_solve_form(9200, 19761, "kernel") == "kernel"
    # matfree where the matrices would not fit
    limit = 16 * 2**30
    assert lm_solve_form(9200, 19761, "auto", limit) == "pcg"  # Fisher-KPP: 4.9 GB, fits
    assert lm_solve_form(50_000, 50_000, "auto", limit) == "matfree"  # J alone is 20 GB
    assert lm_solve_form(50_000, 50_000, "auto") == "pcg"  # no limit given: the size rule alone
    assert lm_solve_form(50_000, 50_000, "kernel", limit) == "kernel"  # a form that is set stays
    # float32 (itemsize 4): svd up to SVD_AUTO_MAX rows or parameters; float64 keeps its rule
    assert (
        lm_solve_form(1502, 7801, itemsize=4) == "svd"
        and lm_solve_form(1502, 7801, itemsize=8) == "kernel"
    )
    assert (
        lm_solve_form(SVD_AUTO_MAX + 1, 20000, itemsize=4) == "pcg"
        and lm_solve_form(9000, 500, itemsize=4) == "svd"
    )


def test_the_form_is_printed():
    from cgmpinn_jax.training._engine import gn_form_note

    for form, expect in (("auto", "form (chosen)"), ("pcg", "pcg form (set)")):
        cfg = cj.TrainConfig(
            precision="float64", stages=(Adam(), GaussNewton(form=form)), width=10, depth=2
        )
        setup = resolve(cj.get_problem("heat"), cj.get_method("pinn"), cfg)
        static, eng = CompileCache().engine(setup)
        state, batch = init_state(setup, eng, jax.random.key(0))
        note = gn_form_note(setup, eng.lsq, batch, state.params)
        assert "Gauss-Newton: 2400 rows x" in note and note.endswith(expect)
    cfg = cj.TrainConfig(width=10, depth=2)
    setup = resolve(cj.get_problem("heat"), cj.get_method("pinn"), cfg)
    assert gn_form_note(setup, None, None, None) is None


def test_auto_trains_above_the_limit_and_a_set_form_is_refused():
    from cgmpinn_jax.training._engine import gn_form_note

    def gn(**opts):
        return cj.TrainConfig(
            precision="float64", stages=(Adam(steps=2), GaussNewton(steps=2, **opts))
        )

    with pytest.raises(
        ValueError, match=r"1502 residual rows x 7801 parameters \(kernel form.*memory_limit_gb"
    ):
        cj.train("poisson1d", "pinn", gn(memory_limit_gb=0.01, form="kernel"), quiet=True)
    cfg = gn(memory_limit_gb=0.01)
    setup = resolve(cj.get_problem("poisson1d"), cj.get_method("pinn"), cfg)
    static, eng = CompileCache().engine(setup)  # the memory check passes: auto resolves to matfree
    state, batch = init_state(setup, eng, jax.random.key(0))
    assert gn_form_note(setup, eng.lsq, batch, state.params).endswith("matfree form (chosen)")


def test_sweep_memory_check_counts_members():
    cfg = cj.TrainConfig(**_gn(2, 2, memory_limit_gb=0.25))
    with jax.enable_x64(True):  # one member fits in 0.25 GiB (0.23 GiB) ...
        CompileCache().engine(resolve(cj.get_problem("poisson1d"), cj.get_method("pinn"), cfg))
    with pytest.raises(ValueError, match="2 members"):  # ... two do not
        cj.sweep("poisson1d", "pinn", cfg, seeds=[0, 1], quiet=True, shard=False)


# --- the linear algebra of the forms --------------------------------------------------------------
def test_gram_is_the_symmetric_product():
    J = jax.random.normal(jax.random.key(0), (600, 130), jnp.float32)
    with jax.default_matmul_precision("highest"):
        np.testing.assert_allclose(
            np.asarray(_gram(J, "kernel")), np.asarray(J @ J.T), rtol=1e-5, atol=1e-3
        )
        np.testing.assert_allclose(
            np.asarray(_gram(J, "gramian")), np.asarray(J.T @ J), rtol=1e-5, atol=1e-3
        )
    K = _gram(J, "kernel")
    assert bool(jnp.all(K == K.T))


def test_kernel_and_gramian_steps_agree():
    """(J^T J + mu I)^-1 J^T r == J^T (J J^T + mu I)^-1 r (Woodbury)."""
    with jax.enable_x64(True):
        J = jax.random.normal(jax.random.key(0), (30, 80))
        r = jax.random.normal(jax.random.key(1), (30,))
        mu = 0.37
        d_kernel = J.T @ jnp.linalg.solve(J @ J.T + mu * jnp.eye(30), r)
        d_gram = jnp.linalg.solve(J.T @ J + mu * jnp.eye(80), J.T @ r)
        np.testing.assert_allclose(np.asarray(d_kernel), np.asarray(d_gram), rtol=1e-9, atol=1e-12)


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
        np.testing.assert_allclose(
            np.asarray(a),
            np.linalg.solve(np.asarray(J @ J.T) + mu * np.eye(60), np.asarray(r)),
            rtol=1e-6,
        )


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
        assert (
            np.linalg.norm(K @ np.asarray(a) - np.asarray(r))
            <= 1e-10 * np.linalg.norm(np.asarray(r)) * 1.0001
        )
        assert 1 < int(its) < 50
        _, its_plain = _pcg(J, r, mu, jnp.eye(60), 50, 1e-10)  # identity "factor": plain CG
        assert int(its_plain) == 50


def test_cg_solves_a_symmetric_system_like_numpy():
    with jax.enable_x64(True):
        A = jax.random.normal(jax.random.key(0), (40, 25))
        K = A @ A.T + 0.5 * jnp.eye(40)
        r = jax.random.normal(jax.random.key(1), (40,))
        a, k = _cg(lambda u: K @ u, lambda v: v, r, 200, 1e-12)
        np.testing.assert_allclose(
            np.asarray(a), np.linalg.solve(np.asarray(K), np.asarray(r)), rtol=1e-9
        )
        assert 1 < int(k) <= 41  # at most n + 1 in exact arithmetic; here a few more for rounding


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
    1e-20) does not factor below mu ~ 1e-16, and where it first does, its step leaves a tenth of
    r."""
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


# --- the solver on Rosenbrock ---------------------------------------------------------------------
@pytest.mark.parametrize(
    "form, iters, state_type",
    [
        ("kernel", 60, GNState),
        ("gramian", 60, GNState),
        ("pcg", 80, PCGState),
        ("matfree", 80, GNState),
        ("svd", 80, GNState),
    ],
)
def test_levenberg_marquardt_solves_rosenbrock(form, iters, state_type):
    """Every form reaches Rosenbrock's minimum (1, 1) from (-1.2, 1) to 1e-8, starting with the
    state its step reads."""
    with jax.enable_x64(True):
        params, state, _ = _toy_run(form, (-1.2, 1.0), iters=iters)
        assert isinstance(state, state_type)
        assert float(params["x"]) == pytest.approx(1.0, abs=1e-8)
        assert float(params["y"]) == pytest.approx(1.0, abs=1e-8)
        if form in ("kernel", "gramian"):
            assert float(state.value) < 1e-20
        if form == "pcg":
            assert state.L.shape == (2, 2) and 1 <= int(state.factorizations)


def test_auto_resolving_to_pcg_starts_with_its_state(monkeypatch):
    """form="auto" that resolves to pcg (here: from 1 row on) gives init the PCGState its step
    reads (a GNState would fail in the first step), and solves the problem."""
    from cgmpinn_jax.stages import _gauss_newton

    monkeypatch.setattr(_gauss_newton, "PCG_AUTO_ROWS", 1)
    with jax.enable_x64(True):
        params, state, _ = _toy_run("auto", (-1.2, 1.0), iters=80)
        assert isinstance(state, PCGState)
        assert float(params["x"]) == pytest.approx(1.0, abs=1e-8)


def test_no_decrease_at_the_largest_damping_keeps_the_point():
    """At the exact minimum no trial can decrease the loss: mu grows to its bound, the
    solver says NO_DECREASE and the point is unchanged."""
    with jax.enable_x64(True):
        params, state, statuses = _toy_run("kernel", (1.0, 1.0), iters=5)
        assert statuses[-1] == StageStatus.NO_DECREASE
        assert float(params["x"]) == 1.0 and float(params["y"]) == 1.0


# --- the solver's first step on a PINN ------------------------------------------------------------
@pytest.mark.parametrize(
    "form, options, rtol",
    [("matfree", dict(cg_tol=1e-12, matfree_max=2000), 1e-6), ("svd", {}, 1e-9)],
)
def test_first_step_is_the_kernel_step_at_the_same_damping(form, options, rtol):
    """From a damping large enough that the first trial is taken, the step is the exact kernel
    step ``-J^T (J J^T + mu I)^{-1} r`` (numpy, from the objective's own Jacobian): the
    matrix-free form's (J v by the linear transpose of the residuals' VJP, through the Taylor
    fast path; J^T u by the VJP; CG run to a tight tolerance), and the SVD form's."""
    with jax.enable_x64(True):
        eng, params, batch, w, lam = _small_pinn()
        r, J = (np.asarray(a) for a in jax.jit(eng.lsq.jacobian)(params, batch, w, lam))
        mu = 10.0 * float(np.sum(J * J) / J.shape[1])  # damped enough that the first trial is taken
        gn = GaussNewtonSolver(eng.objective, eng.lsq, form=form, **options, **KW)
        s = jax.jit(gn.init)(params, w, lam, batch)._replace(mu=jnp.asarray(mu))
        out = jax.jit(gn.step)(params, s, w, lam, batch, s.value, s.grad)
        assert int(out.evals) == 1  # the first trial was taken
        x0 = np.asarray(jax.flatten_util.ravel_pytree(params)[0], np.float64)
        d = -J.T @ np.linalg.solve(J @ J.T + mu * np.eye(J.shape[0]), r)
        x1 = np.asarray(jax.flatten_util.ravel_pytree(out.params)[0])
        assert np.linalg.norm(x1 - (x0 + d)) <= rtol * np.linalg.norm(d)
        if form == "matfree":
            np.testing.assert_allclose(
                np.asarray(jax.flatten_util.ravel_pytree(out.state.grad)[0]),
                2 * r @ J,
                rtol=1e-9,
                atol=1e-12 * float(np.max(np.abs(2 * r @ J))),
            )


@pytest.mark.parametrize("width, exact, mu_init", [(10, "gramian", 1e-3), (40, "kernel", 1e3)])
def test_first_pcg_step_is_the_exact_step(width, exact, mu_init):
    """The first iteration factors the product plus mu I at the iteration's first damping; every
    trial's CG reaches its tolerance (at once for the first trial), so the accepted step equals
    the exact step: on the Gramian side (J^T J, P x P) where the rows outnumber the parameters
    (heat's 2400 rows, 151 parameters), on the kernel side (J J^T, M x M) where they do not
    (600 rows, 1881 parameters; there from a damping whose first trial is accepted: at 1e-3
    the accepted trial's mu is 1e4 times the factor's and CG stops at its iteration cap)."""
    with jax.enable_x64(True):
        eng, params, batch, w, lam = _pinn_start(
            width=width, **({} if width == 10 else dict(n_pde=400, n_ic=100, n_bc=100))
        )
        kw = dict(KW, mu_init=mu_init)
        out = {}
        for form in (exact, "pcg"):
            gn = GaussNewtonSolver(eng.objective, eng.lsq, form=form, **kw)
            s = gn.init(params, w, lam, batch)
            out[form] = jax.jit(gn.step)(params, s, w, lam, batch, s.value, s.grad)
        xk = jax.flatten_util.ravel_pytree(out[exact].params)[0]
        xp = jax.flatten_util.ravel_pytree(out["pcg"].params)[0]
        x0 = jax.flatten_util.ravel_pytree(params)[0]
        rows, n = eng.lsq.n_rows(batch), x0.shape[0]
        assert out["pcg"].state.L.shape == (min(rows, n),) * 2 and (rows > n) == (
            exact == "gramian"
        )
        assert float(jnp.linalg.norm(xp - xk)) <= 1e-6 * float(jnp.linalg.norm(xk - x0))
        assert int(out["pcg"].state.factorizations) == 1 and int(out["pcg"].state.cg_iters) < 50


def test_pcg_refactors_before_it_stops_on_a_stale_factor():
    """No trial can lower the objective (CG gets no iterations, so every step is zero): with the
    previous iteration's factor the stage goes on, parameters unchanged, and the next iteration
    refactors at this one's first damping; only with that fresh factor does it stop
    (NO_DECREASE)."""

    def flat(p):
        return np.asarray(jax.flatten_util.ravel_pytree(p)[0])

    with jax.enable_x64(True):
        eng, params, batch, w, lam = _pinn_start("poisson1d")
        kw = dict(KW, form="pcg", max_trials=40)
        gn = GaussNewtonSolver(eng.objective, eng.lsq, **kw)
        s = gn.init(params, w, lam, batch)
        o = jax.jit(gn.step)(
            params, s, w, lam, batch, s.value, s.grad
        )  # a real step: a factor to reuse
        assert (
            int(o.status) == 0
            and int(o.state.factorizations) == 1
            and int(o.state.cg_iters) <= gn.cg_refactor
        )
        stuck = GaussNewtonSolver(eng.objective, eng.lsq, cg_max=0, **kw)
        step = jax.jit(stuck.step)
        o2 = step(o.params, o.state, w, lam, batch, o.state.value, o.state.grad)
        assert (
            int(o2.status) == 0 and int(o2.evals) > 1
        )  # the stale factor failed up to the largest damping
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
        kw = dict(KW, form="pcg")
        counts = {}
        for refactor in (0, 49):
            gn = GaussNewtonSolver(eng.objective, eng.lsq, cg_refactor=refactor, **kw)
            s, p = gn.init(params, w, lam, batch), params
            step = jax.jit(gn.step)
            for _ in range(6):
                o = step(p, s, w, lam, batch, s.value, s.grad)
                p, s = o.params, o.state
            counts[refactor] = int(s.factorizations)
            assert float(s.value) < float(gn.init(params, w, lam, batch).value)
        assert counts[0] == 6
        assert counts[49] < 6


def test_matfree_scale_estimate_is_near_the_exact_one():
    with jax.enable_x64(True):
        eng, params, batch, w, lam = _small_pinn()
        _, J = jax.jit(eng.lsq.jacobian)(params, batch, w, lam)
        gn = GaussNewtonSolver(eng.objective, eng.lsq, form="matfree", **KW)
        x, unravel = jax.flatten_util.ravel_pytree(params)

        def products(x):  # jitted: one compile, not one per operation
            r, _, g, scale = gn._products(x, unravel, batch, w, lam)
            return r, g, scale

        r, g, scale = jax.jit(products)(x)
        exact = float(jnp.sum(J * J) / J.shape[1])
        assert exact / 2 < float(scale) < 2 * exact
        np.testing.assert_allclose(np.asarray(g), np.asarray(r @ J), rtol=1e-9, atol=1e-12)


# --- end to end -----------------------------------------------------------------------------------
def test_gauss_newton_stage_beats_adam_alone():
    """Tiny end-to-end run: 150 Gauss-Newton iterations after 300 Adam steps cut the error
    by far more than 10x; the history counts trials, the stage ends cleanly."""
    prob = cj.get_problem("poisson1d", n_pde=200)
    base = dict(width=16, depth=2, cgm={"k_upd": 20}, balancing={"second_stage_apply": "refresh"})
    adam = cj.train(prob, "cgmpinn", cj.TrainConfig(**_gn(300, 0), **base), key=0, quiet=True)
    res = cj.train(prob, "cgmpinn", cj.TrainConfig(**_gn(300, 150), **base), key=0, quiet=True)
    assert res.statuses["gauss_newton"] in (
        StageStatus.COMPLETED,
        StageStatus.LOSS_TOL,
        StageStatus.NO_DECREASE,
    )
    assert res.metrics.rel_e2 < adam.metrics.rel_e2 / 100
    second = res.history.k > 300
    assert np.all(res.history.evals[second] >= 1)
    loss = res.history.loss[second]
    assert loss[-1] < 1e-3 * loss[0]


# heat PINN in float64 (the form, the points, the width, Adam's steps, the form's iterations, the
# factor below Adam alone it must reach); slow: the faster tests above cover each form's path
@pytest.mark.parametrize(
    "form, points, width, adam_steps, steps, factor",
    [
        pytest.param("pcg", (400, 100, 100), 12, 300, 40, 20, marks=pytest.mark.slow),
        pytest.param("matfree", (200, 50, 50), 10, 200, 30, 5, marks=pytest.mark.slow),
    ],
)
def test_train_end_to_end_reduces_the_error(form, points, width, adam_steps, steps, factor):
    """Through cj.train with the form set: the error far below Adam alone; the pcg form's also
    within a factor 10 of the exact kernel step's error after the same iterations."""
    prob = cj.get_problem("heat", **dict(zip(("n_pde", "n_ic", "n_bc"), points)))

    def error(form, steps):
        cfg = cj.TrainConfig(
            precision="float64",
            stages=(Adam(steps=adam_steps), GaussNewton(steps=steps, form=form)),
            width=width,
            depth=2,
        )
        return cj.train(prob, "pinn", cfg, key=0, quiet=True).metrics.rel_e2

    adam, err = error("auto", 0), error(form, steps)
    assert err < adam / factor
    if form == "pcg":
        assert err < 10 * error("kernel", steps)


def test_auto_takes_the_svd_form_in_float32_and_it_trains():
    """A float32 Gauss-Newton stage with "auto" (svd at this size) lowers the error of the
    Adam start."""
    prob = cj.get_problem("poisson1d", n_pde=200)
    cfg = cj.TrainConfig(stages=(Adam(steps=300), GaussNewton(steps=0)), width=16, depth=2)
    adam = cj.train(prob, "pinn", cfg, key=0, quiet=True)
    gn = cj.train(prob, "pinn", cfg.with_steps(None, 30), key=0, quiet=True)
    assert gn.metrics.rel_e2 < 0.5 * adam.metrics.rel_e2


@pytest.mark.slow  # CI time (about 38 s on one core); run with -m slow
def test_sweep_members_each_with_their_own_damping():
    """A vmapped Gauss-Newton sweep: each member equals its own train() run."""
    prob = cj.get_problem("poisson1d", n_pde=60)
    cfg = cj.TrainConfig(**_gn(40, 6), cgm={"k_upd": 10}, width=8, depth=2)
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
    cfg = cj.TrainConfig(
        **_gn(30, 20),
        cgm={"k_upd": 10},
        width=8,
        depth=2,
        balancing={"second_stage_apply": "refresh"},
    )
    a = cj.train(prob, "cgmpinn", cfg, key=0, quiet=True)
    b = cj.train(prob, "cgmpinn", cfg, key=0, quiet=True, track_error_every=7)
    assert np.array_equal(a.history.loss, b.history.loss) and a.metrics.rel_e2 == b.metrics.rel_e2
    assert a.history.error_k is None
    assert list(b.history.error_k[:4]) == [7, 10, 17, 20]
    assert b.history.error_k[-1] == 50 and np.all(np.diff(b.history.error_seconds) >= 0)
    assert b.history.error_rel_e2[-1] == pytest.approx(b.metrics.rel_e2, rel=1e-9)
