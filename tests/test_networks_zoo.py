"""The network choices of ``cgmpinn_jax.nn.NETWORKS``: shapes, dtypes, and each network's
promised property (activations, fixed Fourier frequencies, SIREN's initial statistics, exact
periodicity, adaptive slopes)."""

from __future__ import annotations

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from cgmpinn_jax import nn

if hasattr(jax, "enable_x64"):
    enable_x64 = jax.enable_x64
else:  # older JAX
    from jax.experimental import enable_x64

TINY = {"width": 6, "depth": 2}
OPTIONS = {"fourier": {"n_features": 4}, "periodic": {"periods": ((0, 2.0),), "harmonics": 2}}


def _build(name: str, key=0, in_dim: int = 2, out_dim: int = 1, **kw):
    opts = {**TINY, **OPTIONS.get(name, {}), **kw}
    return nn.NETWORKS[name](jax.random.key(key), in_dim, out_dim, **opts)


def _params(net) -> list[jax.Array]:
    return jax.tree_util.tree_leaves(eqx.filter(net, eqx.is_inexact_array))


def test_networks_table():
    assert set(nn.NETWORKS) == {"mlp_activation", "fourier", "siren", "periodic", "laaf", "gaaf"}
    assert _build("laaf").kind == "layer" and _build("gaaf").kind == "global"
    assert isinstance(_build("mlp_activation"), nn.ActivationMLP)
    assert isinstance(_build("fourier"), nn.FourierMLP)
    assert isinstance(_build("siren"), nn.Siren)
    assert isinstance(_build("periodic"), nn.PeriodicMLP)


@pytest.mark.parametrize("name", sorted(nn.NETWORKS))
def test_shapes_and_vmap(name):
    z = jnp.array([0.3, -0.2])
    batch = jax.random.uniform(jax.random.key(5), (7, 2), minval=-1.0, maxval=1.0)
    scalar, vector = _build(name), _build(name, out_dim=3)
    assert scalar(z).shape == ()
    assert vector(z).shape == (3,)
    assert jax.vmap(scalar)(batch).shape == (7,)
    assert jax.vmap(vector)(batch).shape == (7, 3)
    np.testing.assert_allclose(jax.vmap(scalar)(batch)[2], scalar(batch[2]), rtol=1e-6, atol=1e-7)
    with pytest.raises(ValueError, match="one point"):
        scalar(batch)


@pytest.mark.parametrize("name", sorted(nn.NETWORKS))
@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64])
def test_dtype_follows_the_argument(name, dtype):
    with enable_x64(True):
        net = _build(name, dtype=dtype)
        assert all(p.dtype == dtype for p in _params(net))
        assert net(jnp.array([0.3, -0.2], dtype)).dtype == dtype
        assert all(p.dtype == jnp.float64 for p in _params(_build(name)))  # the default float
    with enable_x64(False):
        assert all(p.dtype == jnp.float32 for p in _params(_build(name)))


@pytest.mark.parametrize("name", sorted(nn.NETWORKS))
def test_bad_sizes_and_dtype(name):
    with pytest.raises(ValueError, match="width"):
        _build(name, width=0)
    with pytest.raises(ValueError, match="float dtype"):
        _build(name, dtype=jnp.int32)


@eqx.filter_jit
def _adam_step(net, z, target):
    """The gradient of the mean squared misfit and the network after one ``optax.adam`` step."""

    def loss(model):
        return jnp.mean((jax.vmap(model)(z) - target) ** 2)

    grads = eqx.filter_grad(loss)(net)
    opt = optax.adam(1e-2)
    params = eqx.filter(net, eqx.is_inexact_array)
    updates, _ = opt.update(grads, opt.init(params), params)
    return grads, eqx.apply_updates(net, updates)


# --- activation_mlp ---------------------------------------------------------------------------


