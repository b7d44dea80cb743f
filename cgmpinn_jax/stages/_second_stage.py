"""The second optimizer stage: one protocol, one adapter per member.

Every member is driven one iteration at a time inside a jitted chunk (``lax.while_loop``),
with the objective frozen within an iteration (docs/reference-code.md §16): the engine hands it the
current value and gradient, the member returns a `StepResult`.

Members (``TrainConfig.second_stage``):

* ``"optax"`` -- `optax.lbfgs` with optax's zoom (strong-Wolfe) line search, initial
  guess 1 (the default). When its search finds no acceptable step it returns the last point
  it tried, even where the loss rose; a loss that grows past the divergence guard then ends
  the stage with the best parameters. Why this default and this behaviour (no restart):
  docs/decisions.md.
* ``"jaxopt"`` -- `jaxopt.LBFGS` with jaxopt's zoom search. jaxopt stores every
  (s, y) pair, so like torch (and Nocedal & Wright) a pair is kept only if y.s > 1e-10: a
  pair with y.s <= 0 makes later directions non-descent. Its line-search options are its own
  (``lbfgs.linesearch``, ``lbfgs.linesearch_init``, ``lbfgs.reset_on_failure``). The first
  trial step is ``lbfgs.lr`` = 1.0 (jaxopt's ``linesearch_init="increase"`` caps the step at
  it; why not the reference's 0.8: docs/decisions.md).
* ``"gauss_newton"`` -- Levenberg-Marquardt on the objective's least-squares view
  (`cgmpinn_jax.stages._gauss_newton`): one Jacobian per iteration, the damped normal system in
  kernel (Woodbury) or Gramian form, the damping adapted on the device by the gain ratio.
* ``"bfgs"``, ``"ssbfgs"``, ``"ssbroyden"`` -- dense inverse-Hessian quasi-Newton
  (`cgmpinn_jax.stages._ssbfgs`) over the raveled parameters, for networks up to
  ``dense.max_params`` parameters (an n x n matrix is stored).

Each member reads only its own options (``TrainConfig.lbfgs``, ``.dense``, ``.gauss_newton``);
the budget and the stop rule's tolerances of every member are ``TrainConfig.second``'s. Each
member counts loss+gradient evaluations per iteration (its line search's).
"""

from __future__ import annotations


import jax
import jax.numpy as jnp
import optax
from jax.flatten_util import ravel_pytree

from ._protocol import ObjectiveFn, StepResult
from ._stopping import Terminates

__all__ = ["OptaxLBFGS", "JaxoptLBFGS", "DenseQuasiNewton"]
# the Gauss-Newton member lives in `cgmpinn_jax.stages._gauss_newton`


class OptaxLBFGS(Terminates):
    """The solver of ``LBFGS()`` (the default ``backend="optax"``): L-BFGS (``optax.lbfgs``)
    with optax's zoom line search for the strong Wolfe conditions.

    Each iteration takes the two-loop L-BFGS direction from the stored curvature pairs, then
    searches along it starting from the step ``lr`` (``initial_guess_strategy="one"``). When
    the search finds no acceptable step within ``max_linesearch`` evaluations, optax returns
    the last step it tried, even one that raised the loss; the divergence guard then ends the
    stage with its best parameters (see `Stopping`).

    Its state is optax's L-BFGS state: the last ``history`` curvature pairs ``(s, y)`` and,
    stored by the zoom search, the objective's value and gradient at the current point (what
    [`stored`][cgmpinn_jax.stages.Stage.stored] returns). ``evals`` counts the line search's
    evaluations of the objective and its gradient.

    Args:
        obj_fn: the objective, ``obj_fn(params, w, lam, batch) -> (value, terms)`` with a ()
            array ``value`` (see [`Stage`][cgmpinn_jax.stages.Stage]).
        lr: the line search's first trial step (``TrainConfig.lbfgs.lr``, 1.0 by default).
        history: the number of curvature pairs kept (``lbfgs.history``).
        max_linesearch: the line search's evaluations per iteration at most
            (``lbfgs.max_linesearch``).
    """

    def __init__(self, obj_fn: ObjectiveFn, *, lr: float, history: int, max_linesearch: int):
        self.obj_fn = obj_fn
        self.solver = optax.lbfgs(
            learning_rate=lr,
            memory_size=history,
            linesearch=optax.scale_by_zoom_linesearch(
                max_linesearch_steps=max_linesearch, initial_guess_strategy="one"
            ),
        )

    def init(self, params, w, lam, batch):
        return self.solver.init(params)

    def set_point(self, state, value, grad, tv):
        return optax.tree_utils.tree_set(state, value=value, grad=grad)

    def stored(self, state, params):
        return (
            optax.tree_utils.tree_get(state, "value"),
            optax.tree_utils.tree_get(state, "grad"),
            None,
        )

    def step(self, params, state, w, lam, batch, value, grad, hyper=None):
        def value_fn(p):
            return self.obj_fn(p, w, lam, batch)[0]

        updates, new_state = self.solver.update(
            grad, state, params, value=value, grad=grad, value_fn=value_fn
        )
        info = optax.tree_utils.tree_get(new_state, "info")
        return StepResult(
            params=optax.apply_updates(params, updates),
            state=new_state,
            value=optax.tree_utils.tree_get(new_state, "value"),
            evals=jnp.asarray(getattr(info, "num_linesearch_steps", 1), jnp.int32),
        )


