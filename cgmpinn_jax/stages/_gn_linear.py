"""The linear algebra of the Gauss-Newton forms (`cgmpinn_jax.stages._gauss_newton`): the
product ``J J^T`` / ``J^T J`` by tiles, conjugate gradients (plain and preconditioned by an
earlier Cholesky factor), and the exact forms' directions (Cholesky of the product, or SVD)."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

HIGHEST = jax.lax.Precision.HIGHEST


def _gram(J: jax.Array, form: str, blocks: int = 4) -> jax.Array:
    """``J J^T`` (kernel) or ``J^T J`` (Gramian), at full float precision, symmetric by
    construction: the output is cut into ``blocks x blocks`` tiles and only the lower ones
    are multiplied (``b (b + 1) / 2`` of ``b^2``: 10/16 of the flops for ``b = 4``), the
    upper ones are their transposes. Why ``blocks = 4``: docs/decisions.md."""
    A = J if form == "kernel" else J.T  # rows of A are the matrix's index
    n = A.shape[0]
    b = blocks if n >= 128 * blocks else 1
    parts = jnp.array_split(A, b)

    def dot(a, c):
        return jax.lax.dot_general(a, c, (((1,), (1,)), ((), ())), precision=HIGHEST)

    # None placeholders, every one replaced by a tile below
    tiles: list[list[Any]] = [[None] * b for _ in range(b)]
    for i in range(b):
        for j in range(i + 1):
            tiles[i][j] = dot(parts[i], parts[j])
            if j < i:
                tiles[j][i] = tiles[i][j].T
    return jnp.block(tiles)


def _pcg(J, r, mu, L, max_iters: int, tol: float):
    """``(J J^T + mu I) a = r`` by conjugate gradients preconditioned with ``(L L^T)^{-1}``
    (``L``: an earlier iteration's factor), from ``a = 0``, until the residual is below
    ``tol * |r|`` or ``max_iters`` iterations: ``(a, iterations)``. Each iteration is two
    products with ``J`` (``4 M P`` flops) and two triangular solves (``2 M^2``)."""

    def dot(a, b):
        return jnp.dot(a, b, precision=HIGHEST)

    return _cg(
        lambda u: dot(J, dot(u, J)) + mu * u,
        lambda v: jax.scipy.linalg.cho_solve((L, True), v),
        r,
        max_iters,
        tol,
    )


def _cg(op, prec, r, max_iters: int, tol: float):
    """``op(a) = r`` (``op`` symmetric positive definite) by conjugate gradients preconditioned
    with ``prec``, from ``a = 0``, until the residual is below ``tol * |r|`` or ``max_iters``
    iterations (or a breakdown: a non-finite or non-positive ``r . z``): ``(a, iterations)``."""

    def dot(a, b):
        return jnp.dot(a, b, precision=HIGHEST)

    stop = (tol * tol) * dot(r, r)

    def body(c):
        k, a, res, z, p, rz = c
        q = op(p)
        alpha = rz / dot(p, q)
        a, res = a + alpha * p, res - alpha * q
        z = prec(res)
        rz_new = dot(res, z)
        return k + 1, a, res, z, z + (rz_new / rz) * p, rz_new

    z0 = prec(r)
    c0 = (jnp.int32(0), jnp.zeros_like(r), r, z0, z0, dot(r, z0))
    k, a, *_ = jax.lax.while_loop(
        lambda c: (c[0] < max_iters) & (dot(c[2], c[2]) > stop) & jnp.isfinite(c[5]) & (c[5] > 0),
        body,
        c0,
    )
    return a, k


def cholesky_direction(J, r, g, value, form: str):
    """The damped steps of the ``"kernel"`` (``M x M``) or ``"gramian"`` (``P x P``) form from
    one product `_gram`: ``direction(mu) -> (d, predicted decrease, 0)``, each trial a Cholesky
    factor of the product plus ``mu I`` (NaN where it is not numerically positive definite).
    In the kernel form the model residual is exact and free: ``r + J d = mu a``."""

    def dot(a, b):
        return jnp.dot(a, b, precision=HIGHEST)

    A = _gram(J, form)
    eye = jnp.eye(A.shape[0], dtype=A.dtype)

    def direction(mu):
        Lc = jnp.linalg.cholesky(A + mu * eye)
        if form == "kernel":
            a = jax.scipy.linalg.cho_solve((Lc, True), r)
            return -dot(a, J), value - mu * mu * dot(a, a), jnp.int32(0)
        d = -jax.scipy.linalg.cho_solve((Lc, True), g)
        m = r + dot(J, d)
        return d, value - dot(m, m), jnp.int32(0)

    return direction


def svd_direction(J, r):
    """The damped steps of every ``mu`` from one thin SVD ``J = U S V^T`` (the ``"svd"`` form):
    ``direction(mu) -> (d, predicted decrease, 0)`` with ``d = -V S (S^2 + mu)^{-1} U^T r`` and
    the decrease ``sum c^2 S^2 (S^2 + 2 mu) / (S^2 + mu)^2`` (``c = U^T r``), free of the
    cancellation of ``|r|^2 - |r + J d|^2``. Nothing is squared: a direction of singular value
    ``s`` is resolved down to about ``eps s_max``, where a Cholesky factor of ``J J^T + mu I``
    fails below ``mu ~ eps s_max^2`` and so damps every direction with ``s < sqrt(eps) s_max``.
    Each trial is two products, no factorization; the SVD costs several times the product."""
    U, S, Vt = jnp.linalg.svd(J, full_matrices=False)
    c = jnp.dot(r, U, precision=HIGHEST)
    s2 = S * S

    def direction(mu):
        q = s2 + mu
        d = -jnp.dot(S * c / q, Vt, precision=HIGHEST)
        return d, jnp.sum(c * c * s2 * (s2 + 2.0 * mu) / (q * q)), jnp.int32(0)

    return direction
