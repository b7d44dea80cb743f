"""Network choices, part 1: the MLP with a choice of activation and the MLP with adaptive
activations (LAAF / GAAF), and the small pieces the other network choices share.

Every network maps one point ``z`` of shape ``(d,)`` to a scalar (to an ``(F,)`` vector when
built with ``out_dim = F > 1``); use ``jax.vmap`` for a batch. These networks have no
Taylor-mode fast path: derivatives of them are taken by automatic differentiation.

Examples:
    >>> import jax
    >>> net = activation_mlp(jax.random.key(0), in_dim=2, width=8, depth=2, activation="sin")
    >>> net(jax.numpy.zeros(2)).shape
    ()
"""

from __future__ import annotations

import math
from typing import Callable

import equinox as eqx
import jax
import jax.numpy as jnp

from ._nets import Linear, _check_input, _check_sizes, _outputs, linear

__all__ = ["ActivationMLP", "AdaptiveMLP", "activation_mlp", "adaptive_mlp"]


def _gelu(x: jax.Array) -> jax.Array:
    return jax.nn.gelu(x, approximate=False)


_ACTIVATIONS: dict[str, Callable[[jax.Array], jax.Array]] = {
    "tanh": jnp.tanh,
    "sin": jnp.sin,
    "gelu": _gelu,  # the exact GELU, x * Phi(x) (Hendrycks and Gimpel 2016)
    "swish": jax.nn.swish,  # x * sigmoid(x) (Ramachandran, Zoph and Le 2017; beta = 1)
}


def _activation(name: str) -> Callable[[jax.Array], jax.Array]:
    """The activation function of a name, or a ValueError that lists the choices."""
    try:
        return _ACTIVATIONS[name]
    except (KeyError, TypeError):
        raise ValueError(
            f"activation must be one of {sorted(_ACTIVATIONS)}, got {name!r}"
        ) from None


def _float_dtype(dtype) -> jnp.dtype:
    """The parameters' dtype: ``dtype``, or JAX's default float when ``None``."""
    dt = jnp.zeros(()).dtype if dtype is None else jnp.dtype(dtype)
    if not jnp.issubdtype(dt, jnp.floating):
        raise ValueError(f"dtype must be a float dtype, got {dt}")
    return dt


def _positive(name: str, value: float) -> float:
    value = float(value)
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return value


def _xavier_layers(key: jax.Array, sizes: list[int], dtype) -> tuple[Linear, ...]:
    """Dense layers between consecutive ``sizes``: Xavier-normal weights, zero biases (one key
    per layer, split as [`mlp`][cgmpinn_jax.nn.mlp] splits it)."""
    keys = jax.random.split(key, len(sizes) - 1)
    return tuple(linear(k, a, b, "xavier", dtype) for k, a, b in zip(keys, sizes[:-1], sizes[1:]))


def _dense(
    layers: tuple[Linear, ...], act: Callable[[jax.Array], jax.Array], h: jax.Array
) -> jax.Array:
    """``act`` after every layer but the last, which is linear; the output as ``_outputs``."""
    for layer in layers[:-1]:
        h = act(layer(h))
    return _outputs(layers[-1](h))


class ActivationMLP(eqx.Module):
    """A multilayer perceptron with a choice of activation (an equinox module); build one
    with [`activation_mlp`][cgmpinn_jax.nn.activation_mlp].

    ``Linear(d, H)``, activation, then ``depth - 1`` times [``Linear(H, H)``, activation],
    then ``Linear(H, F)``.  One point ``(d,)`` to a scalar (``(F,)`` for ``F`` outputs).

    Attributes:
        layers: the [`Linear`][cgmpinn_jax.nn.Linear] layers, input layer first.
        in_dim: the number of input coordinates ``d``.
        activation: the activation's name: ``"tanh"``, ``"sin"``, ``"gelu"`` or ``"swish"``.
    """

    layers: tuple[Linear, ...]
    in_dim: int = eqx.field(static=True)
    activation: str = eqx.field(static=True, default="tanh")

    def __call__(self, z: jax.Array) -> jax.Array:
        _check_input(z, self.in_dim)
        return _dense(self.layers, _activation(self.activation), z)


