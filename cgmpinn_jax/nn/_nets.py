"""Networks (equinox Modules): the tanh MLP, LNN-PINN and STAR-PINN of the reference code.

Every network maps one point ``z`` of shape ``(d,)`` to a scalar (to a vector ``(F,)`` when
built with ``out_dim = F > 1``: the fields of a system); use ``jax.vmap`` for a batch. Matrix
products use ``precision=HIGHEST`` so GPU runs do not silently use TF32.

* `MLP` (docs/reference-code.md §2): ``Linear(d, H)``, tanh, ``(depth - 1)`` x
  [``Linear(H, H)``, tanh], ``Linear(H, 1)``; ``depth = 4`` hidden layers, ``H = 50`` (80
  for Fisher-KPP).
  Init "torch" = PyTorch's ``nn.Linear`` default, W and b ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in));
  init "xavier" = Xavier-normal weights (gain 1, std sqrt(2/(fan_in + fan_out))), zero biases.
* `LNNPINN` (§10.4): h0 = tanh(W_in z + b_in), then ``depth - 1`` liquid residual
  blocks ``h <- tanh(softplus(a) * h + softplus(b) * tanh(W h + c))`` with per-feature
  trainable a = 0.9, b = 0.1, then ``Linear(H, 1)``.
* `STARPINN` (§10.5): ``n_blocks = 3`` independent blocks
  ``Linear(d, H)-tanh-Linear(H, H)-tanh-Linear(H, 1)``, combined as
  ``o_1 = B_1(z); o_i = B_i(z) + sigmoid(a_{i-1}) o_{i-1}`` with trainable scalars a = 0.5.

An optional affine input map ``z -> scale * z + shift`` (static, not trained) serves the
Fisher-KPP CGMPINN's ``(x/5, t-1)``; derivatives are taken w.r.t. the raw coordinates.

Every network also has ``taylor_lanes(points, keys)``: the value and the requested first and
second derivative lanes at a batch of points in one Taylor-mode pass (the derivative fast path
of `cgmpinn_jax.nn._taylor`, used by ``Problem.pde_residuals``).

Examples:
    >>> import jax
    >>> net = mlp(jax.random.key(0), in_dim=1)
    >>> net(jax.numpy.array([0.3])).shape
    ()
"""

from __future__ import annotations

import math
from typing import Optional, cast

import equinox as eqx
import jax
import jax.numpy as jnp

from . import _taylor as _tl

__all__ = ["Linear", "MLP", "LNNPINN", "STARPINN", "mlp", "lnn_pinn", "star_pinn", "count_params"]

HIGHEST = jax.lax.Precision.HIGHEST
InputMap = Optional[tuple[tuple[float, ...], tuple[float, ...]]]


class Linear(eqx.Module):
    """A dense layer ``y = W x + b`` (an equinox module), applied to one vector ``x`` of shape
    ``(in,)``.  Its matrix product runs at ``HIGHEST`` precision, so GPU runs do not silently
    use TF32.

    Attributes:
        weight: ``(out, in)`` float array ``W``.
        bias: ``(out,)`` float array ``b``.

    Examples:
        >>> import jax.numpy as jnp
        >>> Linear(jnp.array([[1.0, 2.0]]), jnp.array([0.5]))(jnp.array([1.0, 1.0])).tolist()
        [3.5]
    """

    weight: jax.Array
    bias: jax.Array

    def __call__(self, x: jax.Array) -> jax.Array:
        return jnp.dot(self.weight, x, precision=HIGHEST) + self.bias


def linear(key: jax.Array, fan_in: int, fan_out: int, init: str = "torch", dtype=None) -> Linear:
    """A Linear layer with PyTorch-default ("torch") or Xavier-normal/zero-bias ("xavier") init."""
    dtype = dtype or jnp.zeros(()).dtype
    kw, kb = jax.random.split(key)
    if init == "torch":
        bound = 1.0 / math.sqrt(fan_in)
        w = jax.random.uniform(kw, (fan_out, fan_in), dtype, -bound, bound)
        b = jax.random.uniform(kb, (fan_out,), dtype, -bound, bound)
    elif init == "xavier":
        std = math.sqrt(2.0 / (fan_in + fan_out))
        w = std * jax.random.normal(kw, (fan_out, fan_in), dtype)
        b = jnp.zeros((fan_out,), dtype)
    else:
        raise ValueError(f"init must be 'torch' or 'xavier', got {init!r}")
    return Linear(w, b)


