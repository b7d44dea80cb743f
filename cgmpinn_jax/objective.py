"""The training objective: per-term losses of a method on a problem, and their balanced sum.

``objective = lambda . terms + extra`` where ``terms`` are the ReLoBRaLo-balanced values
(the PDE term curriculum-weighted, ``mean(w r^2)``; the constraint terms as the method
aggregates their pieces) and ``extra`` the un-balanced part of a method's loss (lbPINN's
regulariser, gPINN's gradient term). All functions are pure and jittable; the parameters are
the array part of a :class:`Trainable` (``eqx.partition``) and ``static`` its non-array part.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple, Optional

import equinox as eqx
import jax
import jax.numpy as jnp

from .methods import Method
from .problems import Problem

__all__ = ["Trainable", "TermValues", "Objective", "make_term_fn", "make_residual_fn", "init_coeffs"]

HIGHEST = jax.lax.Precision.HIGHEST


class Trainable(eqx.Module):
    """What the optimizers update: the network, (lbPINN) the log-variances s_c and (inverse
    problems, :mod:`cgmpinn_jax.inverse`) the unknown coefficients' raw parameters
    ``{name: () array}``; ``coeffs`` is None for a forward problem."""

    model: Any
    log_vars: Optional[jax.Array]
    coeffs: Optional[dict] = None


def init_coeffs(problem: Problem, dtype=None) -> Optional[dict]:
    """The raw unknown coefficients of an inverse problem at their initial guesses (None for
    a forward problem)."""
    init = getattr(problem, "init_coeffs", None)
    return None if init is None else init(dtype)


def _bound(problem: Problem, tr: Trainable) -> Problem:
    """``problem`` with its operator reading the trainable coefficients (inverse problems)."""
    return problem if tr.coeffs is None else problem.bind(tr.coeffs)


class TermValues(NamedTuple):
    terms: jax.Array  # (C,) the values ReLoBRaLo balances (PDE term curriculum-weighted)
    raw: jax.Array  # (C,) unweighted PDE MSE, IC, BC (the reference's plain loss terms)
    extra: jax.Array  # () un-balanced extra objective (lbPINN regulariser, gPINN gradient term)


def _aggregate(res: tuple[jax.Array, ...], how: str) -> jax.Array:
    if how == "sum":
        return sum(jnp.mean(r**2) for r in res)
    return jnp.mean(jnp.concatenate(res) ** 2)


def make_term_fn(problem: Problem, method: Method, static) -> Callable:
    """``term_fn(params, batch, w) -> TermValues`` for ``method`` on ``problem``."""
    loss = method.loss

    def pde_residuals(problem, u, batch):
        pts, src = batch["pde"]
        if loss.grad_weight > 0:  # gPINN: the residual as a function of z (source included), and its gradient
            r, g = jax.vmap(jax.value_and_grad(lambda q: problem.residual(u, q)))(pts)
            return r, loss.grad_weight * jnp.sum(jnp.mean(g**2, axis=0))
        r = problem.pde_residuals(u, pts, src)
        return r, jnp.zeros((), r.dtype)

    def term_fn(params, batch, w):
        tr = eqx.combine(params, static)
        prob = _bound(problem, tr)
        r, extra = pde_residuals(prob, tr.model, batch)
        pde_raw, pde_w = jnp.mean(r**2), jnp.mean(w * r**2)
        cres = prob.constraint_residuals(tr.model, batch)
        cons = [_aggregate(cres[t], loss.aggregation) for t in prob.terms]
        raw = jnp.stack([pde_raw] + cons)
        terms = jnp.stack([pde_w] + cons)
        if loss.learnable_balance:
            s = tr.log_vars
            terms = 0.5 * jnp.exp(-s) * terms
            extra = extra + 0.5 * jnp.sum(jax.nn.softplus(s))
        return TermValues(terms, raw, extra)

    return term_fn


def make_residual_fn(problem: Problem, static) -> Callable:
    """``residual_fn(params, batch) -> (N,)`` PDE residuals at the collocation points."""

    def residual_fn(params, batch):
        tr = eqx.combine(params, static)
        pts, src = batch["pde"]
        return _bound(problem, tr).pde_residuals(tr.model, pts, src)

    return residual_fn


class Objective:
    """The balanced objective of one method on one problem, and its evaluations.

    ``term_fn(params, batch, w) -> TermValues`` (see :func:`make_term_fn`)."""

    def __init__(self, term_fn: Callable):
        self.term_fn = term_fn

    def __call__(self, params, w, lam, batch):
        """``(value, TermValues)`` with ``value = lam . terms + extra``."""
        tv = self.term_fn(params, batch, w)
        return jnp.dot(lam, tv.terms, precision=HIGHEST) + tv.extra, tv

    def value_and_grad(self, params, w, lam, batch):
        """``((value, TermValues), grad)`` from one forward and backward pass."""
        return jax.value_and_grad(self, has_aux=True)(params, w, lam, batch)

    def balanced_eval(self, params, w, bstate, batch, balancing):
        """One forward+backward: the term values, a ReLoBRaLo update from them, and the
        gradient of lambda . terms + extra under the new (detached) lambdas.

        Returns ``(value, grad, TermValues, lambdas, balancing_state)``."""
        tv, vjp = jax.vjp(lambda p: self.term_fn(p, batch, w), params)
        lam, bstate = balancing.update(jax.lax.stop_gradient(tv.terms), bstate)
        lam = jax.lax.stop_gradient(lam)
        zeros = TermValues(jnp.zeros_like(tv.terms), jnp.zeros_like(tv.raw), jnp.ones_like(tv.extra))
        (grad,) = vjp(zeros._replace(terms=lam.astype(tv.terms.dtype)))
        value = jnp.dot(lam, tv.terms, precision=HIGHEST) + tv.extra
        return value, grad, tv, lam, bstate