def activation_mlp(
    key: jax.Array,
    in_dim: int,
    out_dim: int = 1,
    *,
    width: int = 50,
    depth: int = 4,
    dtype=None,
    activation: str = "tanh",
) -> ActivationMLP:
    r"""A new [`ActivationMLP`][cgmpinn_jax.nn.ActivationMLP]: the PINN network of Raissi,
    Perdikaris and Karniadakis (J. Comput. Phys. 378, 2019) with a choice of activation,
    initialised as Glorot and Bengio (AISTATS 2010) propose: Xavier-normal weights (standard
    deviation $\sqrt{2/(\text{fan}_\text{in} + \text{fan}_\text{out})}$) and zero biases.

    The activations: ``"tanh"``; ``"sin"``; ``"gelu"``, the exact GELU
    $x\,\Phi(x)$ of Hendrycks and Gimpel (2016) ($\Phi$ the standard normal distribution
    function, not its tanh approximation); ``"swish"``, $x\,\mathrm{sigmoid}(x)$ of
    Ramachandran, Zoph and Le (2017), with $\beta = 1$.

    Args:
        key: PRNG key of the initial parameters.
        in_dim: the number of input coordinates ``d``.
        out_dim: outputs per point (default 1, a scalar network; ``F`` for a system of ``F``
            fields).
        width: hidden units per layer (default 50).
        depth: the number of hidden layers (default 4).
        dtype: the parameters' float dtype (default: JAX's default float).
        activation: ``"tanh"`` (default), ``"sin"``, ``"gelu"`` or ``"swish"``.

    Returns:
        The [`ActivationMLP`][cgmpinn_jax.nn.ActivationMLP].

    Raises:
        ValueError: a size that is not a positive int, an unknown activation or a dtype that
            is not a float dtype.

    Examples:
        >>> import jax
        >>> net = activation_mlp(jax.random.key(0), 2, 3, width=8, depth=2, activation="gelu")
        >>> jax.vmap(net)(jax.numpy.zeros((5, 2))).shape
        (5, 3)
    """
    _check_sizes(in_dim, width, depth, out_dim)
    _activation(activation)
    sizes = [in_dim] + [width] * depth + [out_dim]
    return ActivationMLP(_xavier_layers(key, sizes, _float_dtype(dtype)), in_dim, activation)


class AdaptiveMLP(eqx.Module):
    r"""A multilayer perceptron with adaptive activations, LAAF or GAAF (an equinox module);
    build one with [`adaptive_mlp`][cgmpinn_jax.nn.adaptive_mlp].

    Hidden layer ``k`` computes $h_k = \sigma(n\, a_k\, (W_k h_{k-1} + b_k))$ with a fixed
    scale factor $n$ and a trainable slope $a_k$ (one per hidden layer, or one shared by all);
    the output layer is linear.  One point ``(d,)`` to a scalar (``(F,)`` for ``F`` outputs).

    Attributes:
        layers: the [`Linear`][cgmpinn_jax.nn.Linear] layers, input layer first.
        slopes: the trainable slopes $a$: a ``(depth,)`` float array (``kind="layer"``) or a
            ``(1,)`` float array (``kind="global"``).
        in_dim: the number of input coordinates ``d``.
        kind: ``"layer"`` (LAAF, one slope per hidden layer) or ``"global"`` (GAAF, one slope).
        scale: the fixed scale factor $n$.
        activation: the activation's name $\sigma$: ``"tanh"``, ``"sin"``, ``"gelu"`` or
            ``"swish"``.
    """

    layers: tuple[Linear, ...]
    slopes: jax.Array
    in_dim: int = eqx.field(static=True)
    kind: str = eqx.field(static=True, default="layer")
    scale: float = eqx.field(static=True, default=10.0)
    activation: str = eqx.field(static=True, default="tanh")

    def __call__(self, z: jax.Array) -> jax.Array:
        _check_input(z, self.in_dim)
        act = _activation(self.activation)
        h = z
        for k, layer in enumerate(self.layers[:-1]):
            a = self.slopes[k if self.kind == "layer" else 0]
            h = act((self.scale * a) * layer(h))
        return _outputs(self.layers[-1](h))