def _apply_map(input_map: InputMap, z: jax.Array) -> jax.Array:
    if input_map is None:
        return z
    scale, shift = input_map
    return z * jnp.asarray(scale, z.dtype) + jnp.asarray(shift, z.dtype)


def _map_direction(input_map: InputMap, v: jax.Array) -> jax.Array:
    if input_map is None:
        return v
    return v * jnp.asarray(input_map[0], v.dtype)


Jet = tuple[jax.Array, jax.Array, jax.Array]


def _linear_jet(layer: "Linear", jet: Jet) -> Jet:
    h, h1, h2 = jet
    return (
        layer(h),
        jnp.dot(layer.weight, h1, precision=HIGHEST),
        jnp.dot(layer.weight, h2, precision=HIGHEST),
    )


def _tanh_jet(jet: Jet) -> Jet:
    """(a, a', a'') -> (tanh a, (1 - t^2) a', (1 - t^2)(a'' - 2 t a'^2))."""
    a, a1, a2 = jet
    t = jnp.tanh(a)
    s = 1.0 - t * t
    return t, s * a1, s * (a2 - 2.0 * t * a1 * a1)


def _outputs(y: jax.Array) -> jax.Array:
    """The network's value at one point: a scalar for one output, ``(F,)`` for several."""
    return y[0] if y.shape[0] == 1 else y


def _check_input(z: jax.Array, in_dim: int) -> None:
    if z.shape != (in_dim,):
        raise ValueError(
            f"network input must be one point of shape ({in_dim},), got {z.shape}; "
            "use jax.vmap for batches"
        )


def _check_batch(points: jax.Array, in_dim: int) -> None:
    if points.ndim != 2 or points.shape[1] != in_dim:
        raise ValueError(
            f"taylor_lanes() takes a batch of points of shape (n, {in_dim}), got {points.shape}"
        )


class MLP(eqx.Module):
    """The tanh multilayer perceptron of the paper and the reference code (an equinox module);
    build one with [`mlp`][cgmpinn_jax.nn.mlp].

    ``Linear(d, H)``, tanh, then ``depth - 1`` times [``Linear(H, H)``, tanh], then
    ``Linear(H, F)``: the paper's networks have 4 hidden layers of ``H = 50`` units (80 for
    Fisher-KPP) and one output.  Calling it on one point ``z`` of shape ``(d,)`` gives a scalar
    (an ``(F,)`` vector for a system of ``F`` fields); use ``jax.vmap`` for a batch.

    Attributes:
        layers: the [`Linear`][cgmpinn_jax.nn.Linear] layers, input layer first.
        in_dim: the number of input coordinates ``d``.
        input_map: a fixed affine input map ``(scale, shift)``, applied as
            ``z -> scale * z + shift`` before the first layer (derivatives are still taken
            with respect to the raw coordinates), or ``None``.
    """

    layers: tuple[Linear, ...]
    in_dim: int = eqx.field(static=True)
    input_map: InputMap = eqx.field(static=True, default=None)

    def __call__(self, z: jax.Array) -> jax.Array:
        _check_input(z, self.in_dim)
        h = _apply_map(self.input_map, z)
        for layer in self.layers[:-1]:
            h = jnp.tanh(layer(h))
        return _outputs(self.layers[-1](h))

    def jet2(self, z: jax.Array, v: jax.Array) -> Jet:
        """The value and the first and second directional derivatives along ``v`` at one
        point, ``(u, D_v u, D_v^2 u)``, propagated through the layers together (Taylor mode:
        3 streams instead of the 4 of nested ``jvp``).
        [`partial`][cgmpinn_jax.derivatives.partial] uses it for pure second derivatives
        such as ``u_xx``.

        Args:
            z: ``(d,)`` float array, one point in raw coordinates.
            v: ``(d,)`` float array, the direction (a unit vector for a partial derivative).

        Returns:
            ``(u, D_v u, D_v^2 u)``: three scalars (of the first output of a network with several).
        """
        _check_input(z, self.in_dim)
        jet = (_apply_map(self.input_map, z), _map_direction(self.input_map, v), jnp.zeros_like(z))
        for layer in self.layers[:-1]:
            jet = _tanh_jet(_linear_jet(layer, jet))
        u, u1, u2 = _linear_jet(self.layers[-1], jet)
        return u[0], u1[0], u2[0]

    def taylor_lanes(self, points: jax.Array, keys, fields: bool = False) -> dict:
        """The value and derivative lanes at a batch of points in one Taylor-mode pass: the
        derivative fast path (see [`fast_path`][cgmpinn_jax.nn.fast_path]).

        Each layer is one stacked ``(lanes n, width) x (width, width)`` product, or one
        ``(n, width)`` product per lane.

        Args:
            points: ``(n, d)`` float array of points in raw coordinates (the input map is
                applied here; derivatives are with respect to the raw coordinates).
            keys: the lanes wanted: ``()`` the value, ``(i,)`` the derivative ``du/dz_i``,
                ``(i, j)`` with ``i <= j`` the second derivative ``d2u/dz_i dz_j``; the
                first-order lanes the second-order ones need are added.
            fields: return every output (a system's fields) rather than the first one.

        Returns:
            ``{key: (n,) array}`` (``(n, F)`` with ``fields``) for every lane carried.
        """
        _check_batch(points, self.in_dim)
        full = _tl.lane_closure(keys)
        jet = _tl.input_jet(points, full, self.input_map)
        for layer in self.layers[:-1]:
            jet = _tl.tanh(_tl.linear(layer, jet), full)
        return _tl.outputs(_tl.linear(self.layers[-1], jet), full, fields)


