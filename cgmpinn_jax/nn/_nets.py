"""Networks (equinox Modules): the tanh MLP, LNN-PINN and STAR-PINN of the reference code.

Every network maps one point ``z`` of shape ``(d,)`` to a scalar (to a vector ``(F,)`` when
built with ``out_dim = F > 1``: the fields of a system); use ``jax.vmap`` for a batch. Matrix products use ``precision=HIGHEST`` so GPU runs do not silently use TF32.

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
from typing import Optional

import equinox as eqx
import jax
import jax.numpy as jnp

from . import _taylor as _tl

__all__ = ["Linear", "MLP", "LNNPINN", "STARPINN", "mlp", "lnn_pinn", "star_pinn", "count_params"]

HIGHEST = jax.lax.Precision.HIGHEST
InputMap = Optional[tuple[tuple[float, ...], tuple[float, ...]]]


class Linear(eqx.Module):
    """``y = W x + b`` with W of shape (out, in)."""

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
    return layer(h), jnp.dot(layer.weight, h1, precision=HIGHEST), jnp.dot(layer.weight, h2, precision=HIGHEST)


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
        raise ValueError(f"network input must be one point of shape ({in_dim},), got {z.shape}; use jax.vmap for batches")


def _check_batch(points: jax.Array, in_dim: int) -> None:
    if points.ndim != 2 or points.shape[1] != in_dim:
        raise ValueError(f"taylor_lanes() takes a batch of points of shape (n, {in_dim}), got {points.shape}")


class MLP(eqx.Module):
    """tanh MLP, scalar output (docs/reference-code.md §2)."""

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
        """(u, D_v u, D_v^2 u) at one point by propagating value, first and second
        directional derivatives through the layers (Taylor mode, 3 streams instead of the
        4 of nested jvp). Used by `cgmpinn_jax.derivatives.partial` for u_xx-type terms."""
        _check_input(z, self.in_dim)
        jet = (_apply_map(self.input_map, z), _map_direction(self.input_map, v), jnp.zeros_like(z))
        for layer in self.layers[:-1]:
            jet = _tanh_jet(_linear_jet(layer, jet))
        u, u1, u2 = _linear_jet(self.layers[-1], jet)
        return u[0], u1[0], u2[0]

    def taylor_lanes(self, points: jax.Array, keys, fields: bool = False) -> dict:
        """Value and derivative lanes at a batch of points in one Taylor-mode pass (the
        derivative fast path, `cgmpinn_jax.nn._taylor`).

        Args:
            points: (N, d) raw coordinates (the input map is applied here; derivatives are
                w.r.t. the raw coordinates).
            keys: lanes wanted: ``()`` value, ``(i,)`` du/dz_i, ``(i, j)`` (i <= j)
                d2u/dz_i dz_j; the first-order lanes the second-order ones need are added.

            fields: every output (a system's fields): lanes ``(N, F)`` instead of the first
                output's ``(N,)``.

        Returns:
            ``{key: (N,)}`` (``fields``: ``(N, F)``) for every lane carried (see
            `cgmpinn_jax.nn._taylor.lane_closure`).
            Each layer is one stacked ``(lanes N, width) x (width, width)`` product, or
            one ``(N, width)`` product per lane (`cgmpinn_jax.nn._taylor.linear`).
        """
        _check_batch(points, self.in_dim)
        full = _tl.lane_closure(keys)
        jet = _tl.input_jet(points, full, self.input_map)
        for layer in self.layers[:-1]:
            jet = _tl.tanh(_tl.linear(layer, jet), full)
        return _tl.outputs(_tl.linear(self.layers[-1], jet), full, fields)


class LNNPINN(eqx.Module):
    """Liquid-residual-gated network (docs/reference-code.md §10.4)."""

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
        """(u, D_v u, D_v^2 u) at one point (see `MLP.jet2`)."""
        _check_input(z, self.in_dim)
        jet = (_apply_map(self.input_map, z), _map_direction(self.input_map, v), jnp.zeros_like(z))
        jet = _tanh_jet(_linear_jet(self.inp, jet))
        for lin, a, b in zip(self.blocks, self.alphas, self.betas):
            new = _tanh_jet(_linear_jet(lin, jet))
            sa, sb = jax.nn.softplus(a), jax.nn.softplus(b)
            jet = _tanh_jet(tuple(sa * x + sb * y for x, y in zip(jet, new)))
        u, u1, u2 = _linear_jet(self.out, jet)
        return u[0], u1[0], u2[0]

    def taylor_lanes(self, points: jax.Array, keys, fields: bool = False) -> dict:
        """Value and derivative lanes at a batch of points in one Taylor-mode pass
        (see `MLP.taylor_lanes`)."""
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
    """Stacked adaptive residual blocks (docs/reference-code.md §10.5)."""

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
        return out

    def jet2(self, z: jax.Array, v: jax.Array) -> Jet:
        """(u, D_v u, D_v^2 u) at one point (see `MLP.jet2`)."""
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
        return out

    def taylor_lanes(self, points: jax.Array, keys, fields: bool = False) -> dict:
        """Value and derivative lanes at a batch of points in one Taylor-mode pass
        (see `MLP.taylor_lanes`)."""
        _check_batch(points, self.in_dim)
        full = _tl.lane_closure(keys)
        jet0 = _tl.input_jet(points, full, self.input_map)
        out = None
        for i, block in enumerate(self.blocks):
            jet = jet0
            for layer in block[:-1]:
                jet = _tl.tanh(_tl.linear(layer, jet), full)
            o = _tl.linear(block[-1], jet)
            out = o if out is None else _tl.add(o, _tl.scale(out, jax.nn.sigmoid(self.gates[i - 1])))
        return _tl.outputs(out, full, fields)


def _check_sizes(in_dim: int, width: int, depth: int, out_dim: int = 1) -> None:
    for name, v in (("in_dim", in_dim), ("width", width), ("depth", depth), ("out_dim", out_dim)):
        if not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive int, got {v!r}")


def mlp(key: jax.Array, in_dim: int, width: int = 50, depth: int = 4, *, init: str = "torch",
        input_map: InputMap = None, dtype=None, out_dim: int = 1) -> MLP:
    """The reference MLP with ``depth`` hidden tanh layers of ``width`` units and ``out_dim``
    outputs (a scalar network for 1, a ``(out_dim,)`` vector otherwise: a system's fields)."""
    _check_sizes(in_dim, width, depth, out_dim)
    sizes = [in_dim] + [width] * depth + [out_dim]
    keys = jax.random.split(key, len(sizes) - 1)
    layers = tuple(linear(k, a, b, init, dtype) for k, a, b in zip(keys, sizes[:-1], sizes[1:]))
    return MLP(layers, in_dim, input_map)


def lnn_pinn(key: jax.Array, in_dim: int, width: int = 50, depth: int = 4, *, init: str = "torch",
             input_map: InputMap = None, dtype=None, out_dim: int = 1) -> LNNPINN:
    """LNN-PINN with ``depth - 1`` liquid residual blocks (same linear layers as the MLP plus
    6H gate parameters for depth 4)."""
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


def star_pinn(key: jax.Array, in_dim: int, width: int = 50, depth: int = 2, *, n_blocks: int = 3,
              init: str = "torch", input_map: InputMap = None, dtype=None, out_dim: int = 1) -> STARPINN:
    """STAR-PINN: ``n_blocks`` MLP blocks of ``depth`` hidden layers (reference: 3 blocks of 2)."""
    _check_sizes(in_dim, width, depth, out_dim)
    dtype = dtype or jnp.zeros(()).dtype
    sizes = [in_dim] + [width] * depth + [out_dim]
    blocks = []
    for kb in jax.random.split(key, n_blocks):
        keys = jax.random.split(kb, len(sizes) - 1)
        blocks.append(tuple(linear(k, a, b, init, dtype) for k, a, b in zip(keys, sizes[:-1], sizes[1:])))
    return STARPINN(tuple(blocks), jnp.full((n_blocks - 1,), 0.5, dtype), in_dim, input_map)


def count_params(model) -> int:
    """Number of trainable scalars in a model (all array leaves)."""
    return sum(x.size for x in jax.tree_util.tree_leaves(eqx.filter(model, eqx.is_array)))
