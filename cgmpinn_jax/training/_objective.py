"""The training objective: per-term losses of a method on a problem, and their balanced sum.

``objective = lambda . terms + extra`` where ``terms`` are the ReLoBRaLo-balanced values
(the PDE term curriculum-weighted, ``mean(w r^2)``; the constraint terms as the method
aggregates their pieces) and ``extra`` the un-balanced part of a method's loss (lbPINN's
regulariser, gPINN's gradient term). All functions are pure and jittable; the parameters are
the array part of a `Trainable` (``eqx.partition``) and ``static`` its non-array part.

The same objective has a least-squares view (`LeastSquares`, for the Gauss-Newton
member): a residual vector ``r`` whose squared norm is the objective, one row per point
scaled by the square root of the weight the scalar objective gives it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, NamedTuple, Optional, cast

import equinox as eqx
import jax
import jax.flatten_util
import jax.numpy as jnp

from ..methods import Method
from ..problems import Problem

if TYPE_CHECKING:
    from ..inverse import InverseProblem

__all__ = [
    "Trainable",
    "TermValues",
    "Objective",
    "LeastSquares",
    "make_term_fn",
    "make_residual_fn",
    "init_coeffs",
]

HIGHEST = jax.lax.Precision.HIGHEST


class Trainable(eqx.Module):
    """What the optimizers update: the network, (lbPINN) the log-variances s_c and (inverse
    problems, `cgmpinn_jax.inverse`) the unknown coefficients' raw parameters
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
    # trainable coefficients come only with an inverse problem
    return problem if tr.coeffs is None else cast("InverseProblem", problem).bind(tr.coeffs)


class TermValues(NamedTuple):
    terms: jax.Array  # (C,) the values ReLoBRaLo balances (PDE term curriculum-weighted)
    raw: jax.Array  # (C,) unweighted PDE MSE, IC, BC (the reference's plain loss terms)
    extra: jax.Array  # () un-balanced extra objective (lbPINN regulariser, gPINN gradient term)


def _aggregate(res: tuple[jax.Array, ...], how: str) -> jax.Array:
    if how == "sum":
        # res is never empty, so the sum is an array, not sum's start 0
        return cast(jax.Array, sum(jnp.mean(r**2) for r in res))
    return jnp.mean(jnp.concatenate(res) ** 2)


def _residual_and_gradient(problem: Problem, u, q):
    """gPINN's pieces at one point: the residual and its gradient in z (``(E,)`` and ``(E, d)``
    on a system)."""
    if not problem.is_system:
        return jax.value_and_grad(lambda z: problem.residual(u, z))(q)
    return problem.residual(u, q), jax.jacfwd(lambda z: problem.residual(u, z))(q)


def pde_squares(r: jax.Array) -> jax.Array:
    """``(N,)`` squared residual per point: ``r^2``, or ``sum_e r_e^2`` over a system's
    equations."""
    return r**2 if r.ndim == 1 else jnp.sum(r**2, axis=-1)


def make_term_fn(problem: Problem, method: Method, static) -> Callable:
    """``term_fn(params, batch, w) -> TermValues`` for ``method`` on ``problem``.

    On a system the PDE term is the mean over points of ``w_i sum_e r_ie^2`` (every equation's
    mean square, summed; one weight per point, from the mixture fitted to the norm of the
    residual vector, see `make_residual_fn`)."""
    loss = method.loss

    def pde_residuals(problem, u, batch):
        pts, src = batch["pde"]
        if (
            loss.grad_weight > 0
        ):  # gPINN: the residual as a function of z (source included), and its gradient
            r, g = jax.vmap(lambda q: _residual_and_gradient(problem, u, q))(pts)
            return r, loss.grad_weight * jnp.sum(jnp.mean(g**2, axis=0))
        r = problem.pde_residuals(u, pts, src)
        return r, jnp.zeros((), r.dtype)

    def term_fn(params, batch, w):
        tr = eqx.combine(params, static)
        prob = _bound(problem, tr)
        r, extra = pde_residuals(prob, tr.model, batch)
        if r.ndim == 1:  # one equation: the expression of the faithful runs, bit for bit
            pde_raw, pde_w = jnp.mean(r**2), jnp.mean(w * r**2)
        else:  # a system: every equation's squares, one weight per point or per point and equation
            sq = pde_squares(r)
            pde_raw = jnp.mean(sq)
            pde_w = jnp.mean(w * sq) if w.ndim == 1 else jnp.mean(jnp.sum(w * r**2, axis=-1))
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


def make_residual_fn(problem: Problem, static, *, per_equation: bool = False) -> Callable:
    """``residual_fn(params, batch) -> (N,)`` PDE residuals at the collocation points, the
    weighting's input. On a system, the norm of each point's residual vector
    ``|r_i| = sqrt(sum_e r_ie^2)``, or with ``per_equation`` the ``(N, E)`` residuals, one
    mixture per equation (docs/problems-from-data.md: the two choices and their measurement)."""

    def residual_fn(params, batch):
        tr = eqx.combine(params, static)
        pts, src = batch["pde"]
        r = _bound(problem, tr).pde_residuals(tr.model, pts, src)
        return r if r.ndim == 1 or per_equation else jnp.sqrt(pde_squares(r))

    return residual_fn


class Objective:
    """The balanced objective of one method on one problem, and its evaluations.

    ``term_fn(params, batch, w) -> TermValues`` (see `make_term_fn`)."""

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
        zeros = TermValues(
            jnp.zeros_like(tv.terms), jnp.zeros_like(tv.raw), jnp.ones_like(tv.extra)
        )
        (grad,) = vjp(zeros._replace(terms=lam.astype(tv.terms.dtype)))
        value = jnp.dot(lam, tv.terms, precision=HIGHEST) + tv.extra
        return value, grad, tv, lam, bstate