class LNNPINN(eqx.Module):
    """The network of the LNN-PINN baseline, with liquid residual gating (an equinox module);
    build one with [`lnn_pinn`][cgmpinn_jax.nn.lnn_pinn].

    ``h = tanh(W_in z + b_in)``, then per block ``h <- tanh(softplus(a) * h + softplus(b) *
    tanh(W h + c))`` with per-unit trainable gates ``a`` (initially 0.9) and ``b`` (0.1), then
    ``Linear(H, F)``.  One point ``(d,)`` to a scalar (``(F,)`` for ``F`` outputs).

    Attributes:
        inp: the input [`Linear`][cgmpinn_jax.nn.Linear] layer ``(H, d)``.
        blocks: the ``depth - 1`` hidden ``Linear(H, H)`` layers of the blocks.
        alphas: one ``(H,)`` float array of gates ``a`` per block.
        betas: one ``(H,)`` float array of gates ``b`` per block.
        out: the output ``Linear(H, F)`` layer.
        in_dim: the number of input coordinates ``d``.
        input_map: a fixed affine input map ``(scale, shift)`` or ``None``, as in
            [`MLP`][cgmpinn_jax.nn.MLP].
    """

    inp: Linear
    blocks: tuple[Linear, ...]
    alphas: tuple[jax.Array, ...]
    betas: tuple[jax.Array, ...]
    out: Linear
    in_dim: int = eqx.field(static=True)
    input_map: InputMap = eqx.field(static=True, default=None)

    def __call__(self, z: jax.Array) -> jax.Array:
        _check_input(z, self.in_dim)
        h = jnp.tanh(self.inp(_apply_map(self.input_map, z)))
        for lin, a, b in zip(self.blocks, self.alphas, self.betas):
            h_new = jnp.tanh(lin(h))
            h = jnp.tanh(jax.nn.softplus(a) * h + jax.nn.softplus(b) * h_new)
        return _outputs(self.out(h))

    def jet2(self, z: jax.Array, v: jax.Array) -> Jet:
        """The value and the first and second directional derivatives along ``v`` at one
        point, ``(u, D_v u, D_v^2 u)``, in one Taylor-mode pass.

        Args:
            z: ``(d,)`` float array, one point in raw coordinates.
            v: ``(d,)`` float array, the direction (a unit vector for a partial derivative).

        Returns:
            ``(u, D_v u, D_v^2 u)``: three scalars (of the first output of a network with several).
        """
        _check_input(z, self.in_dim)
        jet = (_apply_map(self.input_map, z), _map_direction(self.input_map, v), jnp.zeros_like(z))
        jet = _tanh_jet(_linear_jet(self.inp, jet))
        for lin, a, b in zip(self.blocks, self.alphas, self.betas):
            new = _tanh_jet(_linear_jet(lin, jet))
            sa, sb = jax.nn.softplus(a), jax.nn.softplus(b)
            jet = _tanh_jet(cast(Jet, tuple(sa * x + sb * y for x, y in zip(jet, new))))
        u, u1, u2 = _linear_jet(self.out, jet)
        return u[0], u1[0], u2[0]

    def taylor_lanes(self, points: jax.Array, keys, fields: bool = False) -> dict:
        """The value and derivative lanes at a batch of points in one Taylor-mode pass (as
        [`MLP.taylor_lanes`][cgmpinn_jax.nn.MLP.taylor_lanes]).

        Args:
            points: ``(n, d)`` float array of points in raw coordinates.
            keys: the lanes wanted: ``()`` the value, ``(i,)`` ``du/dz_i``, ``(i, j)`` with
                ``i <= j`` ``d2u/dz_i dz_j``.
            fields: return every output (a system's fields) rather than the first one.

        Returns:
            ``{key: (n,) array}`` (``(n, F)`` with ``fields``) for every lane carried.
        """
        _check_batch(points, self.in_dim)
        full = _tl.lane_closure(keys)
        jet = _tl.input_jet(points, full, self.input_map)
        jet = _tl.tanh(_tl.linear(self.inp, jet), full)
        for lin, a, b in zip(self.blocks, self.alphas, self.betas):
            new = _tl.tanh(_tl.linear(lin, jet), full)
            mixed = _tl.add(_tl.scale(jet, jax.nn.softplus(a)), _tl.scale(new, jax.nn.softplus(b)))
            jet = _tl.tanh(mixed, full)
        return _tl.outputs(_tl.linear(self.out, jet), full, fields)


