r"""Network choices, part 2: random Fourier features, SIREN and the exactly periodic MLP, and
the table [`NETWORKS`][cgmpinn_jax.nn.NETWORKS] of every network choice by name.

Every builder is called as ``builder(key, in_dim, out_dim=1, *, width=50, depth=4,
dtype=None, **options)`` and returns an equinox module that maps one point ``z`` of shape
``(d,)`` to a scalar (to an ``(F,)`` vector for ``out_dim = F > 1``); use ``jax.vmap`` for a
batch. These networks have no Taylor-mode fast path: derivatives of them are taken by
automatic differentiation.

Examples:
    >>> import jax
    >>> net = NETWORKS["siren"](jax.random.key(0), 2, width=8, depth=2)
    >>> net(jax.numpy.zeros(2)).shape
    ()
"""

from __future__ import annotations

import functools
import math
import operator

import equinox as eqx
import jax
import jax.numpy as jnp

from ._nets import Linear, _check_input, _check_sizes
from ._zoo_core import (
    _activation,
    _dense,
    _float_dtype,
    _positive,
    _xavier_layers,
    activation_mlp,
    adaptive_mlp,
)

__all__ = ["FourierMLP", "Siren", "PeriodicMLP", "fourier_mlp", "siren", "periodic_mlp", "NETWORKS"]

Periods = tuple[tuple[int, float], ...]


