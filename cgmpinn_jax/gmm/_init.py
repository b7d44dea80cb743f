"""Deterministic initialisation of the EM of `cgmpinn_jax.gmm`.

``init="kmeans"`` (default): the initial centres are the quantiles ``(k + 1/2) / K`` of the
sorted data, refined by Lloyd (k-means) iterations until the assignment stops changing.
``init="quantile"``: the sorted data are split into K equal-count blocks.  The one-hot
assignment is turned into initial parameters by one M-step, as sklearn does.

In 1-D a hard k-means assignment with sorted centres is a partition of the sorted data into K
contiguous blocks, so Lloyd's algorithm only has to move K - 1 block edges: cluster sums come
from one prefix sum, edges from a binary search of the midpoints between neighbouring centres.
Ties go to the lower component (argmin convention).
"""

from __future__ import annotations

import jax.numpy as jnp
from jax import lax

from cgmpinn_jax.gmm._data import _count_eps, _var_floor


def _lloyd_edges(xs, k, kmeans_max_iter):
    """``(K-1,)`` int32 block edges of Lloyd's k-means on the sorted data ``xs``."""
    n = xs.shape[0]
    dtype = xs.dtype
    csum = jnp.concatenate([jnp.zeros((1,), dtype), jnp.cumsum(xs)])

    def block_means(edges, fallback):
        lo = jnp.concatenate([jnp.zeros((1,), edges.dtype), edges])
        hi = jnp.concatenate([edges, jnp.full((1,), n, edges.dtype)])
        cnt = (hi - lo).astype(dtype)
        return jnp.where(cnt > 0, (csum[hi] - csum[lo]) / jnp.maximum(cnt, 1), fallback)

    def edges_of(c):
        mid = 0.5 * (c[1:] + c[:-1])
        return jnp.searchsorted(xs, mid, side="right").astype(jnp.int32)

    def lloyd_cond(state):
        it, _, _, changed = state
        return (it < kmeans_max_iter) & changed

    def lloyd_body(state):
        it, c, edges, _ = state
        c_new = block_means(edges, c)
        edges_new = edges_of(c_new)
        return it + 1, c_new, edges_new, jnp.any(edges_new != edges)

    centres0 = xs[jnp.clip((2 * jnp.arange(k) + 1) * n // (2 * k), 0, n - 1)]
    _, _, edges, _ = lax.while_loop(
        lloyd_cond, lloyd_body, (jnp.int32(0), centres0, edges_of(centres0), jnp.bool_(True))
    )
    return edges


def _init_edges(xs, k, init, kmeans_max_iter):
    """``(K-1,)`` int32 edges of the initial partition of the sorted data ``xs`` into K blocks."""
    n = xs.shape[0]
    equal_edges = (jnp.arange(1, k) * n) // k  # (K-1,) equal-count split
    if init == "kmeans" and k > 1:
        return _lloyd_edges(xs, k, kmeans_max_iter)
    return equal_edges.astype(jnp.int32)  # "quantile" (or K == 1)


def _init_params(stream, xs, edges, k, reg):
    """Initial ``(logw, mu, var)`` by one M-step on the hard assignment to the blocks."""
    dtype = xs.dtype
    count_eps = _count_eps(dtype)
    pos = jnp.arange(xs.shape[0])

    def onehot_of(p, mask):  # (K, C) hard assignment of sorted positions p to the blocks
        labels = jnp.sum(p[None, :] >= edges[:, None], axis=0)
        oh = (labels[None, :] == jnp.arange(k)[:, None]).astype(dtype)
        return oh if mask is None else oh * mask[None, :]

    def block_sums(xc, p, mask):
        oh = onehot_of(p, mask)
        return jnp.sum(oh, axis=1), jnp.sum(oh * xc[None, :], axis=1)

    cnt0, sx0 = stream.reduce_sum(block_sums, xs, pos)
    nk0 = cnt0 + count_eps
    mu0 = sx0 / nk0

    def block_sq(xc, p, mask):
        d0 = xc[None, :] - mu0[:, None]
        return (jnp.sum(onehot_of(p, mask) * d0 * d0, axis=1),)

    (sq0,) = stream.reduce_sum(block_sq, xs, pos)
    var0 = jnp.maximum(sq0 / nk0 + reg, _var_floor(dtype))
    logw0 = jnp.log(nk0 / jnp.sum(nk0))
    return logw0, mu0, var0