def test_activations_are_the_named_functions():
    z = jnp.array([0.4, -0.7])
    phi = {
        "tanh": jnp.tanh,
        "sin": jnp.sin,
        "gelu": lambda x: x * 0.5 * (1 + jax.scipy.special.erf(x / math.sqrt(2))),
        "swish": lambda x: x / (1 + jnp.exp(-x)),
    }
    values = {}
    for name, f in phi.items():
        net = nn.activation_mlp(jax.random.key(1), 2, width=6, depth=2, activation=name)
        h = z
        for layer in net.layers[:-1]:
            h = f(layer.weight @ h + layer.bias)
        expected = (net.layers[-1].weight @ h + net.layers[-1].bias)[0]
        np.testing.assert_allclose(net(z), expected, rtol=1e-5, atol=1e-6)
        values[name] = float(net(z))
    names = sorted(values)  # the same weights, four different functions
    assert all(
        abs(values[a] - values[b]) > 1e-4 for i, a in enumerate(names) for b in names[i + 1 :]
    )


def test_unknown_activation_lists_the_choices():
    with pytest.raises(ValueError, match="gelu.*sin.*swish.*tanh.*relu"):
        nn.activation_mlp(jax.random.key(0), 2, activation="relu")
    for name in ("fourier", "periodic", "laaf"):
        with pytest.raises(ValueError, match="activation must be one of"):
            _build(name, activation="relu")


def test_xavier_normal_weights_zero_biases():
    net = nn.activation_mlp(jax.random.key(2), 2, width=200, depth=2)
    for layer in net.layers:
        fan_out, fan_in = layer.weight.shape
        expected = math.sqrt(2 / (fan_in + fan_out))
        if layer.weight.size > 1000:
            assert abs(float(jnp.std(layer.weight)) / expected - 1) < 0.05
        assert np.all(np.asarray(layer.bias) == 0)


# --- fourier_mlp ------------------------------------------------------------------------------


def test_fourier_frequencies_shape_and_spread():
    net = nn.fourier_mlp(jax.random.key(3), 2, width=4, depth=1, n_features=4000, sigma=7.0)
    assert net.frequencies.shape == (4000, 2)
    assert net.layers[0].weight.shape == (4, 8000)
    assert abs(float(jnp.std(net.frequencies)) / 7.0 - 1) < 0.03
    assert abs(float(jnp.mean(net.frequencies))) < 0.2


def test_fourier_features_formula():
    net = nn.fourier_mlp(jax.random.key(4), 2, width=6, depth=2, n_features=5, sigma=2.0)
    z = jnp.array([0.3, -0.6])
    phase = 2 * jnp.pi * net.frequencies @ z
    h = jnp.concatenate([jnp.cos(phase), jnp.sin(phase)])
    for layer in net.layers[:-1]:
        h = jnp.tanh(layer.weight @ h + layer.bias)
    np.testing.assert_allclose(
        net(z), (net.layers[-1].weight @ h + net.layers[-1].bias)[0], rtol=1e-5, atol=1e-6
    )


def test_fourier_frequencies_are_not_trained():
    net = nn.fourier_mlp(jax.random.key(5), 2, width=6, depth=2, n_features=8, sigma=3.0)
    z = jax.random.uniform(jax.random.key(6), (16, 2), minval=-1.0, maxval=1.0)
    grads, stepped = _adam_step(net, z, jnp.sin(3 * z[:, 0]))
    assert np.all(np.asarray(grads.frequencies) == 0)
    assert float(jnp.abs(grads.layers[0].weight).max()) > 0
    assert np.array_equal(np.asarray(stepped.frequencies), np.asarray(net.frequencies))
    assert not np.array_equal(
        np.asarray(stepped.layers[0].weight), np.asarray(net.layers[0].weight)
    )


# --- siren ------------------------------------------------------------------------------------


def test_siren_weight_bounds():
    omega0, width = 30.0, 64
    net = nn.siren(jax.random.key(7), 3, width=width, depth=3, omega0=omega0)
    first = net.layers[0]
    assert (
        float(jnp.abs(first.weight).max()) <= 1 / 3 and float(jnp.abs(first.weight).max()) > 0.9 / 3
    )
    for layer in net.layers[1:]:  # hidden layers and the linear output layer
        bound = math.sqrt(6 / width) / omega0
        w = np.abs(np.asarray(layer.weight))
        assert w.max() <= bound and w.max() > 0.9 * bound
        assert np.abs(np.asarray(layer.bias)).max() <= bound