class JaxoptLBFGS(Terminates):
    """The solver of ``LBFGS(backend="jaxopt")``: L-BFGS (``jaxopt.LBFGS``) with
    jaxopt's own line search.

    Three changes to jaxopt's iteration: a curvature pair is kept only when ``y . s > 1e-10``
    (jaxopt stores every pair, and one with ``y . s <= 0``, from rounding near a minimum or a
    change of the objective, makes later directions non-descent); the first direction is
    scaled to length ``min(1, 1/|g|)``, as scipy and optax do (jaxopt's unit step from a
    large gradient saturates a tanh network); and, with ``reset_on_failure``, a failed line
    search drops the curvature pairs. Its state is jaxopt's ``LbfgsState``: the current value,
    gradient and loss terms (what [`stored`][cgmpinn_jax.stages.Stage.stored] returns), the
    ``history`` curvature pairs, the scaling ``gamma`` and the line-search counters. ``evals``
    counts the line search's evaluations.

    Args:
        obj_fn: the objective, ``obj_fn(params, w, lam, batch) -> (value, terms)`` with a ()
            array ``value`` (see [`Stage`][cgmpinn_jax.stages.Stage]).
        lr: the largest step the line search tries (jaxopt's ``max_stepsize``;
            ``TrainConfig.lbfgs.lr``, 1.0 by default).
        history: the number of curvature pairs kept (``lbfgs.history``).
        max_linesearch: the line search's iterations per L-BFGS iteration at most
            (``lbfgs.max_linesearch``).
        maxiter: jaxopt's iteration budget (the stage's steps; the engine, not jaxopt, stops
            the stage).
        linesearch: ``"zoom"``, ``"hager-zhang"`` or ``"backtracking"`` (``lbfgs.linesearch``).
        linesearch_init: how each search's first step is chosen: ``"increase"``, ``"max"`` or
            ``"current"`` (``lbfgs.linesearch_init``).
        reset_on_failure: restart the curvature memory (drop its pairs) after a failed line
            search (``lbfgs.reset_on_failure``).
    """

    def __init__(
        self,
        obj_fn: ObjectiveFn,
        *,
        lr: float,
        history: int,
        max_linesearch: int,
        maxiter: int,
        linesearch: str,
        linesearch_init: str,
        reset_on_failure: bool,
    ):
        import jaxopt

        self.reset_on_failure = reset_on_failure
        # value_and_grad=False: jaxopt differentiates ``fun`` itself, so the line search's
        # re-evaluation of aux at its start point (jaxopt does not pass aux along) is a
        # forward pass only, not a full loss+gradient evaluation.
        self.solver = jaxopt.LBFGS(
            fun=obj_fn,
            has_aux=True,
            maxiter=maxiter,
            tol=0.0,
            history_size=history,
            linesearch=linesearch,
            linesearch_init=linesearch_init,
            max_stepsize=lr,
            maxls=max_linesearch,
            implicit_diff=False,
            jit=True,
            unroll=False,
        )

    def init(self, params, w, lam, batch):
        return self.solver.init_state(params, w, lam, batch)

    def set_point(self, state, value, grad, tv):
        # Before the first iteration jaxopt's direction is -gamma g with gamma = 1, and its
        # zoom search caps the step at lbfgs.lr: from a PINN loss ~3e4 (|g| ~1e4) that step
        # saturates the tanh units and the failed search keeps it (seen on 1D Poisson in
        # float64: the loss rose in one iteration, then stayed stuck). As scipy and optax do,
        # the first direction is scaled to length min(1, 1/|g|).
        norm = optax.tree.norm(grad)
        gamma = jnp.where(
            state.iter_num == 0, jnp.minimum(1.0, 1.0 / jnp.maximum(norm, 1e-30)), state.gamma
        )
        return state._replace(
            value=value, grad=grad, aux=tv, error=norm, gamma=gamma.astype(state.gamma.dtype)
        )

    def stored(self, state, params):
        return state.value, state.grad, state.aux

    def step(self, params, state, w, lam, batch, value, grad, hyper=None):
        n0 = state.num_linesearch_iter
        out = self.solver.update(params, state, w, lam, batch)
        new = self._keep_positive_curvature(
            state,
            out.state,
            optax.tree.sub(out.params, params),
            optax.tree.sub(out.state.grad, grad),
        )
        if self.reset_on_failure:
            # a failed line search means the quasi-Newton model is off: restart it from the
            # scaled identity (its curvature pairs are dropped)
            def zero(t):
                return jax.tree_util.tree_map(
                    lambda x: jnp.where(new.failed_linesearch, jnp.zeros_like(x), x), t
                )

            new = new._replace(
                s_history=zero(new.s_history),
                y_history=zero(new.y_history),
                rho_history=zero(new.rho_history),
            )
        # each line-search iteration is one loss+gradient evaluation
        return StepResult(
            out.params, new, new.value, jnp.asarray(new.num_linesearch_iter - n0, jnp.int32)
        )

    @staticmethod
    def _keep_positive_curvature(old, new, s_vec, y_vec):
        """The new state, but with the old curvature memory where y.s <= 1e-10 (the slot
        that would have been overwritten keeps its older pair)."""
        keep = optax.tree.vdot(s_vec, y_vec) > 1e-10

        def pick(a, b):
            return jax.tree_util.tree_map(lambda x, y: jnp.where(keep, x, y), a, b)

        return new._replace(
            s_history=pick(new.s_history, old.s_history),
            y_history=pick(new.y_history, old.y_history),
            rho_history=pick(new.rho_history, old.rho_history),
            gamma=jnp.where(keep, new.gamma, old.gamma),
        )


