"""The dense quasi-Newton updates of `cgmpinn_jax.stages._ssbfgs` (inverse-Hessian form): the
self-scaling factors tau_k, phi_k of each method and the update of H. Formulas and sources
are in `cgmpinn_jax.stages._ssbfgs`'s module docstring."""

from __future__ import annotations

import jax.numpy as jnp
from jax import lax

from ._linesearch import _dot

_HI = lax.Precision.HIGHEST


def _scalings(method, n, h, b, fresh, eps):
    """tau_k and phi_k of the chosen method (see module docstring)."""
    one = jnp.ones_like(h)
    if method == "bfgs":
        tau, phi = one, one
        tau_fresh = h
    elif method == "ssbfgs":
        tau, phi = jnp.minimum(one, 1.0 / b), one
        tau_fresh = h
    elif method == "ssbfgs_ol":
        tau, phi = 1.0 / b, one
        tau_fresh = h
    elif method == "ssbroyden":
        a = jnp.maximum(b * h - 1.0, eps)
        rho_m = jnp.minimum(one, h * (1.0 - jnp.sqrt(a / (1.0 + a))))
        theta_m = (rho_m - 1.0) / a
        theta_p = 1.0 / rho_m
        theta = jnp.maximum(theta_m, jnp.minimum(theta_p, (1.0 - b) / b))
        sigma = 1.0 + a * theta
        expo = 1.0 / (1.0 - n) if n > 1 else 0.0
        sig_n = jnp.abs(sigma) ** expo
        rho_kk = jnp.minimum(one, 1.0 / b)
        tau = jnp.where(
            theta <= 0,
            jnp.minimum(rho_kk * sig_n, sigma),
            rho_kk * jnp.minimum(sig_n, 1.0 / theta),
        )
        phi = (1.0 - theta) / sigma
        tau_fresh = h / sigma
    else:  # pragma: no cover - checked in ssbfgs()
        raise ValueError(method)
    return jnp.where(fresh, tau_fresh, tau), phi


def _apply_update(H, s, Hy, rho, yHy, tau, phi):
    """Self-scaled Broyden update of H (see module docstring) as one rank-3 product:
    ``H/tau + A C A^T`` with ``A = [H y/tau, s, v]`` (n x 3). One pass over the n x n matrix,
    which measured faster than summing the four outer products, and much faster than the
    former exact symmetrisation ``(H + H^T)/2`` after every update. The result is symmetric
    to rounding (~1e-16 relative), not bit for bit."""
    v = rho * s - Hy / yHy
    Hty = Hy / tau
    yHty = yHy / tau
    c_ss = rho * (1.0 + rho * yHty)
    c_vv = (phi - 1.0) * yHty
    zero = jnp.zeros_like(rho)
    A = jnp.stack([Hty, s, v], axis=1)
    C = jnp.stack(
        [
            jnp.stack([zero, -rho, zero]),
            jnp.stack([-rho, c_ss, zero]),
            jnp.stack([zero, zero, c_vv]),
        ]
    )
    return H / tau + jnp.dot(A, jnp.dot(C, A.T, precision=_HI), precision=_HI)


def _next_H(H, bad, upd_ok, reset, s, Hy, rho, yHy, tau, phi):
    """The next inverse Hessian: the update of the metric used for this step (the identity
    after a bad-direction reset) when allowed, the identity when the step was rejected (or
    bad and not updated), else ``H`` unchanged. Branches by ``lax.cond``, so only the taken
    one touches the n x n matrix."""
    n = H.shape[0]

    def eye():
        return jnp.eye(n, dtype=H.dtype)

    def base():
        return lax.cond(bad, eye, lambda: H)

    def keep():
        return lax.cond(reset, eye, lambda: H)

    return lax.cond(upd_ok, lambda: _apply_update(base(), s, Hy, rho, yHy, tau, phi), keep)


def update_metric(H, g, s, y, alpha, take, bad, fresh, method, ceps, eps):
    """``(H_new, upd_ok, reset)`` after a step ``s`` (gradient change ``y``): the
    self-scaled update when the curvature test and every update quantity pass."""
    n = H.shape[0]
    ys = _dot(y, s)
    curv_ok = take & (ys > ceps * jnp.sqrt(_dot(s, s)) * jnp.sqrt(_dot(y, y)))
    Hy = jnp.where(bad, y, _dot(H, y))  # with the H used for this step (identity after a reset)
    yHy = _dot(y, Hy)
    rho = 1.0 / ys
    h = yHy * rho
    b = -alpha * _dot(s, g) * rho
    tau, phi = _scalings(method, n, h, b, fresh, eps)
    upd_ok = (
        curv_ok
        & (yHy > 0)
        & (b > 0)
        & jnp.isfinite(rho)
        & jnp.isfinite(tau)
        & (tau > 0)
        & jnp.isfinite(phi)
        & jnp.all(jnp.isfinite(Hy))
        & jnp.all(jnp.isfinite(s))
    )
    reset = ~take | (bad & ~upd_ok)
    return _next_H(H, bad, upd_ok, reset, s, Hy, rho, yHy, tau, phi), upd_ok, reset
