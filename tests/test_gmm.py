"""Tests of the jitted 1-D EM Gaussian mixture (cgmpinn_jax.gmm) against sklearn."""

import pathlib
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from cgmpinn_jax import gmm
from cgmpinn_jax.gmm import GMMStatus, fit_gmm

DATA = pathlib.Path(__file__).resolve().parent / "data"
N = 1500


def _score(x, weights, means, variances):
    """Mean log-likelihood in float64 numpy (independent of the code under test)."""
    x = np.asarray(x, np.float64)[:, None]
    w, m, v = (np.asarray(a, np.float64)[None, :] for a in (weights, means, variances))
    lp = np.log(w) - 0.5 * np.log(2.0 * np.pi * v) - 0.5 * (x - m) ** 2 / v
    mx = lp.max(axis=1, keepdims=True)
    return float(np.mean(mx[:, 0] + np.log(np.exp(lp - mx).sum(axis=1))))


def _sklearn(x, k=4):
    from sklearn.mixture import GaussianMixture
    from threadpoolctl import threadpool_limits  # a dependency of sklearn

    # one thread: sklearn's OpenMP k-means is very slow on shared, busy cores
    with warnings.catch_warnings(), threadpool_limits(1):
        warnings.simplefilter("ignore")
        return GaussianMixture(k, random_state=1224).fit(np.asarray(x, np.float32)[:, None])


def _datasets():
    rng = np.random.default_rng(2024)
    sets = {
        "separated3": np.concatenate(
            [rng.normal(-5.0, 0.5, 500), rng.normal(0.0, 1.0, 600), rng.normal(6.0, 0.3, 400)]
        ),
        "student_t2": rng.standard_t(2, N),
        "sign_lognormal": rng.choice([-1.0, 1.0], N) * rng.lognormal(0.0, 1.5, N),
        "outlier_1e6": np.concatenate([rng.normal(0.0, 1.0, N - 1), [1e6]]),
        "near_constant": 1.0 + 1e-7 * rng.normal(size=N),
    }
    for stage in ("early", "mid", "late"):
        sets[f"pinn_{stage}"] = np.load(DATA / f"residuals_{stage}.npy")
    return {k: np.asarray(v, np.float32) for k, v in sets.items()}


@pytest.fixture(scope="module")
def batch_fits():
    sets = _datasets()
    names = list(sets)
    stacked = jnp.asarray(np.stack([sets[k] for k in names]))
    fits = jax.vmap(lambda r: fit_gmm(r, 4))(stacked)  # one compilation for all data sets
    return sets, names, fits


def test_quality_vs_sklearn(batch_fits):
    sets, names, fits = batch_fits
    for i, name in enumerate(names):
        x = sets[name]
        ours = _score(x, fits.weights[i], fits.means[i], fits.variances[i])
        g = _sklearn(x)
        theirs = _score(x, g.weights_, g.means_.ravel(), g.covariances_.ravel())
        assert ours >= theirs - 0.05, (name, ours, theirs)
        assert int(fits.status[i]) == GMMStatus.CONVERGED, name
        # the reported float32 loglik is the mean log-likelihood of the returned parameters
        assert abs(float(fits.loglik[i]) - ours) < 1e-3 * max(1.0, abs(ours)), name


def test_fit_outputs_consistent(batch_fits):
    sets, names, fits = batch_fits
    assert fits.resp.shape == (len(names), N, 4)
    np.testing.assert_allclose(np.asarray(fits.resp.sum(-1)), 1.0, atol=1e-5)
    np.testing.assert_allclose(np.asarray(fits.weights.sum(-1)), 1.0, atol=1e-5)
    assert np.all(np.asarray(fits.variances) >= 1e-6 * (1 - 1e-5))  # reg_covar included
    assert fits.n_iter.dtype == jnp.int32 and fits.status.dtype == jnp.int32
    # responsibilities belong to the final parameters
    for i in (0, 5):
        g = gmm.responsibilities(
            jnp.asarray(sets[names[i]]), fits.weights[i], fits.means[i], fits.variances[i]
        )
        np.testing.assert_allclose(np.asarray(g), np.asarray(fits.resp[i]), atol=1e-5)


def test_separated_means_match_sklearn():
    x = _datasets()["separated3"]
    fit = fit_gmm(x, 3)
    g = _sklearn(x, 3)
    ours = np.sort(np.asarray(fit.means))
    theirs = np.sort(g.means_.ravel())
    np.testing.assert_allclose(ours, theirs, rtol=0.01, atol=0.01 * np.abs(theirs).max())
    np.testing.assert_allclose(
        np.sort(np.asarray(fit.variances)), np.sort(g.covariances_.ravel()), rtol=0.01
    )