class LeastSquares:
    """The objective of `make_term_fn` as weighted least squares: ``|r|^2 = lam . terms + extra``.

    Rows (``N`` collocation points, ``lam`` the balancing weights, ``w`` the per-point PDE
    weights of CGMPINN / GMMPINN / CLPINN, uniform otherwise):

    * PDE: ``sqrt(lam_pde * w_i / N) r_i`` (on a system one row per point and equation, ``r_ie``);
    * gPINN: also ``sqrt(grad_weight / N) dr_i/dz_j`` for every coordinate ``j`` (the extra
      term is not balanced, so no lambda);
    * constraint term ``c`` with ``aggregation="sum"`` (a sum of per-piece MSEs):
      ``sqrt(lam_c / n_piece) r_p`` for every piece; with ``"concat"`` (one MSE over the
      concatenated pieces) ``sqrt(lam_c / n_term) r_p``;
    * an inverse problem's observations are its ``"obs"`` constraint term (their piece
      already carries ``sqrt(obs_weight)``), so rows ``sqrt(lam_obs * obs_weight / M) (u - y)``.

    Unknown coefficients (inverse problems) are parameters like the network's. lbPINN's
    learned variances make the objective no sum of squares: `LeastSquares` refuses it.

    Every row depends on one point, so the Jacobian is a ``vmap`` over points of one row's
    gradient with respect to the raveled parameters (``jacobian``): ``O(rows)`` network
    passes, not the ``O(rows^2)`` of ``jax.jacrev`` of the whole vector.
    """

    def __init__(self, problem: Problem, method: Method, static):
        if method.loss.learnable_balance:
            raise ValueError(
                f"method {method.name!r} learns its loss weights "
                "(log-variances s_c: 0.5 exp(-s_c) L_c + "
                "softplus(s_c)), which is not a sum of squares, so a GaussNewton() stage cannot "
                "train it; use LBFGS(), BFGS(), SSBFGS() or SSBroyden()"
            )
        self.problem, self.method, self.static = problem, method, static

    def _groups(self, batch, w, lam):
        """``[(row_fn(tr, problem, point, target, scale) -> (k,), points, targets, scales)]``."""
        loss = self.method.loss
        pts, src = batch["pde"]
        n = pts.shape[0]
        pde_scale = jnp.sqrt(lam[0] * w / n)

        if loss.grad_weight > 0:
            gw = loss.grad_weight

            def pde_row(tr, prob, z, f, s):
                r, g = _residual_and_gradient(prob, tr.model, z)
                return jnp.concatenate(
                    [s * jnp.reshape(r, -1), jnp.sqrt(gw / n) * jnp.reshape(g, -1)]
                )
        else:

            def pde_row(tr, prob, z, f, s):
                return s * prob.pde_residuals(tr.model, z[None], f[None])

        groups = [(pde_row, pts, src, pde_scale)]
        pieces = self.problem.pieces()
        for c, term in enumerate(self.problem.terms, start=1):
            n_term = sum(p.shape[0] for p, _ in batch[term])
            for piece, (p, t) in zip(pieces[term], batch[term]):
                m = p.shape[0] if loss.aggregation == "sum" else n_term
                scale = jnp.broadcast_to(jnp.sqrt(lam[c] / m), (p.shape[0],))

                def row(tr, prob, z, y, s, piece=piece):
                    return s * piece.residual(prob.as_fields(tr.model), z[None], y[None])

                groups.append((row, p, t, scale))
        return groups

    def _row_fn(self, unravel, fn):
        def f(x, z, y, s):
            tr = eqx.combine(unravel(x), self.static)
            return fn(tr, _bound(self.problem, tr), z, y, s)

        return f

    def residuals(self, params, batch, w, lam) -> jax.Array:
        """``(M,)`` the residual vector (rows in the order PDE, then each term's pieces)."""
        x, unravel = jax.flatten_util.ravel_pytree(params)
        rows = [
            jax.vmap(self._row_fn(unravel, fn), in_axes=(None, 0, 0, 0))(x, p, t, s).reshape(-1)
            for fn, p, t, s in self._groups(batch, w, lam)
        ]
        return jnp.concatenate(rows)

    def jacobian(self, params, batch, w, lam) -> tuple[jax.Array, jax.Array]:
        """``(r, J)``: the residual vector ``(M,)`` and its Jacobian ``(M, P)`` with respect to
        the raveled parameters (``jax.flatten_util.ravel_pytree`` order)."""
        x, unravel = jax.flatten_util.ravel_pytree(params)
        rs, js = [], []
        for fn, p, t, s in self._groups(batch, w, lam):
            f = self._row_fn(unravel, fn)
            jac = jax.jacrev(lambda x, z, y, s, f=f: (f(x, z, y, s),) * 2, has_aux=True)
            J, r = jax.vmap(jac, in_axes=(None, 0, 0, 0))(x, p, t, s)
            rs.append(r.reshape(-1))
            js.append(J.reshape(-1, x.shape[0]))
        return jnp.concatenate(rs), jnp.concatenate(js)

    def n_rows(self, batch) -> int:
        """The number of rows ``M`` (from shapes only)."""
        n_eq = len(self.problem.equations)
        n = (
            batch["pde"][0].shape[0]
            * n_eq
            * (1 + (self.problem.dim if self.method.loss.grad_weight > 0 else 0))
        )
        return n + sum(p.shape[0] for term in self.problem.terms for p, _ in batch[term])