class DenseQuasiNewton(Terminates):
    """The solver of the dense quasi-Newton stages, ``BFGS()``, ``SSBFGS()`` and
    ``SSBroyden()``: the optimizer of `ssbfgs` on the raveled
    parameters.

    The inverse Hessian is stored as a dense ``(n, n)`` matrix of the parameters' dtype, so
    the member is meant for small networks in float64: ``8 n^2`` bytes, 3.2 GB at
    ``n = 20 000``. Each iteration is one strong-Wolfe `line_search`
    along ``-H g`` and one (self-scaled) update of ``H``. Its state is the optimizer's (see
    `ssbfgs`): ``H``, the value and the flat gradient at the current
    point, and the line search's counters; ``evals`` counts the line search's evaluations.

    Args:
        obj_fn: the objective, ``obj_fn(params, w, lam, batch) -> (value, terms)`` with a ()
            array ``value`` (see [`Stage`][cgmpinn_jax.stages.Stage]).
        method: ``"bfgs"``, ``"ssbfgs"`` (Al-Baali's self-scaled BFGS), ``"ssbfgs_ol"``
            (Oren-Luenberger scaling) or ``"ssbroyden"`` (self-scaled Broyden).
        max_params: the largest number of parameters allowed (``TrainConfig.dense.max_params``).
        max_linesearch: the line search's evaluations per iteration at most
            (``dense.max_linesearch``).
    """

    def __init__(self, obj_fn: ObjectiveFn, *, method: str, max_params: int, max_linesearch: int):
        from . import _ssbfgs as ssbfgs

        self.obj_fn = obj_fn
        self.max_params = max_params
        self.opt = ssbfgs.ssbfgs(
            method=method, max_params=max_params, max_linesearch=max_linesearch
        )

    def init(self, params, w, lam, batch):
        x, _ = ravel_pytree(params)
        return self.opt.init(x, jnp.asarray(jnp.inf, x.dtype), jnp.zeros_like(x))

    def set_point(self, state, value, grad, tv):
        return self.opt.set_point(state, value, ravel_pytree(grad)[0])

    def stored(self, state, params):
        return state.value, ravel_pytree(params)[1](state.grad), None

    def step(self, params, state, w, lam, batch, value, grad, hyper=None):
        x, unravel = ravel_pytree(params)

        def value_and_grad(xf):
            v, g = jax.value_and_grad(lambda p: self.obj_fn(p, w, lam, batch)[0])(unravel(xf))
            return v, ravel_pytree(g)[0]

        x_new, new = self.opt.step(value_and_grad, x, state)
        return StepResult(unravel(x_new), new, new.value, jnp.asarray(new.n_evals, jnp.int32))