def test_chunked_path_large_n():
    """N > 8192 streams the EM sums in chunks (with padding); must still match sklearn."""
    rng = np.random.default_rng(5)
    x = np.concatenate(
        [rng.normal(-3.0, 1.0, 6000), rng.standard_t(3, 6000) * 0.2, rng.normal(4.0, 2.0, 5000)]
    )
    x = x.astype(np.float32)
    fit = fit_gmm(x, 4)
    g = _sklearn(x)
    ours = _score(x, fit.weights, fit.means, fit.variances)
    assert ours >= _score(x, g.weights_, g.means_.ravel(), g.covariances_.ravel()) - 0.05
    assert abs(float(fit.loglik) - ours) < 1e-3


def test_quantile_init_and_float64():
    x = _datasets()["pinn_mid"][:300]
    with jax.enable_x64(True):
        fit = fit_gmm(jnp.asarray(x, jnp.float64), 3, init="quantile")
        assert fit.means.dtype == jnp.float64 and fit.resp.dtype == jnp.float64
        g = _sklearn(x, 3)
        ours = _score(x, fit.weights, fit.means, fit.variances)
        assert ours >= _score(x, g.weights_, g.means_.ravel(), g.covariances_.ravel()) - 0.05
    assert jnp.zeros(()).dtype == jnp.float32  # global state restored


def _all_finite(fit):
    return all(np.all(np.isfinite(np.asarray(a))) for a in fit)


def test_degenerate_inputs():
    base = np.linspace(-1.0, 1.0, 64)
    cases = {
        "constant": (np.full(64, 0.3), GMMStatus.DEGENERATE),
        "zeros": (np.zeros(64), GMMStatus.DEGENERATE),
        "three_values": (np.repeat([1.0, 2.0, 3.0], [20, 20, 24]), GMMStatus.DEGENERATE),
        "nan": (np.where(np.arange(64) == 7, np.nan, base), GMMStatus.NONFINITE),
        "posinf": (np.where(np.arange(64) == 0, np.inf, base), GMMStatus.NONFINITE),
        "neginf": (np.where(np.arange(64) == 63, -np.inf, base), GMMStatus.NONFINITE),
        "tiny_scale": (1e-30 * base, GMMStatus.CONVERGED),
    }
    for name, (x, want) in cases.items():  # N = 64, K = 4: one compilation shared by all cases
        fit = fit_gmm(jnp.asarray(x, jnp.float32), 4)
        assert _all_finite(fit), name
        assert int(fit.status) == want, name
        assert bool(fit.usable) == (want <= GMMStatus.MAX_ITER), name
        np.testing.assert_allclose(np.asarray(fit.resp.sum(-1)), 1.0, atol=1e-5, err_msg=name)
    # fewer samples than components
    fit = fit_gmm(jnp.array([1.0, 2.0]), 4)
    assert int(fit.status) == GMMStatus.DEGENERATE and _all_finite(fit)


def test_empty_component_no_nan():
    # two tight clusters, K = 4: some components end up (nearly) empty
    x = jnp.asarray(np.r_[np.zeros(30), np.ones(30), [0.5] * 2, [0.25] * 2], jnp.float32)
    fit = fit_gmm(x, 4)
    assert _all_finite(fit)
    assert int(fit.status) in (GMMStatus.CONVERGED, GMMStatus.MAX_ITER)


def test_max_iter_status():
    x = _datasets()["student_t2"][:64]
    fit = fit_gmm(x, 4, max_iter=1)
    assert int(fit.n_iter) == 1 and int(fit.status) == GMMStatus.MAX_ITER


def test_jit_with_traced_tol_and_reg():
    x = jnp.asarray(_datasets()["pinn_late"][:64])

    @jax.jit
    def f(r, tol, reg):
        fit = fit_gmm(r, 4, tol=tol, reg_covar=reg)
        return fit.loglik, fit.n_iter

    ll, it = f(x, 1e-3, 1e-6)
    ref = fit_gmm(x, 4)
    np.testing.assert_allclose(float(ll), float(ref.loglik), rtol=1e-6)
    assert int(it) == int(ref.n_iter)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(n_components=0), "n_components"),
        (dict(n_components=2.0), "n_components"),
        (dict(max_iter=0), "max_iter"),
        (dict(tol=-1.0), "tol"),
        (dict(reg_covar=-1e-6), "reg_covar"),
        (dict(init="random"), "init"),
    ],
)
def test_bad_arguments(kwargs, name):
    with pytest.raises(ValueError, match=name):
        fit_gmm(jnp.zeros(8), **kwargs)


def test_bad_residual_shape():
    with pytest.raises(ValueError, match="`r`"):
        fit_gmm(jnp.zeros((8, 1)))
    with pytest.raises(ValueError, match="`r`"):
        fit_gmm(jnp.zeros((0,)))
