"""Automatic K by BIC: fit_gmm_bic and the "bic" weightings."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import cgmpinn_jax as cj
from cgmpinn_jax import weighting as wt
from cgmpinn_jax.gmm import GMMStatus, fit_gmm, fit_gmm_bic

N = 2000  # one length for the module-level data (one compilation of fit_gmm_bic)


def _single():
    return jax.random.normal(jax.random.PRNGKey(3), (N,))


def _three():
    k1, k2, k3 = jax.random.split(jax.random.PRNGKey(4), 3)
    return jnp.concatenate(
        [
            0.5 * jax.random.normal(k1, (700,)) - 6.0,
            0.3 * jax.random.normal(k2, (700,)),
            0.8 * jax.random.normal(k3, (N - 1400,)) + 7.0,
        ]
    )


@pytest.fixture(scope="module")
def three():
    r = _three()
    return r, fit_gmm_bic(r), fit_gmm(r, 3)


def test_single_gaussian_picks_one():
    sel = fit_gmm_bic(_single())
    assert int(sel.n_components) == 1
    assert int(sel.fit.status) == GMMStatus.CONVERGED
    assert sel.bic.shape == (6,)
    assert int(jnp.argmin(sel.bic)) == 0
    assert sel.mask.tolist() == [True] + [False] * 5


def test_three_components_picks_three_and_pads(three):
    r, sel, plain = three
    assert int(sel.n_components) == 3
    assert np.all(np.isfinite(np.asarray(sel.bic)))
    # BIC by hand for the chosen fit
    n = r.shape[0]
    np.testing.assert_allclose(sel.bic[2], -2 * n * plain.loglik + 8 * np.log(n), rtol=1e-5)
    fit = sel.fit
    assert fit.weights.shape == (6,) and fit.resp.shape == (N, 6)
    # padded = plain 3-component fit + inactive components
    np.testing.assert_allclose(fit.weights[:3], plain.weights, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(fit.means[:3], plain.means, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(fit.variances[:3], plain.variances, rtol=1e-5)
    np.testing.assert_allclose(fit.resp[:, :3], plain.resp, atol=1e-6)
    np.testing.assert_allclose(fit.loglik, plain.loglik, rtol=1e-6)
    assert int(fit.status) == int(plain.status)
    np.testing.assert_array_equal(fit.weights[3:], 0.0)
    np.testing.assert_array_equal(fit.resp[:, 3:], 0.0)
    np.testing.assert_array_equal(fit.variances[3:], 1.0)
    np.testing.assert_allclose(fit.resp.sum(axis=1), 1.0, rtol=1e-5)


@pytest.mark.parametrize("tau", [0.0, 0.4, 1.0])
def test_masked_weights_equal_plain_fit(three, tau):
    r, sel, plain = three
    for kw in (dict(), dict(variance_factor=False), dict(beta=2.5, fade_variance=False)):
        w_bic = wt.cgm_weights(r, sel.fit, tau, mask=sel.mask, **kw)
        w_plain = wt.cgm_weights(r, plain, tau, **kw)
        np.testing.assert_allclose(w_bic, w_plain, rtol=2e-5, atol=1e-6)
    w_bic = wt.gmmpinn_weights(r, sel.fit, mask=sel.mask)
    np.testing.assert_allclose(w_bic, wt.gmmpinn_weights(r, plain), rtol=2e-5, atol=1e-6)


def test_mask_matters(three):
    """Without the mask the padded components (difficulty 0, variance 1) would enter the
    min-max normalisation and the precision maximum, and the weights would change."""
    r, sel, plain = three
    w_nomask = wt.cgm_weights(r, sel.fit, 0.0)
    assert not np.allclose(w_nomask, wt.cgm_weights(r, plain, 0.0), rtol=1e-3)


def test_weighting_factories_with_bic(three):
    r, sel, plain = three
    for factory in (wt.cgm_weighting, wt.gmmpinn_weighting):
        w_bic_t = factory(n_components="bic")
        w3_t = factory(n_components=3)
        w, state = w_bic_t.update(r, 0.3, w_bic_t.init(N))
        w3, _ = w3_t.update(r, 0.3, w3_t.init(N))
        assert np.all(np.isfinite(np.asarray(w)))
        np.testing.assert_allclose(float(jnp.mean(w)), 1.0, rtol=1e-5)
        np.testing.assert_allclose(w, w3, rtol=2e-5, atol=1e-6)
        assert int(state.n_components) == 3
        assert int(state.last_status) == int(sel.fit.status)
        assert int(state.n_fallback) == 0


def test_degenerate_and_nonfinite():
    # constant residuals: K = 1 is a valid fit (the K >= 2 fits are DEGENERATE, BIC = +inf)
    sel = fit_gmm_bic(jnp.full((N,), 0.25))
    assert int(sel.n_components) == 1
    assert sel.fit.usable
    assert np.all(np.isinf(np.asarray(sel.bic[1:])))
    # NaN: every fit fails; K = 1 with fit_gmm's status is returned
    r = _single().at[5].set(jnp.nan)
    sel = fit_gmm_bic(r)
    assert int(sel.n_components) == 1
    assert int(sel.fit.status) == int(fit_gmm(r, 1).status) == GMMStatus.NONFINITE
    assert np.all(np.isinf(np.asarray(sel.bic)))
    assert np.all(np.isfinite(np.asarray(sel.fit.resp)))
    # ... and the weighting keeps its previous weights
    w8 = wt.cgm_weighting(n_components="bic")
    w, state = w8.update(r, 0.5, w8.init(N))
    np.testing.assert_allclose(w, 1.0, rtol=1e-5)
    assert int(state.n_fallback) == 1 and int(state.last_status) == GMMStatus.NONFINITE


@pytest.mark.slow  # CI time: heavy compile; run with -m slow
def test_jit_and_vmap():
    n, kmax = 400, 3
    k1, k2 = jax.random.split(jax.random.PRNGKey(7))
    a = jax.random.normal(k1, (n,))
    b = jnp.concatenate(
        [jax.random.normal(k2, (n // 2,)) - 10.0, jax.random.normal(k2, (n // 2,)) + 10.0]
    )
    batch = jnp.stack([a, b])
    f = jax.jit(jax.vmap(lambda r, rc: fit_gmm_bic(r, kmax, reg_covar=rc)))
    sel = f(batch, jnp.array([1e-6, 1e-6]))
    assert sel.n_components.tolist() == [1, 2]
    assert sel.fit.resp.shape == (2, n, kmax)
    assert sel.mask.tolist() == [[True, False, False], [True, True, False]]
    for i in range(2):
        one = fit_gmm_bic(batch[i], kmax)
        np.testing.assert_allclose(sel.bic[i], one.bic, rtol=1e-5)
        np.testing.assert_allclose(sel.fit.weights[i], one.fit.weights, rtol=1e-5, atol=1e-7)

    # the weighting's update under jit + vmap over (residuals, tau)
    def weights(r, tau):
        w8 = wt.cgm_weighting(n_components="bic", max_components=kmax)
        w, state = w8.update(r, tau, w8.init(n))
        return w, state.n_components

    w, k = jax.jit(jax.vmap(weights))(batch, jnp.array([0.0, 1.0]))
    assert k.tolist() == [1, 2]
    assert np.all(np.isfinite(np.asarray(w)))
    np.testing.assert_allclose(jnp.mean(w, axis=1), 1.0, rtol=1e-5)


@pytest.mark.parametrize(
    "factory, name",
    [
        (lambda: wt.cgm_weighting(n_components="aic"), "n_components"),
        (lambda: wt.gmmpinn_weighting(n_components="BIC"), "n_components"),
        (lambda: wt.cgm_weighting(n_components="bic", max_components=0), "max_components"),
        (lambda: fit_gmm_bic(jnp.zeros(10), 0), "max_components"),
        (lambda: fit_gmm_bic(jnp.zeros((10, 2))), "`r`"),
        (lambda: fit_gmm_bic(jnp.zeros(10), tol=-1.0), "tol"),
    ],
)
def test_bad_arguments(factory, name):
    with pytest.raises(ValueError, match=name):
        factory()


@pytest.mark.slow  # CI time: heavy compile; run with -m slow
def test_train_with_bic():
    cfg = cj.TrainConfig(
        stages=(cj.stages.Adam(steps=20), cj.stages.LBFGS(steps=5)),
        cgm={"k_upd": 10, "n_components": "bic"},
    )
    res = cj.train("poisson1d", "cgmpinn", cfg, quiet=True)
    assert np.isfinite(res.metrics.rel_e2)
    assert np.all(np.asarray(res.history.refresh_status) <= GMMStatus.MAX_ITER)