def _positive_int(name: str, value: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")


class FourierMLP(eqx.Module):
    r"""A multilayer perceptron on random Fourier features (an equinox module); build one with
    [`fourier_mlp`][cgmpinn_jax.nn.fourier_mlp].

    The point is mapped to $\gamma(z) = [\cos(2\pi B z), \sin(2\pi B z)]$ (``2 m`` features
    for ``m`` frequencies), then through an MLP whose output layer is linear.  One point
    ``(d,)`` to a scalar (``(F,)`` for ``F`` outputs).

    Attributes:
        frequencies: the ``(m, d)`` float array $B$.  It is a fixed array, not a parameter:
            the call stops its gradient, so its gradient is zero and an optimizer's update of it
            is zero too (an optimizer with weight decay would still shrink it: leave it out of
            such an optimizer, e.g. with ``optax.masked``).  It is an array leaf of the module,
            so [`count_params`][cgmpinn_jax.nn.count_params] counts it.
        layers: the [`Linear`][cgmpinn_jax.nn.Linear] layers of the MLP, ``Linear(2 m, H)``
            first.
        in_dim: the number of input coordinates ``d``.
        activation: the MLP's activation: ``"tanh"``, ``"sin"``, ``"gelu"`` or ``"swish"``.
    """

    frequencies: jax.Array
    layers: tuple[Linear, ...]
    in_dim: int = eqx.field(static=True)
    activation: str = eqx.field(static=True, default="tanh")

    def __call__(self, z: jax.Array) -> jax.Array:
        _check_input(z, self.in_dim)
        b = jax.lax.stop_gradient(self.frequencies)
        phase = (2.0 * math.pi) * jnp.dot(b, z, precision=jax.lax.Precision.HIGHEST)
        return _dense(
            self.layers,
            _activation(self.activation),
            jnp.concatenate([jnp.cos(phase), jnp.sin(phase)]),
        )


def fourier_mlp(
    key: jax.Array,
    in_dim: int,
    out_dim: int = 1,
    *,
    width: int = 50,
    depth: int = 4,
    dtype=None,
    sigma: float = 1.0,
    n_features: int = 64,
    activation: str = "tanh",
) -> FourierMLP:
    r"""A new [`FourierMLP`][cgmpinn_jax.nn.FourierMLP]: random Fourier features (Tancik et
    al., "Fourier features let networks learn high frequency functions in low dimensional
    domains", NeurIPS 2020), as Wang, Wang and Perdikaris use them in PINNs ("On the
    eigenvector bias of Fourier feature networks", Comput. Methods Appl. Mech. Engrg. 384,
    113938, 2021).

    $\gamma(z) = [\cos(2\pi B z), \sin(2\pi B z)]$ with the entries of $B$ drawn once from
    $N(0, \sigma^2)$ and then kept fixed (not trained); the MLP after it has Xavier-normal
    weights and zero biases.  A larger $\sigma$ lets the network represent higher frequencies
    from the start.

    Args:
        key: PRNG key of $B$ and of the initial parameters.
        in_dim: the number of input coordinates ``d``.
        out_dim: outputs per point (default 1).
        width: hidden units per layer (default 50).
        depth: the number of hidden layers of the MLP (default 4).
        dtype: the parameters' float dtype (default: JAX's default float).
        sigma: the standard deviation $\sigma$ of the entries of $B$ (default 1).
        n_features: the number of frequencies ``m``, rows of $B$ (default 64; ``2 m``
            features).
        activation: the MLP's activation: ``"tanh"`` (default), ``"sin"``, ``"gelu"`` or
            ``"swish"``.

    Returns:
        The [`FourierMLP`][cgmpinn_jax.nn.FourierMLP].

    Raises:
        ValueError: a size that is not a positive int, a ``sigma`` that is not positive, an
            unknown activation or a dtype that is not a float dtype.

    Examples:
        >>> import jax
        >>> net = fourier_mlp(jax.random.key(0), 2, width=8, depth=2, n_features=16, sigma=5.0)
        >>> net.frequencies.shape, net.layers[0].weight.shape
        ((16, 2), (8, 32))
    """
    _check_sizes(in_dim, width, depth, out_dim)
    _positive_int("n_features", n_features)
    sigma = _positive("sigma", sigma)
    _activation(activation)
    dt = _float_dtype(dtype)
    kb, kn = jax.random.split(key)
    b = sigma * jax.random.normal(kb, (n_features, in_dim), dt)
    sizes = [2 * n_features] + [width] * depth + [out_dim]
    return FourierMLP(b, _xavier_layers(kn, sizes, dt), in_dim, activation)


class Siren(eqx.Module):
    r"""A sinusoidal representation network, SIREN (an equinox module); build one with
    [`siren`][cgmpinn_jax.nn.siren].

    Every hidden layer computes $h \mapsto \sin(\omega_0 (W h + b))$, the first one on the
    point itself; the output layer is linear, $W h + b$.  One point ``(d,)`` to a scalar
    (``(F,)`` for ``F`` outputs).

    Attributes:
        layers: the [`Linear`][cgmpinn_jax.nn.Linear] layers, input layer first.
        in_dim: the number of input coordinates ``d``.
        omega0: the frequency factor $\omega_0$ of the hidden layers.
    """

    layers: tuple[Linear, ...]
    in_dim: int = eqx.field(static=True)
    omega0: float = eqx.field(static=True, default=30.0)

    def __call__(self, z: jax.Array) -> jax.Array:
        _check_input(z, self.in_dim)
        return _dense(self.layers, lambda x: jnp.sin(self.omega0 * x), z)


def _uniform_linear(key: jax.Array, fan_in: int, fan_out: int, bound: float, dtype) -> Linear:
    kw, kb = jax.random.split(key)
    return Linear(
        jax.random.uniform(kw, (fan_out, fan_in), dtype, -bound, bound),
        jax.random.uniform(kb, (fan_out,), dtype, -bound, bound),
    )


def siren(
    key: jax.Array,
    in_dim: int,
    out_dim: int = 1,
    *,
    width: int = 50,
    depth: int = 4,
    dtype=None,
    omega0: float = 30.0,
) -> Siren:
    r"""A new [`Siren`][cgmpinn_jax.nn.Siren]: the sinusoidal representation network of
    Sitzmann, Martel, Bergman, Lindell and Wetzstein ("Implicit neural representations with
    periodic activation functions", NeurIPS 2020), with the paper's initialisation.

    Every hidden layer is $\sin(\omega_0 (W h + b))$ and the output layer is linear, as in the
    paper and its reference code (the hidden layers' factor $\omega_0$ is the paper's: it
    keeps $W$ small and so scales up its gradients).  With $n$ the layer's fan-in:

    * first layer: $W \sim U(-1/n, 1/n)$ (the reference code's), so that $\sin(\omega_0 W z)$
      spans several periods over $z \in [-1, 1]^d$ and its outputs follow the arcsine
      distribution on $[-1, 1]$;
    * the other hidden layers and the output layer:
      $W \sim U(-\sqrt{6/n}/\omega_0, \sqrt{6/n}/\omega_0)$, so that the effective weights
      $\omega_0 W$ are $U(-\sqrt{6/n}, \sqrt{6/n})$ and, for inputs in $[-1, 1]^d$, every
      hidden pre-activation $\omega_0 (W h + b)$ after the first is close to $N(0, 1)$ in a
      wide network; its sine is then close to the arcsine distribution, as the paper states
      (exactly: mean 0 and variance $(1 - e^{-2})/2 \approx 0.43$, against the arcsine's 1/2,
      so that deeper the pre-activations' variance $v$ drifts to the fixed point of
      $v \mapsto 1 - e^{-2v}$, 0.80, a standard deviation of 0.89);
    * biases: the paper's analysis leaves them out (its reference code keeps PyTorch's
      default, which would add a variance $\omega_0^2 / (3 n)$, about 1.2 at $n = 256$, to
      the pre-activations); here each layer's biases are drawn from the same uniform
      distribution as its weights, which adds only $2/n$.

    The scheme assumes coordinates of order one: map a domain onto $[-1, 1]^d$ before, or
    lower $\omega_0$ for a larger one.

    Args:
        key: PRNG key of the initial parameters.
        in_dim: the number of input coordinates ``d``.
        out_dim: outputs per point (default 1).
        width: hidden units per layer (default 50).
        depth: the number of hidden (sine) layers, the first included (default 4).
        dtype: the parameters' float dtype (default: JAX's default float).
        omega0: the frequency factor $\omega_0$ (default 30, the paper's).

    Returns:
        The [`Siren`][cgmpinn_jax.nn.Siren].

    Raises:
        ValueError: a size that is not a positive int, an ``omega0`` that is not positive or a
            dtype that is not a float dtype.

    Examples:
        >>> import jax
        >>> net = siren(jax.random.key(0), 2, width=8, depth=2)
        >>> bool(abs(net.layers[0].weight).max() <= 1 / 2)
        True
    """
    _check_sizes(in_dim, width, depth, out_dim)
    omega0 = _positive("omega0", omega0)
    dt = _float_dtype(dtype)
    sizes = [in_dim] + [width] * depth + [out_dim]
    keys = jax.random.split(key, len(sizes) - 1)
    bounds = [1.0 / in_dim] + [math.sqrt(6.0 / n) / omega0 for n in sizes[1:-1]]
    layers = tuple(
        _uniform_linear(k, a, b, bound, dt)
        for k, a, b, bound in zip(keys, sizes[:-1], sizes[1:], bounds)
    )
    return Siren(layers, in_dim, omega0)


def _check_periods(periods, in_dim: int) -> Periods:
    """``periods`` as a tuple of ``(int index, float period)``, or a ValueError."""
    try:
        pairs = tuple((operator.index(i), float(p)) for i, p in periods)
    except (TypeError, ValueError):
        raise ValueError(
            f"periods must be a tuple of (coordinate index, period) pairs, got {periods!r}"
        ) from None
    if not pairs:
        raise ValueError("periods must name at least one periodic coordinate")
    index = [i for i, _ in pairs]
    bad = [i for i in index if not 0 <= i < in_dim]
    if bad:
        raise ValueError(f"periods: coordinate index {bad[0]} is out of range for in_dim={in_dim}")
    if len(set(index)) != len(index):
        raise ValueError(f"periods: a coordinate is listed twice in {pairs}")
    for i, p in pairs:
        if not (math.isfinite(p) and p > 0):
            raise ValueError(
                f"periods: the period of coordinate {i} must be positive and finite, got {p!r}"
            )
    return pairs


def _periodic_features(z: jax.Array, periods: Periods, harmonics: int) -> jax.Array:
    """Coordinate ``i`` with period ``P`` -> ``[cos(2 pi k z_i / P), sin(2 pi k z_i / P)]``,
    ``k = 1..harmonics``, in place; the other coordinates as they are."""
    table = dict(periods)
    k = jnp.arange(1, harmonics + 1, dtype=z.dtype)
    parts = []
    for i in range(z.shape[0]):
        if i in table:
            angle = (2.0 * math.pi / table[i]) * z[i] * k
            parts += [jnp.cos(angle), jnp.sin(angle)]
        else:
            parts.append(z[i : i + 1])
    return jnp.concatenate(parts)


class PeriodicMLP(eqx.Module):
    r"""A multilayer perceptron on an exactly periodic embedding of the point (an equinox
    module); build one with [`periodic_mlp`][cgmpinn_jax.nn.periodic_mlp].

    Each periodic coordinate $z_i$ of period $P$ is replaced, in place, by
    $[\cos(2\pi k z_i / P)]_{k=1..K}$ then $[\sin(2\pi k z_i / P)]_{k=1..K}$; the other
    coordinates pass through.  The network is then periodic in $z_i$ with period $P$ for any
    weights, and so are all its derivatives.  One point ``(d,)`` to a scalar (``(F,)`` for
    ``F`` outputs).

    Attributes:
        layers: the [`Linear`][cgmpinn_jax.nn.Linear] layers of the MLP, input layer first.
        in_dim: the number of input coordinates ``d``.
        periods: ``((i, P), ...)``: each periodic coordinate's index and period.
        harmonics: the number of harmonics $K$ per periodic coordinate.
        activation: the MLP's activation: ``"tanh"``, ``"sin"``, ``"gelu"`` or ``"swish"``.
    """

    layers: tuple[Linear, ...]
    in_dim: int = eqx.field(static=True)
    periods: Periods = eqx.field(static=True, default=((0, 2.0),))
    harmonics: int = eqx.field(static=True, default=1)
    activation: str = eqx.field(static=True, default="tanh")

    def __call__(self, z: jax.Array) -> jax.Array:
        _check_input(z, self.in_dim)
        h = _periodic_features(z, self.periods, self.harmonics)
        return _dense(self.layers, _activation(self.activation), h)


def periodic_mlp(
    key: jax.Array,
    in_dim: int,
    out_dim: int = 1,
    *,
    width: int = 50,
    depth: int = 4,
    dtype=None,
    periods: Periods = ((0, 2.0),),
    harmonics: int = 1,
    activation: str = "tanh",
) -> PeriodicMLP:
    r"""A new [`PeriodicMLP`][cgmpinn_jax.nn.PeriodicMLP]: periodic boundary conditions
    imposed exactly by the network, as Dong and Ni propose ("A method for representing
    periodic functions and enforcing exactly periodic boundary conditions with deep neural
    networks", J. Comput. Phys. 435, 110242, 2021).

    Each listed coordinate $z_i$ of period $P$ is replaced by
    $[\cos(2\pi k z_i / P), \sin(2\pi k z_i / P)]$ for $k = 1, \dots, K$; the other
    coordinates (time, say) pass through.  The MLP after the embedding has Xavier-normal
    weights and zero biases.  For a domain $[a, b]$ in $z_i$ take $P = b - a$: the network and
    all its derivatives then agree at $z_i = a$ and $z_i = b$.

    Args:
        key: PRNG key of the initial parameters.
        in_dim: the number of input coordinates ``d``.
        out_dim: outputs per point (default 1).
        width: hidden units per layer (default 50).
        depth: the number of hidden layers (default 4).
        dtype: the parameters' float dtype (default: JAX's default float).
        periods: a tuple of ``(coordinate index, period)`` pairs (default ``((0, 2.0),)``:
            coordinate 0 with period 2, e.g. $x \in [-1, 1]$).
        harmonics: the number of harmonics $K$ (default 1).
        activation: the MLP's activation: ``"tanh"`` (default), ``"sin"``, ``"gelu"`` or
            ``"swish"``.

    Returns:
        The [`PeriodicMLP`][cgmpinn_jax.nn.PeriodicMLP].

    Raises:
        ValueError: a size that is not a positive int; ``periods`` that are not pairs, empty,
            with an index outside ``0..d-1`` or listed twice, or with a period that is not
            positive; an unknown activation or a dtype that is not a float dtype.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> net = periodic_mlp(
        ...     jax.random.key(0), 2, width=8, depth=2, periods=((0, 2.0),), harmonics=3
        ... )
        >>> net.layers[0].weight.shape   # 6 features of x, and t
        (8, 7)
        >>> bool(jnp.allclose(net(jnp.array([-1.0, 0.5])), net(jnp.array([1.0, 0.5])), atol=1e-6))
        True
    """
    _check_sizes(in_dim, width, depth, out_dim)
    _positive_int("harmonics", harmonics)
    pairs = _check_periods(periods, in_dim)
    _activation(activation)
    n_features = in_dim + len(pairs) * (2 * harmonics - 1)
    sizes = [n_features] + [width] * depth + [out_dim]
    return PeriodicMLP(
        _xavier_layers(key, sizes, _float_dtype(dtype)), in_dim, pairs, harmonics, activation
    )


NETWORKS = {
    "mlp_activation": activation_mlp,
    "fourier": fourier_mlp,
    "siren": siren,
    "periodic": periodic_mlp,
    "laaf": functools.partial(adaptive_mlp, kind="layer"),
    "gaaf": functools.partial(adaptive_mlp, kind="global"),
}
"""The network choices by name, each a builder called as ``builder(key, in_dim, out_dim=1, *,
width=50, depth=4, dtype=None, **options)``: ``"mlp_activation"``
[`activation_mlp`][cgmpinn_jax.nn.activation_mlp], ``"fourier"``
[`fourier_mlp`][cgmpinn_jax.nn.fourier_mlp], ``"siren"`` [`siren`][cgmpinn_jax.nn.siren],
``"periodic"`` [`periodic_mlp`][cgmpinn_jax.nn.periodic_mlp], ``"laaf"`` and ``"gaaf"``
[`adaptive_mlp`][cgmpinn_jax.nn.adaptive_mlp] with ``kind="layer"`` and ``kind="global"``."""