def adaptive_mlp(
    key: jax.Array,
    in_dim: int,
    out_dim: int = 1,
    *,
    width: int = 50,
    depth: int = 4,
    dtype=None,
    kind: str = "layer",
    scale: float = 10.0,
    activation: str = "tanh",
) -> AdaptiveMLP:
    r"""A new [`AdaptiveMLP`][cgmpinn_jax.nn.AdaptiveMLP]: adaptive activation functions of
    Jagtap, Kawaguchi and Karniadakis.

    Hidden layer ``k`` computes $\sigma(n\, a_k\, (W_k h_{k-1} + b_k))$, with a fixed scale
    factor $n$ (``scale``) and trainable slopes initialised to $a = 1/n$, so that $n a = 1$ and
    the network starts as the [`ActivationMLP`][cgmpinn_jax.nn.ActivationMLP] with the same
    weights (the same ``key`` gives the same weights).

    * ``kind="global"``: GAAF, one slope $a$ shared by every hidden layer ("Adaptive
      activation functions accelerate convergence in deep and physics-informed neural
      networks", J. Comput. Phys. 404, 109136, 2020).
    * ``kind="layer"``: the layer-wise LAAF, one slope $a_k$ per hidden layer ("Locally
      adaptive activation functions with slope recovery for deep and physics-informed neural
      networks", Proc. R. Soc. A 476, 20200334, 2020).

    The weights are Xavier-normal and the biases zero, as in those papers.  The LAAF paper
    also adds a slope-recovery term $1 / (\frac{1}{D} \sum_k e^{a_k})$ to the loss; it is not
    part of the network, and not added here.  PINNacle's LAAF and GAAF use the same
    $\sigma(n a x)$ with $n = 10$, but with one slope per neuron (its "LAAF") or per layer (its
    "GAAF"), drawn at random rather than set to $1/n$.

    Args:
        key: PRNG key of the initial parameters.
        in_dim: the number of input coordinates ``d``.
        out_dim: outputs per point (default 1).
        width: hidden units per layer (default 50).
        depth: the number of hidden layers (default 4).
        dtype: the parameters' float dtype (default: JAX's default float).
        kind: ``"layer"`` (default, LAAF) or ``"global"`` (GAAF).
        scale: the scale factor $n$ (default 10; the papers take $n \ge 1$).
        activation: the activation $\sigma$: ``"tanh"`` (default), ``"sin"``, ``"gelu"`` or
            ``"swish"``.

    Returns:
        The [`AdaptiveMLP`][cgmpinn_jax.nn.AdaptiveMLP].

    Raises:
        ValueError: a size that is not a positive int, an unknown ``kind`` or activation, a
            ``scale`` that is not positive, or a dtype that is not a float dtype.

    Examples:
        >>> import jax
        >>> net = adaptive_mlp(jax.random.key(0), 2, width=8, depth=3)
        >>> (
        ...     net.slopes.shape,
        ...     adaptive_mlp(jax.random.key(0), 2, width=8, kind="global").slopes.shape,
        ... )
        ((3,), (1,))
    """
    _check_sizes(in_dim, width, depth, out_dim)
    _activation(activation)
    if kind not in ("layer", "global"):
        raise ValueError(f"kind must be 'layer' (LAAF) or 'global' (GAAF), got {kind!r}")
    scale = _positive("scale", scale)
    dt = _float_dtype(dtype)
    sizes = [in_dim] + [width] * depth + [out_dim]
    slopes = jnp.full((depth if kind == "layer" else 1,), 1.0 / scale, dt)
    return AdaptiveMLP(_xavier_layers(key, sizes, dt), slopes, in_dim, kind, scale, activation)