def test_siren_initial_statistics():
    """Sitzmann et al.: hidden pre-activations close to N(0, 1), activations close to the
    arcsine law on [-1, 1], for inputs in [-1, 1]^d and a wide network."""
    net = nn.siren(jax.random.key(8), 2, width=256, depth=4)
    z = jax.random.uniform(jax.random.key(9), (2000, 2), minval=-1.0, maxval=1.0)
    h, pre, act = z, [], []
    for layer in net.layers[:-1]:
        p = net.omega0 * (h @ layer.weight.T + layer.bias)
        h = jnp.sin(p)
        pre.append(np.asarray(p))
        act.append(np.asarray(h))
    out = h @ net.layers[-1].weight.T + net.layers[-1].bias
    np.testing.assert_allclose(jax.vmap(net)(z), out[:, 0], rtol=1e-4, atol=1e-5)
    # the first layer spans many periods over [-1, 1]^2: its activations follow the arcsine law
    assert _arcsine_distance(act[0]) < 0.03 and abs(act[0].var() - 0.5) < 0.03
    # so the next pre-activations are N(0, 1): 256 arcsine inputs (variance 1/2) with weights
    # of variance 2/256 (the paper's theorem)
    assert abs(pre[1].std() - 1) < 0.05
    for p, a in zip(pre[1:], act[1:]):  # the hidden layers after the first
        # deeper, the variance v drifts to the fixed point of v -> 1 - exp(-2 v): 0.80, std 0.89
        assert abs(p.std() - 1) < 0.15 and abs(p.mean()) < 0.05
        # sin of N(0, s^2) has mean 0 and variance (1 - exp(-2 s^2)) / 2: 0.43 for s = 1, 0.40
        # for s = 0.89, against the arcsine law's 1/2, and is close to the arcsine law
        # (Kolmogorov distance 0.043 for s = 1, 0.065 for s = 0.89)
        assert np.all(np.abs(a) <= 1) and abs(a.mean()) < 0.05
        assert abs(a.var() - (1 - np.exp(-2 * p.var())) / 2) < 0.02 and abs(a.var() - 0.5) < 0.12
        assert _arcsine_distance(a) < 0.08


def _arcsine_distance(a: np.ndarray) -> float:
    """The Kolmogorov distance between the sample's distribution and the arcsine law on [-1, 1]."""
    x = np.sort(a.ravel())
    cdf = 0.5 + np.arcsin(np.clip(x, -1, 1)) / np.pi
    return float(np.abs(cdf - np.arange(1, x.size + 1) / x.size).max())


def test_siren_bad_omega0():
    with pytest.raises(ValueError, match="omega0"):
        nn.siren(jax.random.key(0), 2, omega0=0.0)


# --- periodic_mlp -----------------------------------------------------------------------------


def test_periodic_exactly_in_listed_coordinates():
    with enable_x64(True):
        net = nn.periodic_mlp(
            jax.random.key(10),
            3,
            width=8,
            depth=3,
            dtype=jnp.float64,
            periods=((0, 2.0), (2, 0.7)),
            harmonics=3,
        )
        assert net.layers[0].weight.shape == (8, 6 + 1 + 6)
        z = jax.random.uniform(jax.random.key(11), (32, 3), jnp.float64, minval=-3.0, maxval=3.0)
        u, du, d2u = (jax.jit(jax.vmap(f)) for f in (net, jax.grad(net), jax.hessian(net)))
        for i, period in ((0, 2.0), (2, 0.7)):
            shifted = z.at[:, i].add(period)
            assert float(jnp.abs(u(shifted) - u(z)).max()) < 1e-12
            assert float(jnp.abs(du(shifted) - du(z)).max()) < 1e-12
            assert float(jnp.abs(d2u(shifted) - d2u(z)).max()) < 1e-11
        for period in (2.0, 0.7):  # the coordinate in between is not periodic
            assert float(jnp.abs(u(z.at[:, 1].add(period)) - u(z)).max()) > 1e-3
        assert float(jnp.abs(u(z.at[:, 0].add(1.0)) - u(z)).max()) > 1e-3  # nor of another period


