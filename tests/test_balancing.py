"""Tests of ReLoBRaLo (cgmpinn_jax.weighting._balancing) against independent numpy
implementations."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from cgmpinn_jax.weighting import _balancing as bl


class NumpyReLoBRaLo:
    """docs/reference-code.md §7, line by line, with the random draws supplied from outside."""

    def __init__(self, n_terms, alpha, temperature, rho):
        self.c, self.alpha, self.t, self.rho = n_terms, alpha, temperature, rho
        self.lambdas = np.ones(n_terms)
        self.ema = None
        self.history = []

    def update(self, losses, u, j):
        losses = np.asarray(losses, np.float64)
        self.history.append(losses.copy())
        if len(self.history) == 1:
            self.ema = losses.copy()
            return self.lambdas.copy()
        self.ema = self.alpha * self.ema + (1 - self.alpha) * losses
        if u < self.rho:
            ref = self.ema
        else:
            assert 0 <= j <= len(self.history) - 2
            ref = self.history[j]
        x = (losses / (ref + 1e-8)) / self.t
        e = np.exp(x - x.max())
        self.lambdas = self.c * e / e.sum()
        return self.lambdas.copy()


class NumpyOriginal:
    """Bischof & Kraus (2021) ReLoBRaLo with the Bernoulli draw supplied from outside."""

    def __init__(self, n_terms, alpha, temperature, rho):
        self.c, self.alpha, self.t, self.rho = n_terms, alpha, temperature, rho
        self.lambdas = np.ones(n_terms)
        self.l0 = self.prev = None

    def _bal(self, losses, ref):
        x = losses / (ref + 1e-8) / self.t
        e = np.exp(x - x.max())
        return self.c * e / e.sum()

    def update(self, losses, u):
        losses = np.asarray(losses, np.float64)
        if self.l0 is None:
            self.l0 = self.prev = losses
            return self.lambdas.copy()
        b = 1.0 if u < self.rho else 0.0
        hist = b * self.lambdas + (1 - b) * self._bal(losses, self.l0)
        self.lambdas = self.alpha * hist + (1 - self.alpha) * self._bal(losses, self.prev)
        self.prev = losses
        return self.lambdas.copy()


def _loss_sequence(steps, n_terms, seed=0):
    rng = np.random.default_rng(seed)
    # decaying losses with noise over several orders of magnitude
    base = np.exp(rng.uniform(-2, 3, n_terms))
    decay = np.exp(-np.outer(np.arange(steps), rng.uniform(0.01, 0.2, n_terms)))
    return (base * decay * np.exp(0.5 * rng.normal(size=(steps, n_terms)))).astype(np.float32)


def _scan_steps(losses, us, js, state, **kw):
    def body(s, xs):
        lam, s = bl.relobralo_step(xs[0], s, xs[1], xs[2], **kw)
        return s, lam

    return jax.lax.scan(body, state, (losses, us, js))


@pytest.mark.parametrize("rho, temperature, alpha", [(0.99, 1.0, 0.999), (0.6, 0.5, 0.9)])
def test_reference_variant_matches_numpy(rho, temperature, alpha):
    steps, c = 50, 3
    losses = _loss_sequence(steps, c)
    rng = np.random.default_rng(1)
    us = rng.uniform(size=steps).astype(np.float32)
    us[5:15:2] = 0.999  # force some look-backs even at rho = 0.99
    js = np.array(
        [rng.integers(0, max(t, 1)) for t in range(steps)], np.int32
    )  # j < t (earlier calls)
    ref = NumpyReLoBRaLo(c, alpha, temperature, rho)
    want = np.stack([ref.update(losses[t], us[t], js[t]) for t in range(steps)])
    bal = bl.relobralo(c, alpha=alpha, temperature=temperature, rho=rho, history_size=64)
    state = bal.init(jax.random.PRNGKey(0))
    kw = dict(alpha=alpha, temperature=temperature, rho=rho)
    state, got = jax.jit(lambda s: _scan_steps(losses, us, js, s, **kw))(state)
    np.testing.assert_allclose(np.asarray(got), want, rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(got).sum(axis=1), c, rtol=1e-6)
    assert int(state.count) == steps
    np.testing.assert_allclose(np.asarray(state.ema), ref.ema, rtol=1e-5)
    np.testing.assert_array_equal(np.asarray(state.history[:steps]), losses)


def test_ring_buffer_wraps():
    """history_size = 4: row t % 4 holds call t; a look-back to a retained call is exact."""
    c, h, steps = 2, 4, 12
    losses = _loss_sequence(steps, c, seed=3)
    us = np.ones(steps, np.float32)  # always look back
    js = np.array(
        [max(t - 1 - (t % 3), max(0, t - h + 1)) if t else 0 for t in range(steps)], np.int32
    )
    ref = NumpyReLoBRaLo(c, 0.999, 1.0, 0.99)
    want = np.stack([ref.update(losses[t], us[t], js[t]) for t in range(steps)])
    state = bl.relobralo(c, history_size=h).init(jax.random.PRNGKey(0))
    state, got = jax.jit(_scan_steps)(losses, us, js, state)
    np.testing.assert_allclose(np.asarray(got), want, rtol=2e-5, atol=1e-6)
    # the draws only ever point at retained, strictly earlier calls
    keys = jax.random.split(jax.random.PRNGKey(7), 500)
    draws = jax.jit(
        jax.vmap(lambda k, c, hs: bl.relobralo_draws(k, c, hs), in_axes=(0, None, None)),
        static_argnums=2,
    )
    _, _, j = draws(keys, jnp.int32(10), h)
    assert set(np.asarray(j).tolist()) == {7, 8, 9}
    _, _, j = draws(keys, jnp.int32(3), h)
    assert set(np.asarray(j).tolist()) == {0, 1, 2}


def test_update_uses_its_own_draws():
    """update == relobralo_step driven by relobralo_draws on the threaded key; sums to C."""
    c, steps = 3, 50
    losses = jnp.asarray(_loss_sequence(steps, c, seed=2))
    bal = bl.relobralo(c, rho=0.7, history_size=64)
    s0 = bal.init(jax.random.PRNGKey(42))

    def via_update(s):
        return jax.lax.scan(lambda s, L: bal.update(L, s)[::-1], s, losses)

    def via_step(s):
        def body(s, L):
            key, u, j = bl.relobralo_draws(s.key, s.count, 64)
            lam, s = bl.relobralo_step(L, s, u, j, rho=0.7)
            return s._replace(key=key), lam

        return jax.lax.scan(body, s, losses)

    s1, lam1 = jax.jit(via_update)(s0)
    s2, lam2 = jax.jit(via_step)(s0)
    np.testing.assert_array_equal(np.asarray(lam1), np.asarray(lam2))
    np.testing.assert_allclose(np.asarray(lam1).sum(axis=1), c, rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(lam1[0]), np.ones(c))
    assert not np.allclose(np.asarray(lam1[1:]), 1.0)
    assert int(s1.count) == steps

    # gradients do not flow through the lambdas
    def weighted_total(L):
        lam = bal.update(L, s1)[0]
        return jnp.sum(lam * L), lam

    g, lam = jax.jit(jax.grad(weighted_total, has_aux=True))(losses[-1])
    np.testing.assert_allclose(np.asarray(g), np.asarray(lam), rtol=1e-6)


def test_original_variant_matches_numpy():
    steps, c, alpha, rho, temperature = 30, 3, 0.9, 0.8, 0.5
    losses = _loss_sequence(steps, c, seed=4)
    us = np.random.default_rng(5).uniform(size=steps).astype(np.float32)
    ref = NumpyOriginal(c, alpha, temperature, rho)
    want = np.stack([ref.update(losses[t], us[t]) for t in range(steps)])
    state = bl.relobralo(c, alpha=alpha, rho=rho, temperature=temperature, variant="original").init(
        jax.random.PRNGKey(0)
    )
    assert state.history.shape == (1, c)
    kw = dict(alpha=alpha, temperature=temperature, rho=rho, variant="original")
    _, got = _scan_steps(losses, us, np.zeros(steps, np.int32), state, **kw)
    np.testing.assert_allclose(np.asarray(got), want, rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(got).sum(axis=1), c, rtol=1e-5)


def test_no_balancing_and_vmap_over_hyperparameters():
    bal = bl.no_balancing(2)
    lam, s = jax.jit(bal.update)(jnp.array([5.0, 0.1]), bal.init(jax.random.PRNGKey(0)))
    assert lam.tolist() == [1.0, 1.0] and int(s.count) == 1

    losses = jnp.asarray(_loss_sequence(10, 3, seed=6))

    def run(alpha, temperature, key):
        b = bl.relobralo(3, alpha=alpha, temperature=temperature, rho=0.5, history_size=16)
        s, lam = jax.lax.scan(lambda s, L: b.update(L, s)[::-1], b.init(key), losses)
        return lam[-1]

    alphas = jnp.array([0.9, 0.99, 0.999])
    temps = jnp.array([0.1, 1.0, 10.0])
    keys = jax.random.split(jax.random.PRNGKey(0), 3)
    lams = jax.jit(jax.vmap(run))(alphas, temps, keys)
    assert lams.shape == (3, 3)
    np.testing.assert_allclose(np.asarray(lams.sum(axis=1)), 3.0, rtol=1e-5)
    assert float(lams[0].max() - lams[0].min()) > float(
        lams[2].max() - lams[2].min()
    )  # low T is sharper


@pytest.mark.parametrize(
    "make, name",
    [
        (lambda: bl.relobralo(0), "n_terms"),
        (lambda: bl.no_balancing(0), "n_terms"),
        (lambda: bl.relobralo(2, alpha=1.5), "alpha"),
        (lambda: bl.relobralo(2, temperature=0.0), "temperature"),
        (lambda: bl.relobralo(2, rho=-0.1), "rho"),
        (lambda: bl.relobralo(2, history_size=1), "history_size"),
        (lambda: bl.relobralo(2, variant="bischof"), "variant"),
    ],
)
def test_bad_arguments(make, name):
    with pytest.raises(ValueError, match=name):
        make()


def test_bad_losses_shape():
    bal = bl.relobralo(3)
    with pytest.raises(ValueError, match="losses"):
        bal.update(jnp.ones(2), bal.init(jax.random.PRNGKey(0)))