class STARPINN(eqx.Module):
    """The network of the STAR-PINN baseline, stacked adaptive residual blocks (an equinox
    module); build one with [`star_pinn`][cgmpinn_jax.nn.star_pinn].

    Independent MLP blocks ``B_i`` of the input, combined as ``o_1 = B_1(z)``,
    ``o_i = B_i(z) + sigmoid(a_(i-1)) o_(i-1)`` with trainable scalar gates ``a`` (initially
    0.5); the output is the last ``o``.  One point ``(d,)`` to a scalar (``(F,)`` for ``F``
    outputs).

    Attributes:
        blocks: one tuple of [`Linear`][cgmpinn_jax.nn.Linear] layers per block (``d`` to
            ``H`` units, hidden layers, ``H`` to ``F``).
        gates: ``(n_blocks - 1,)`` float array of the gates ``a``.
        in_dim: the number of input coordinates ``d``.
        input_map: a fixed affine input map ``(scale, shift)`` or ``None``, as in
            [`MLP`][cgmpinn_jax.nn.MLP].
    """

    blocks: tuple[tuple[Linear, ...], ...]
    gates: jax.Array  # (n_blocks - 1,)
    in_dim: int = eqx.field(static=True)
    input_map: InputMap = eqx.field(static=True, default=None)

    def __call__(self, z: jax.Array) -> jax.Array:
        _check_input(z, self.in_dim)
        z = _apply_map(self.input_map, z)
        out = None
        for i, block in enumerate(self.blocks):
            h = z
            for layer in block[:-1]:
                h = jnp.tanh(layer(h))
            o = _outputs(block[-1](h))
            out = o if out is None else o + jax.nn.sigmoid(self.gates[i - 1]) * out
        return cast(jax.Array, out)

    def jet2(self, z: jax.Array, v: jax.Array) -> Jet:
        """The value and the first and second directional derivatives along ``v`` at one
        point, ``(u, D_v u, D_v^2 u)``, in one Taylor-mode pass.

        Args:
            z: ``(d,)`` float array, one point in raw coordinates.
            v: ``(d,)`` float array, the direction (a unit vector for a partial derivative).

        Returns:
            ``(u, D_v u, D_v^2 u)``: three scalars (of the first output of a network with several).
        """
        _check_input(z, self.in_dim)
        jet0 = (_apply_map(self.input_map, z), _map_direction(self.input_map, v), jnp.zeros_like(z))
        out = None
        for i, block in enumerate(self.blocks):
            jet = jet0
            for layer in block[:-1]:
                jet = _tanh_jet(_linear_jet(layer, jet))
            o = tuple(x[0] for x in _linear_jet(block[-1], jet))
            if out is None:
                out = o
            else:
                g = jax.nn.sigmoid(self.gates[i - 1])
                out = tuple(x + g * y for x, y in zip(o, out))
        return cast(Jet, out)

    def taylor_lanes(self, points: jax.Array, keys, fields: bool = False) -> dict:
        """The value and derivative lanes at a batch of points in one Taylor-mode pass (as
        [`MLP.taylor_lanes`][cgmpinn_jax.nn.MLP.taylor_lanes]).

        Args:
            points: ``(n, d)`` float array of points in raw coordinates.
            keys: the lanes wanted: ``()`` the value, ``(i,)`` ``du/dz_i``, ``(i, j)`` with
                ``i <= j`` ``d2u/dz_i dz_j``.
            fields: return every output (a system's fields) rather than the first one.

        Returns:
            ``{key: (n,) array}`` (``(n, F)`` with ``fields``) for every lane carried.
        """
        _check_batch(points, self.in_dim)
        full = _tl.lane_closure(keys)
        jet0 = _tl.input_jet(points, full, self.input_map)
        out = None
        for i, block in enumerate(self.blocks):
            jet = jet0
            for layer in block[:-1]:
                jet = _tl.tanh(_tl.linear(layer, jet), full)
            o = _tl.linear(block[-1], jet)
            out = (
                o if out is None else _tl.add(o, _tl.scale(out, jax.nn.sigmoid(self.gates[i - 1])))
            )
        return _tl.outputs(cast(_tl.Jet, out), full, fields)


