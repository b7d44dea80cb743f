"""Tests of the curriculum parameter and the CGM / GMMPINN / CLPINN sample weights."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from cgmpinn_jax import weighting as wt
from cgmpinn_jax.gmm import GMMFit, GMMStatus, fit_gmm

EPS = 1e-6
N_SMALL = 64  # one residual length for every test that refits the GMM (one compilation)


# ---------------------------------------------------------------------------
# independent loop-based references, straight from docs/reference-code.md §5, §11.1, §11.2
# ---------------------------------------------------------------------------


def _ref_difficulty(r, resp, eps):
    n, k = len(r), len(resp[0])
    d = []
    for m in range(k):
        num = 0.0
        den = 0.0
        for i in range(n):
            num += resp[i][m] * r[i] ** 2
            den += resp[i][m]
        d.append(num / (den + eps))
    d_min, d_max = min(d), max(d)
    if d_max - d_min > eps:
        return [(dm - d_min) / (d_max - d_min) for dm in d]
    return [0.0] * k


def _ref_normalise(w, eps):
    mean = sum(w) / len(w)
    return [wi / (mean + eps) for wi in w]


def ref_cgm(r, resp, variances, tau, beta=1.0, eps=EPS, use_variance=True, normalize=True):
    n, k = len(r), len(variances)
    dt = _ref_difficulty(r, resp, eps)
    w_comp = []
    inv = [1.0 / (variances[m] + eps) for m in range(k)]
    inv_max = max(inv)
    for m in range(k):
        w_easy = math.exp(-beta * dt[m])
        w_hard = math.exp(-beta * (1.0 - dt[m]))
        w_cl = (1.0 - tau) * w_easy + tau * w_hard
        if use_variance:
            v = inv[m] / inv_max
            w_cl *= (1.0 - tau) * v + tau
        w_comp.append(w_cl)
    w = [sum(resp[i][m] * w_comp[m] for m in range(k)) for i in range(n)]
    return _ref_normalise(w, eps) if normalize else w


def ref_gmmpinn(r, resp, variances, beta=1.0, eps=EPS):
    n, k = len(r), len(variances)
    dt = _ref_difficulty(r, resp, eps)
    inv = [1.0 / (variances[m] + eps) for m in range(k)]
    den = max(inv) + eps
    w_comp = [math.exp(beta * dt[m]) * inv[m] / den for m in range(k)]
    w = [sum(resp[i][m] * w_comp[m] for m in range(k)) for i in range(n)]
    return _ref_normalise(w, eps)


def ref_clpinn(r, tau, beta=1.0, eps=EPS):
    p = [ri**2 for ri in r]
    lo, hi = min(p), max(p)
    pt = [(pi - lo) / (hi - lo) for pi in p] if hi - lo > eps else [0.0] * len(p)
    w = [(1.0 - tau) * math.exp(-beta * x) + tau * math.exp(-beta * (1.0 - x)) for x in pt]
    return _ref_normalise(w, eps)


# hand-made residuals and fit (K = 3, N = 6)
R = [0.05, -0.1, 0.8, 1.2, -2.5, 3.0]
RESP = [
    [0.90, 0.08, 0.02],
    [0.85, 0.10, 0.05],
    [0.20, 0.70, 0.10],
    [0.10, 0.80, 0.10],
    [0.05, 0.15, 0.80],
    [0.00, 0.10, 0.90],
]
VAR = [0.01, 0.3, 2.5]
R_TINY = [1e-4 * x for x in R]  # d-range below eps -> d~ = 0 for every component


def _fit(resp, variances):
    resp = jnp.asarray(resp, jnp.float32)
    k = resp.shape[1]
    z = jnp.zeros((k,), jnp.float32)
    return GMMFit(
        z + 1.0 / k,
        z,
        jnp.asarray(variances, jnp.float32),
        resp,
        jnp.float32(0),
        jnp.int32(3),
        jnp.int32(0),
    )


FIT = _fit(RESP, VAR)


# ---------------------------------------------------------------------------
# tau
# ---------------------------------------------------------------------------


def test_tau_values_and_traced():
    assert float(wt.tau(1, 15000)) == pytest.approx(1 / 12000)
    assert float(wt.tau(6000, 15000)) == pytest.approx(0.5)
    assert float(wt.tau(12000, 15000)) == 1.0
    assert float(wt.tau(20000, 15000)) == 1.0
    assert float(wt.tau(8000, 20000, 0.5)) == pytest.approx(0.8)
    ks = jnp.arange(0, 16001, 4000)
    taus = jax.jit(jax.vmap(lambda k: wt.tau(k, 20000)))(ks)
    np.testing.assert_allclose(np.asarray(taus), [0.0, 0.25, 0.5, 0.75, 1.0], rtol=1e-6)


# ---------------------------------------------------------------------------
# golden values
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("tau", [0.0, 0.5, 1.0])
@pytest.mark.parametrize("use_variance", [True, False])
@pytest.mark.parametrize("r", [R, R_TINY], ids=["r", "r_tiny"])
def test_cgm_golden(tau, use_variance, r):
    got = wt.cgm_weights(jnp.asarray(r), FIT, tau, variance_factor=use_variance)
    want = ref_cgm(r, RESP, VAR, tau, use_variance=use_variance)
    np.testing.assert_allclose(np.asarray(got), want, rtol=2e-5)
    raw = wt.cgm_weights(jnp.asarray(r), FIT, tau, variance_factor=use_variance, normalize=False)
    np.testing.assert_allclose(
        np.asarray(raw),
        ref_cgm(r, RESP, VAR, tau, use_variance=use_variance, normalize=False),
        rtol=2e-5,
    )


def test_cgm_golden_literal():
    # literal numbers (computed once with ref_cgm above) guard against a common-mode change
    got = wt.cgm_weights(jnp.asarray(R), FIT, 0.5)
    want = [1.4201454, 1.3820304, 0.87268561, 0.79401153, 0.78318878, 0.74792521]
    np.testing.assert_allclose(np.asarray(got), want, rtol=2e-5)
    np.testing.assert_allclose(want, ref_cgm(R, RESP, VAR, 0.5), rtol=1e-6)


@pytest.mark.parametrize("beta", [0.5, 1.0, 2.0])
@pytest.mark.parametrize("r", [R, R_TINY], ids=["r", "r_tiny"])
def test_gmmpinn_golden(beta, r):
    got = wt.gmmpinn_weights(jnp.asarray(r), FIT, beta=beta)
    np.testing.assert_allclose(np.asarray(got), ref_gmmpinn(r, RESP, VAR, beta=beta), rtol=2e-5)


@pytest.mark.parametrize("tau", [0.0, 0.5, 1.0])
@pytest.mark.parametrize("r", [R, R_TINY], ids=["r", "r_tiny"])
def test_clpinn_golden(tau, r):
    got = wt.clpinn_weights(jnp.asarray(r), tau)
    np.testing.assert_allclose(np.asarray(got), ref_clpinn(r, tau), rtol=2e-5)


def test_fade_variance_off_matches_unfaded_formula():
    # fade_variance=False: w_comp = w_CL * v (an ablation, not in the reference)
    tau = 0.5
    dt = np.asarray(wt.normalized_difficulty(wt.component_difficulty(jnp.asarray(R), FIT.resp)))
    w_cl = (1 - tau) * np.exp(-dt) + tau * np.exp(-(1 - dt))
    inv = 1.0 / (np.asarray(VAR) + EPS)
    w_comp = w_cl * inv / inv.max()
    w = np.asarray(RESP) @ w_comp
    got = wt.cgm_weights(jnp.asarray(R), FIT, tau, fade_variance=False)
    np.testing.assert_allclose(np.asarray(got), w / (w.mean() + EPS), rtol=2e-5)


# ---------------------------------------------------------------------------
# Theorem (uniform equivalence) bounds and normalisation
# ---------------------------------------------------------------------------


def test_theorem_bounds_random():
    n, k, batch = 40, 4, 256
    rng = np.random.default_rng(0)
    f32 = lambda a: jnp.asarray(a, jnp.float32)  # noqa: E731
    r = f32(rng.normal(size=(batch, n)) * np.exp(rng.uniform(-8, 3, (batch, 1))))
    resp = f32(rng.dirichlet(np.full(k, 0.5), (batch, n)))
    variances = f32(np.exp(rng.uniform(-18, 5, (batch, k))))
    taus = f32(rng.uniform(size=batch))
    betas = f32(np.linspace(0.0, 3.0, batch))

    def one(r, resp, var, tau, beta):
        fit = GMMFit(jnp.ones(k) / k, jnp.zeros(k), var, resp, 0.0, 0, 0)
        raw = wt.cgm_weights(r, fit, tau, beta=beta, normalize=False)
        raw_nov = wt.cgm_weights(r, fit, tau, beta=beta, variance_factor=False, normalize=False)
        w = wt.cgm_weights(r, fit, tau, beta=beta)
        v_min = jnp.min(wt.precision_factor(var))
        return raw, raw_nov, w, v_min

    raw, raw_nov, w, v_min = jax.jit(jax.vmap(one))(r, resp, variances, taus, betas)
    raw, raw_nov, w, v_min = (np.asarray(a, np.float64) for a in (raw, raw_nov, w, v_min))
    lower = np.exp(-np.asarray(betas))[:, None] * v_min[:, None]
    tol = 1e-6
    assert np.all(raw >= lower * (1 - tol)) and np.all(raw <= 1 + tol)
    assert np.all(raw_nov >= np.exp(-np.asarray(betas))[:, None] * (1 - tol)) and np.all(
        raw_nov <= 1 + tol
    )
    # normalisation w / (mean(w) + eps): mean is mean_raw / (mean_raw + eps), i.e. 1 within
    # eps / mean_raw (1e-5 once mean_raw >= 0.1)
    mean_raw = raw.mean(axis=1)
    np.testing.assert_allclose(w.mean(axis=1), mean_raw / (mean_raw + EPS), rtol=1e-5)
    big = mean_raw >= 0.1
    assert big.sum() > 20
    np.testing.assert_allclose(w.mean(axis=1)[big], 1.0, atol=1e-5)
    assert np.all(np.isfinite(w))


# ---------------------------------------------------------------------------
# curriculum direction
# ---------------------------------------------------------------------------


def test_curriculum_direction():
    equal_var = _fit(RESP, [0.5, 0.5, 0.5])
    r = jnp.asarray(R)
    d = np.asarray(wt.component_difficulty(r, equal_var.resp))
    easy, hard = int(np.argmin(d)), int(np.argmax(d))
    for fit in (equal_var, FIT):  # FIT: the easy component also has the smallest variance
        c0 = np.asarray(wt.cgm_component_weights(r, fit, 0.0))
        c1 = np.asarray(wt.cgm_component_weights(r, fit, 1.0))
        assert c0[easy] > c0[hard]
        assert c1[hard] > c1[easy]
    # on real residuals via the fitted GMM, tau = 0 favours small-|r| points, tau = 1 large-|r|
    rng = np.random.default_rng(1)
    x = jnp.asarray(
        np.r_[rng.normal(0, 0.05, N_SMALL // 2), rng.normal(3.0, 0.05, N_SMALL // 2)], jnp.float32
    )
    fit = fit_gmm(x, 4)
    w0 = np.asarray(wt.cgm_weights(x, fit, 0.0))
    w1 = np.asarray(wt.cgm_weights(x, fit, 1.0))
    assert w0[: N_SMALL // 2].mean() > w0[N_SMALL // 2 :].mean()
    assert w1[: N_SMALL // 2].mean() < w1[N_SMALL // 2 :].mean()


# ---------------------------------------------------------------------------
# (init, update) transformations
# ---------------------------------------------------------------------------


def _residuals(seed=0):
    rng = np.random.default_rng(seed)
    return jnp.asarray(
        np.r_[rng.normal(0, 0.1, N_SMALL // 2), rng.standard_t(2, N_SMALL // 2) + 2.0], jnp.float32
    )


def test_cgm_weighting_update_matches_pure_function():
    r = _residuals()
    w8 = wt.cgm_weighting()
    state = w8.init(N_SMALL)
    assert np.all(np.asarray(state.weights) == 1.0) and int(state.n_refresh) == 0
    w, state = w8.update(r, 0.3, state)  # (jit + vmap: test_vmap_over_beta_tau_and_data)
    want = wt.cgm_weights(r, fit_gmm(r, 4), 0.3)
    np.testing.assert_allclose(np.asarray(w), np.asarray(want), rtol=1e-5)
    assert int(state.last_status) == GMMStatus.CONVERGED
    assert int(state.n_refresh) == 1 and int(state.n_fallback) == 0
    assert float(state.spread) == pytest.approx(float(w.max() / w.min()), rel=1e-6)
    np.testing.assert_allclose(np.asarray(state.weights), np.asarray(w))


def test_fallback_keeps_previous_weights():
    w8 = wt.cgm_weighting()
    update = w8.update
    state = w8.init(N_SMALL)
    # degenerate first refresh -> ones, normalised by mean + eps (as the reference)
    w, state = update(jnp.full((N_SMALL,), 0.5), 0.1, state)
    np.testing.assert_allclose(np.asarray(w), 1.0 / (1.0 + EPS), rtol=1e-7)
    assert int(state.last_status) == GMMStatus.DEGENERATE and int(state.n_fallback) == 1
    # a valid refresh
    w_ok, state = update(_residuals(), 0.1, state)
    assert int(state.last_status) == GMMStatus.CONVERGED
    # NaN residuals -> the last valid weights, re-normalised (identical here)
    bad = _residuals().at[3].set(jnp.nan)
    w_bad, state = update(bad, 0.9, state)
    assert int(state.last_status) == GMMStatus.NONFINITE and int(state.n_fallback) == 2
    np.testing.assert_allclose(np.asarray(w_bad), np.asarray(w_ok), rtol=1e-6)
    # Inf too
    w_inf, state = update(_residuals().at[0].set(jnp.inf), 0.9, state)
    np.testing.assert_allclose(np.asarray(w_inf), np.asarray(w_ok), rtol=1e-6)
    assert int(state.n_refresh) == 4


def test_max_iter_fit_is_used():
    w8 = wt.cgm_weighting(max_iter=1)
    r = _residuals(3)
    w, state = w8.update(r, 0.0, w8.init(N_SMALL))
    assert int(state.last_status) == GMMStatus.MAX_ITER and int(state.n_fallback) == 0
    assert not np.allclose(np.asarray(w), 1.0)


def test_ablation_and_uniform_weightings():
    r = _residuals(4)
    g8 = wt.gmmpinn_weighting()
    w, s = g8.update(r, 0.7, g8.init(N_SMALL))
    np.testing.assert_allclose(
        np.asarray(w), np.asarray(wt.gmmpinn_weights(r, fit_gmm(r))), rtol=1e-5
    )
    c8 = wt.clpinn_weighting(beta=2.0)
    w, s = c8.update(r, 0.7, c8.init(N_SMALL))
    np.testing.assert_allclose(
        np.asarray(w), ref_clpinn(np.asarray(r, np.float64).tolist(), 0.7, beta=2.0), rtol=2e-5
    )
    w_nan, s = c8.update(r.at[0].set(jnp.nan), 0.7, s)
    assert int(s.last_status) == GMMStatus.NONFINITE
    np.testing.assert_allclose(np.asarray(w_nan), np.asarray(w), rtol=1e-6)
    u8 = wt.uniform_weighting()
    w, s = jax.jit(u8.update)(r, 0.7, u8.init(N_SMALL))
    assert np.all(np.asarray(w) == 1.0) and int(s.n_refresh) == 1


def test_vmap_over_beta_tau_and_data():
    # one vmapped call sweeps beta, tau and the residual vector together (one compilation)
    rs = jnp.stack([_residuals(s) for s in range(5)])
    betas = jnp.array([0.0, 0.5, 1.0, 2.0, jnp.nan])
    taus = jnp.array([0.0, 0.25, 0.75, 1.0, 0.5])

    def weights_for(r, beta, tau):
        w8 = wt.cgm_weighting(beta=beta)  # factory called with a traced beta
        return w8.update(r, tau, w8.init(N_SMALL))

    batched, states = jax.jit(jax.vmap(weights_for))(rs, betas, taus)
    assert batched.shape == (5, N_SMALL) and states.n_refresh.shape == (5,)
    # a traced NaN beta cannot be rejected by the factory (a concrete one is): the usable fit
    # gives non-finite weights, so that element keeps its previous (initial) weights
    assert np.asarray(states.last_status).tolist() == [0, 0, 0, 0, GMMStatus.NONFINITE]
    np.testing.assert_allclose(np.asarray(batched[4]), 1.0 / (1.0 + EPS), rtol=1e-7)
    betas, taus = betas[:4], taus[:4]
    fit = fit_gmm(rs[2])
    want = wt.cgm_weights(rs[2], fit, 0.75, beta=1.0)
    np.testing.assert_allclose(np.asarray(batched[2]), np.asarray(want), rtol=1e-5)
    # pure functions vmap over tau and beta as well (no refit)
    grid = jax.vmap(lambda t, b: wt.cgm_weights(rs[2], fit, t, beta=b))(taus, betas)
    np.testing.assert_allclose(np.asarray(grid[2]), np.asarray(want), rtol=1e-5)
    cl = jax.vmap(lambda t, b: wt.clpinn_weights(rs[2], t, beta=b))(taus, betas)
    gm = jax.vmap(lambda b: wt.gmmpinn_weights(rs[2], fit, beta=b))(betas)
    assert cl.shape == gm.shape == (4, N_SMALL)
    with pytest.raises(ValueError, match="beta"):
        wt.cgm_weighting(beta=float("nan"))
    assert np.all(np.isfinite(np.asarray(cl))) and np.all(np.isfinite(np.asarray(gm)))


# ---------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "factory, name",
    [
        (lambda: wt.cgm_weighting(n_components=0), "n_components"),
        (lambda: wt.gmmpinn_weighting(n_components=0), "n_components"),
        (lambda: wt.cgm_weighting(beta=-1.0), "beta"),
        (lambda: wt.clpinn_weighting(beta=-0.1), "beta"),
        (lambda: wt.cgm_weighting(eps=0.0), "eps"),
        (lambda: wt.gmmpinn_weighting(eps=-1e-6), "eps"),
        (lambda: wt.tau(10, 100, c_sat=0.0), "c_sat"),
        (lambda: wt.tau(10, 100, c_sat=1.5), "c_sat"),
        (lambda: wt.tau(10, 0), "k_max"),
        (lambda: wt.cgm_weights(jnp.zeros((6, 1)), FIT, 0.5), "`r`"),
        (lambda: wt.clpinn_weights(jnp.zeros((2, 3)), 0.5), "`r`"),
        (lambda: wt.cgm_weights(jnp.asarray(R), FIT, 1.5), "tau"),
        (lambda: wt.cgm_weights(jnp.asarray(R), FIT, 0.5, beta=-2.0), "beta"),
        (lambda: wt.uniform_weighting().init(0), "n_points"),
    ],
)
def test_bad_input(factory, name):
    with pytest.raises(ValueError, match=name):
        factory()


def test_bad_residual_in_update():
    w8 = wt.cgm_weighting()
    state = w8.init(N_SMALL)
    with pytest.raises(ValueError, match="`r`"):
        w8.update(jnp.zeros((N_SMALL, 1)), 0.5, state)
    with pytest.raises(ValueError, match="`r`"):
        w8.update(jnp.zeros((N_SMALL + 1,)), 0.5, state)