@pytest.mark.parametrize(
    "periods",
    [
        ((2, 1.0),),
        ((-1, 1.0),),
        ((0, 0.0),),
        ((0, -2.0),),
        ((0, float("inf")),),
        ((0, 1.0), (0, 2.0)),
        (),
        (0, 2.0),
        ((0.5, 2.0),),
    ],
)
def test_periodic_bad_periods(periods):
    with pytest.raises(ValueError, match="periods"):
        nn.periodic_mlp(jax.random.key(0), 2, periods=periods)


def test_periodic_bad_harmonics():
    with pytest.raises(ValueError, match="harmonics"):
        nn.periodic_mlp(jax.random.key(0), 2, harmonics=0)


# --- adaptive_mlp -----------------------------------------------------------------------------


@pytest.mark.parametrize("kind,count", [("layer", 3), ("global", 1)])
@pytest.mark.parametrize("scale", [10.0, 7.0])
def test_adaptive_starts_as_the_plain_network(kind, count, scale):
    with enable_x64(True):
        net = nn.adaptive_mlp(
            jax.random.key(12), 2, width=8, depth=3, dtype=jnp.float64, kind=kind, scale=scale
        )
        assert net.slopes.shape == (count,)
        assert np.all(np.asarray(net.slopes) == 1 / scale)
        plain = nn.ActivationMLP(net.layers, 2, "tanh")  # the same weights, no slopes
        z = jax.random.uniform(jax.random.key(13), (16, 2), jnp.float64, minval=-1.0, maxval=1.0)
        np.testing.assert_allclose(jax.vmap(net)(z), jax.vmap(plain)(z), rtol=1e-13, atol=1e-14)
        same_key = nn.activation_mlp(jax.random.key(12), 2, width=8, depth=3, dtype=jnp.float64)
        assert all(np.array_equal(a, b) for a, b in zip(_params(same_key), _params(plain)))


def test_adaptive_formula_and_sharing():
    net = nn.adaptive_mlp(jax.random.key(14), 2, width=5, depth=3, kind="layer", scale=10.0)
    a = jnp.array([0.05, 0.2, -0.1])
    net = eqx.tree_at(lambda m: m.slopes, net, a)
    z = jnp.array([0.3, 0.8])
    h = z
    for k, layer in enumerate(net.layers[:-1]):
        h = jnp.tanh(10.0 * a[k] * (layer.weight @ h + layer.bias))
    np.testing.assert_allclose(
        net(z), (net.layers[-1].weight @ h + net.layers[-1].bias)[0], rtol=1e-5, atol=1e-6
    )
    glob = nn.adaptive_mlp(jax.random.key(14), 2, width=5, depth=3, kind="global", scale=10.0)
    glob = eqx.tree_at(lambda m: m.slopes, glob, jnp.array([0.07]))
    layer = eqx.tree_at(lambda m: m.slopes, net, jnp.full((3,), 0.07))
    np.testing.assert_allclose(glob(z), layer(z), rtol=1e-6)


@pytest.mark.parametrize("kind", ["layer", "global"])
def test_adaptive_slopes_are_trained(kind):
    net = nn.adaptive_mlp(jax.random.key(15), 1, width=8, depth=3, kind=kind)
    z = jnp.linspace(-1.0, 1.0, 16)[:, None]
    grads, stepped = _adam_step(net, z, jnp.sin(jnp.pi * z[:, 0]))
    assert np.all(np.asarray(grads.slopes) != 0)
    assert np.all(np.asarray(stepped.slopes) != np.asarray(net.slopes))


def test_adaptive_bad_options():
    with pytest.raises(ValueError, match="kind"):
        nn.adaptive_mlp(jax.random.key(0), 2, kind="neuron")
    with pytest.raises(ValueError, match="scale"):
        nn.adaptive_mlp(jax.random.key(0), 2, scale=0.0)