def _check_sizes(in_dim: int, width: int, depth: int, out_dim: int = 1) -> None:
    for name, v in (("in_dim", in_dim), ("width", width), ("depth", depth), ("out_dim", out_dim)):
        if not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive int, got {v!r}")


def mlp(
    key: jax.Array,
    in_dim: int,
    width: int = 50,
    depth: int = 4,
    *,
    init: str = "torch",
    input_map: InputMap = None,
    dtype=None,
    out_dim: int = 1,
) -> MLP:
    """A new [`MLP`][cgmpinn_jax.nn.MLP] with ``depth`` hidden tanh layers of ``width`` units
    and ``out_dim`` outputs.

    Args:
        key: PRNG key of the initial parameters.
        in_dim: the number of input coordinates ``d``.
        width: hidden units per layer (default 50, the paper's).
        depth: the number of hidden layers (default 4, the paper's).
        init: ``"torch"`` (default): PyTorch's default for a linear layer, weights and biases
            uniform in ``[-1/sqrt(fan_in), 1/sqrt(fan_in)]``; or ``"xavier"``: Xavier-normal
            weights (gain 1, standard deviation ``sqrt(2 / (fan_in + fan_out))``) and zero
            biases.
        input_map: a fixed affine input map ``(scale, shift)``, two tuples of one float per
            coordinate, applied as ``z -> scale * z + shift``; ``None`` (default) for none.
        dtype: the parameters' float dtype (default: JAX's default float).
        out_dim: outputs per point (default 1, a scalar network; ``F`` for a system of ``F``
            fields).

    Returns:
        The [`MLP`][cgmpinn_jax.nn.MLP].

    Raises:
        ValueError: a size that is not a positive int, or an unknown ``init``.

    Examples:
        >>> import jax
        >>> net = mlp(jax.random.key(0), in_dim=1)   # the paper's 4 x 50 network
        >>> net(jax.numpy.array([0.3])).shape, count_params(net)
        ((), 7801)
    """
    _check_sizes(in_dim, width, depth, out_dim)
    sizes = [in_dim] + [width] * depth + [out_dim]
    keys = jax.random.split(key, len(sizes) - 1)
    layers = tuple(linear(k, a, b, init, dtype) for k, a, b in zip(keys, sizes[:-1], sizes[1:]))
    return MLP(layers, in_dim, input_map)


