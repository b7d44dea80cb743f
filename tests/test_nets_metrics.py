import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from cgmpinn_jax import metrics
from cgmpinn_jax.nn import _nets as nets
from cgmpinn_jax.derivatives import gradient, partial, partial_reverse


def test_torch_default_init_ranges():
    net = nets.mlp(jax.random.key(0), 2, width=50, depth=4)
    for layer in net.layers:
        fan_in = layer.weight.shape[1]
        bound = 1 / math.sqrt(fan_in)
        w, b = np.asarray(layer.weight), np.asarray(layer.bias)
        assert np.all(np.abs(w) <= bound) and np.all(np.abs(b) <= bound)
        if w.size >= 100:  # the empirical range fills the interval
            assert w.max() > 0.9 * bound and w.min() < -0.9 * bound
            assert abs(w.std() - bound / math.sqrt(3)) < 0.1 * bound


def test_xavier_normal_init():
    net = nets.mlp(jax.random.key(1), 2, width=80, depth=4, init="xavier")
    for layer in net.layers[1:-1]:
        fan_out, fan_in = layer.weight.shape
        expected = math.sqrt(2 / (fan_in + fan_out))
        assert abs(float(jnp.std(layer.weight)) - expected) / expected < 0.05
        assert np.all(np.asarray(layer.bias) == 0)


@pytest.mark.parametrize(
    "in_dim,mlp_count,lnn_count,star_count", [(1, 7801, 8101, 8105), (2, 7851, 8151, 8255)]
)
def test_parameter_counts(in_dim, mlp_count, lnn_count, star_count):
    key = jax.random.key(0)
    assert nets.count_params(nets.mlp(key, in_dim)) == mlp_count
    # LNN-PINN: the MLP's linear layers plus 6H gate parameters (docs/reference-code.md §10.4)
    assert nets.count_params(nets.lnn_pinn(key, in_dim)) == lnn_count == mlp_count + 6 * 50
    # STAR-PINN: 3 blocks of (d->H, H->H, H->1) plus 2 gate scalars (§10.5)
    assert (
        nets.count_params(nets.star_pinn(key, in_dim))
        == star_count
        == 3 * ((in_dim + 1) * 50 + 51 * 50 + 51) + 2
    )


def test_star_pinn_combination():
    net = nets.star_pinn(jax.random.key(2), 1)
    z = jnp.array([0.4])

    def block(b, z):
        h = z
        for layer in b[:-1]:
            h = jnp.tanh(layer(h))
        return b[-1](h)[0]

    s = jax.nn.sigmoid(0.5)
    expected = (
        block(net.blocks[2], z) + s * block(net.blocks[1], z) + s * s * block(net.blocks[0], z)
    )
    assert float(net(z)) == pytest.approx(float(expected), rel=1e-6)


def test_input_map():
    key = jax.random.key(0)
    plain = nets.mlp(key, 2)
    mapped = nets.mlp(key, 2, input_map=((0.2, 1.0), (0.0, -1.0)))
    z = jnp.array([2.5, 1.5])
    assert float(mapped(z)) == pytest.approx(float(plain(jnp.array([0.5, 0.5]))), rel=1e-6)


def test_network_rejects_batches():
    with pytest.raises(ValueError, match=r"shape \(2,\)"):
        nets.mlp(jax.random.key(0), 2)(jnp.ones((5, 2)))


def test_bad_sizes():
    with pytest.raises(ValueError, match="width"):
        nets.mlp(jax.random.key(0), 1, width=0)
    with pytest.raises(ValueError, match="init"):
        nets.mlp(jax.random.key(0), 1, init="kaiming")


def test_derivatives_forward_equals_reverse(x64):
    net = nets.mlp(jax.random.key(3), 2, dtype=jnp.float64)
    z = jnp.array([0.3, 0.7])
    for axes in [(0,), (1,), (0, 0), (1, 1), (0, 1)]:
        assert float(partial(net, *axes)(z)) == pytest.approx(
            float(partial_reverse(net, *axes)(z)), rel=1e-12
        )
    g = gradient(net)(z)
    np.testing.assert_allclose(g, jax.grad(net)(z), rtol=1e-12)


def test_derivatives_closed_form(x64):
    def u(z):
        return jnp.sin(2 * z[0]) * jnp.exp(z[1])

    z = jnp.array([0.4, -0.3])
    assert float(partial(u, 0, 0)(z)) == pytest.approx(
        -4 * math.sin(0.8) * math.exp(-0.3), rel=1e-13
    )
    assert float(partial(u, 0, 1)(z)) == pytest.approx(
        2 * math.cos(0.8) * math.exp(-0.3), rel=1e-13
    )


def test_metrics_hand_made():
    exact = np.array([3.0, -4.0, 0.0, 0.0])
    pred = np.array([3.0, -3.0, 1.0, -2.0])
    m = metrics.error_metrics(pred, exact)
    # err = (0, 1, 1, -2): RMS = sqrt(6/4), ||u||_rms = sqrt(25/4)
    assert m.e2 == pytest.approx(math.sqrt(1.5))
    assert m.rel_e2 == pytest.approx(math.sqrt(6 / 25))
    assert m.e_inf == pytest.approx(2.0)
    assert m.l2 == pytest.approx(math.sqrt(6))
    assert metrics.error_metrics(np.ones(3), np.zeros(3)).rel_e2 == float("inf")
    with pytest.raises(ValueError, match="same number"):
        metrics.error_metrics(np.ones(3), np.ones(4))


def test_evaluate_exact_is_zero():
    from cgmpinn_jax.problems import get_problem

    p = get_problem("heat")
    m = metrics.evaluate(p, p.exact)
    assert m.e2 == 0 and m.e_inf == 0