def lnn_pinn(
    key: jax.Array,
    in_dim: int,
    width: int = 50,
    depth: int = 4,
    *,
    init: str = "torch",
    input_map: InputMap = None,
    dtype=None,
    out_dim: int = 1,
) -> LNNPINN:
    """A new [`LNNPINN`][cgmpinn_jax.nn.LNNPINN] with ``depth - 1`` liquid residual blocks: the
    same linear layers as the [`MLP`][cgmpinn_jax.nn.MLP] of that ``depth`` plus ``2 H`` gate
    parameters per block.

    Args:
        key: PRNG key of the initial parameters.
        in_dim: the number of input coordinates ``d``.
        width: hidden units ``H`` per layer (default 50).
        depth: the number of hidden layers (the input layer and ``depth - 1`` blocks; default 4).
        init: ``"torch"`` (default) or ``"xavier"``, as in [`mlp`][cgmpinn_jax.nn.mlp].
        input_map: a fixed affine input map ``(scale, shift)`` or ``None`` (default).
        dtype: the parameters' float dtype (default: JAX's default float).
        out_dim: outputs per point (default 1).

    Returns:
        The [`LNNPINN`][cgmpinn_jax.nn.LNNPINN].

    Raises:
        ValueError: a size that is not a positive int, or an unknown ``init``.
    """
    _check_sizes(in_dim, width, depth, out_dim)
    dtype = dtype or jnp.zeros(()).dtype
    keys = jax.random.split(key, depth + 1)
    blocks = tuple(linear(k, width, width, init, dtype) for k in keys[1:depth])
    return LNNPINN(
        inp=linear(keys[0], in_dim, width, init, dtype),
        blocks=blocks,
        alphas=tuple(jnp.full((width,), 0.9, dtype) for _ in blocks),
        betas=tuple(jnp.full((width,), 0.1, dtype) for _ in blocks),
        out=linear(keys[depth], width, out_dim, init, dtype),
        in_dim=in_dim,
        input_map=input_map,
    )


def star_pinn(
    key: jax.Array,
    in_dim: int,
    width: int = 50,
    depth: int = 2,
    *,
    n_blocks: int = 3,
    init: str = "torch",
    input_map: InputMap = None,
    dtype=None,
    out_dim: int = 1,
) -> STARPINN:
    """A new [`STARPINN`][cgmpinn_jax.nn.STARPINN]: ``n_blocks`` MLP blocks of ``depth`` hidden
    layers each (the reference code's: 3 blocks of 2).

    Args:
        key: PRNG key of the initial parameters.
        in_dim: the number of input coordinates ``d``.
        width: hidden units per layer (default 50).
        depth: hidden layers per block (default 2).
        n_blocks: the number of blocks (default 3).
        init: ``"torch"`` (default) or ``"xavier"``, as in [`mlp`][cgmpinn_jax.nn.mlp].
        input_map: a fixed affine input map ``(scale, shift)`` or ``None`` (default).
        dtype: the parameters' float dtype (default: JAX's default float).
        out_dim: outputs per point (default 1).

    Returns:
        The [`STARPINN`][cgmpinn_jax.nn.STARPINN].

    Raises:
        ValueError: a size that is not a positive int, or an unknown ``init``.
    """
    _check_sizes(in_dim, width, depth, out_dim)
    dtype = dtype or jnp.zeros(()).dtype
    sizes = [in_dim] + [width] * depth + [out_dim]
    blocks = []
    for kb in jax.random.split(key, n_blocks):
        keys = jax.random.split(kb, len(sizes) - 1)
        blocks.append(
            tuple(linear(k, a, b, init, dtype) for k, a, b in zip(keys, sizes[:-1], sizes[1:]))
        )
    return STARPINN(tuple(blocks), jnp.full((n_blocks - 1,), 0.5, dtype), in_dim, input_map)


def count_params(model) -> int:
    """The number of trainable scalars of a model: the total size of its array leaves.

    Args:
        model: a network (any pytree; its non-array leaves are not counted).

    Returns:
        The number of scalars, a Python int.
    """
    return sum(x.size for x in jax.tree_util.tree_leaves(eqx.filter(model, eqx.is_array)))
