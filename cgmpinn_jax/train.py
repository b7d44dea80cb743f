"""The two-stage training engine: optax Adam, then L-BFGS (jaxopt, or optax), all jitted.

``train(problem, method, config, key=...)`` runs what the reference scripts run
(REFERENCE §1.4-1.7): Adam for ``adam_steps`` steps, then one L-BFGS iteration per outer
step for ``lbfgs_steps`` steps, with the curriculum parameter tau(k) on one global 1-based
step counter k (k_max = adam_steps + lbfgs_steps) and a refresh of the per-point PDE weights
every k_upd steps.

Refresh schedule (REFERENCE §1.6), see :func:`refresh_schedule`:

* Adam: refresh before the step when ``e % k_upd == 0`` (e the 0-based epoch), at
  tau(e + 1).
* L-BFGS: one refresh at the stage start with Adam's last tau (tau(adam_steps)), then after
  iteration i when ``i % k_upd == 0``, at tau(adam_steps + i + 1). For Fisher-KPP's CGMPINN
  the refresh comes *before* the step when ``i % k_upd == 0`` (the reference's start refit is
  then immediately redone, so we skip it).

Each stage is a host loop over *chunks*; a chunk is one jitted call that refreshes the
weights and runs up to k_upd steps in a ``lax.while_loop``. The host is touched once per
chunk (progress printing, history collection).

Deliberate deviations from the reference, all documented in REFERENCE §8 / DESIGN.md:

* Within one L-BFGS iteration the objective is frozen: ReLoBRaLo is updated once per
  outer iteration (at its start, from the current term losses), never inside the line
  search. When the weights w or the lambdas change, the solver's stored value and gradient
  are recomputed under the new objective while its curvature memory is kept. Otherwise an
  iteration starts from the value and gradient its line search ended with (plus one
  forward pass for the per-term losses that the guard and the history record), so an
  iteration whose first trial step is accepted costs one loss+gradient evaluation. With
  ReLoBRaLo in the L-BFGS stage the lambdas change every iteration, which costs one more
  and makes the solver's curvature pairs mix two objectives (measured: 6-7 evaluations per
  iteration against ~4 without ReLoBRaLo). ``relobralo_lbfgs_apply="refresh"`` keeps
  ReLoBRaLo's state moving every iteration but gives the objective new lambdas only at the
  weight refreshes (every k_upd iterations); not the default: the released code updates
  the lambdas at every iteration, and on the 1D Poisson headline (5 seeds) this option gave
  5.5 evaluations per iteration but a median relative e2 of 8.7e-4 against 3.5e-4.
* Two L-BFGS backends behind one small interface: ``optax.lbfgs`` with optax's zoom
  (strong-Wolfe) line search, initial guess 1 (the default), and ``jaxopt.LBFGS`` with
  jaxopt's zoom search (``lbfgs_backend="jaxopt"``; jaxopt stores every (s, y) pair, so
  like torch we keep a pair only if y.s > 1e-10). The default is optax because it measured
  better: on the 1D Poisson CGMPINN headline run (seed 1224, float32, this repo's 2-core
  CPU) optax reached relative e2 1.3e-4 and jaxopt 1.4e-3, jaxopt's line search failing
  from a loss ~3e-3 on (benchmarks/results/headline.md has the per-seed runs).
* Guards: a non-finite loss, or a loss that grows beyond ``divergence_ratio`` x the best
  unweighted loss seen in the stage, stops the stage and restores the best parameters of
  that stage (by the unweighted loss PDE + IC + BC). L-BFGS also stops when max|g| <=
  ``lbfgs_gtol`` or when the best unweighted loss has not improved by a relative
  ``lbfgs_ftol`` (1e-3) for ``lbfgs_tol_patience`` (1000) iterations: in float32 the line
  search cannot resolve the decrease any more once the loss has plateaued (measured on 1D
  Poisson: no gain from L-BFGS iteration ~3000 to 10000 while every iteration burned ~20
  evaluations in failing line searches). A stage that runs its budget keeps its final
  parameters, as the reference does.
* Line search: at most ``lbfgs_max_linesearch`` = 10 steps (torch allows 25; in the
  plateau every extra step is wasted). The first trial step is 1.0 (``lbfgs_lr``, jaxopt's
  ``linesearch_init="increase"``): the reference's 0.8 is a torch ``lr`` that its strong-Wolfe
  search may extrapolate beyond, while jaxopt caps the step at this value, and a cap of 0.8
  made its zoom search fail far more often in our measurements.
"""

from __future__ import annotations

import dataclasses
import enum
import sys
import time
from typing import Any, Callable, NamedTuple, Optional

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax

from . import balancing as balancing_lib
from . import metrics as metrics_lib
from . import nets
from . import weighting as weighting_lib
from .methods import Method, get_method
from .problems import Problem, get_problem

__all__ = ["TrainConfig", "TrainResult", "StageStatus", "train", "refresh_schedule", "build_model", "Chunk"]


class StageStatus(enum.IntEnum):
    """Why a training stage stopped."""

    COMPLETED = 0  # ran its whole budget
    NONFINITE = 1  # a non-finite loss: best parameters restored
    DIVERGED = 2  # loss > divergence_ratio x best: best parameters restored
    GRAD_TOL = 3  # L-BFGS: max|g| <= lbfgs_gtol
    LOSS_TOL = 4  # L-BFGS: the unweighted loss did not improve by lbfgs_ftol (relative) in lbfgs_tol_patience iterations
    SKIPPED = 5  # zero steps requested


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """Training options. ``None`` means "the problem's / method's reference default".

    Defaults are those of the reference code (REFERENCE §1.4-1.7, §2.7)."""

    adam_steps: Optional[int] = None
    lbfgs_steps: Optional[int] = None
    k_upd: Optional[int] = None
    width: Optional[int] = None
    depth: Optional[int] = None
    adam_lr: float = 1e-3
    lbfgs_lr: float = 1.0  # the line search's initial (and largest) step; see the module docstring
    lbfgs_history: int = 100
    lbfgs_backend: str = "optax"  # or "jaxopt"; see the module docstring
    lbfgs_max_linesearch: int = 10
    lbfgs_linesearch: str = "zoom"
    lbfgs_linesearch_init: str = "increase"
    lbfgs_reset_on_failure: bool = False
    lbfgs_gtol: float = 1e-7
    lbfgs_ftol: float = 1e-3
    lbfgs_tol_patience: int = 1000
    divergence_ratio: float = 1e6
    # CGM weighting
    n_components: Any = 4  # or "bic": choose K in 1..6 by BIC at each refresh
    beta: float = 1.0
    eps: float = 1e-6
    c_sat: float = 0.8
    variance_factor: bool = True
    # ReLoBRaLo: None = the method's default ("both", "adam" or "none"), or one of those, or a bool
    relobralo: Any = None
    relobralo_alpha: float = 0.999
    relobralo_rho: float = 0.99
    relobralo_temperature: float = 1.0
    relobralo_variant: str = "reference"
    # ReLoBRaLo in the L-BFGS stage: "iteration" = new lambdas in the objective every
    # iteration (the default; costs one loss+gradient evaluation per iteration and makes the
    # solver's curvature pairs mix two objectives); "refresh" = ReLoBRaLo's state still
    # moves every iteration (from the accepted point's losses), but the objective takes its
    # lambdas only at each weight refresh (every k_upd iterations)
    relobralo_lbfgs_apply: str = "iteration"

    def __post_init__(self):
        for name in ("adam_steps", "lbfgs_steps"):
            v = getattr(self, name)
            if v is not None and (not isinstance(v, (int, np.integer)) or v < 0):
                raise ValueError(f"TrainConfig.{name} must be a non-negative int, got {v!r}")
        if self.n_components != "bic" and (not isinstance(self.n_components, (int, np.integer)) or self.n_components < 1):
            raise ValueError(f"TrainConfig.n_components must be a positive int or 'bic', got {self.n_components!r}")
        for name in ("k_upd", "width", "depth", "lbfgs_history", "lbfgs_max_linesearch", "lbfgs_tol_patience"):
            v = getattr(self, name)
            if v is not None and (not isinstance(v, (int, np.integer)) or v < 1):
                raise ValueError(f"TrainConfig.{name} must be a positive int, got {v!r}")
        for name in ("adam_lr", "lbfgs_lr", "eps", "divergence_ratio", "relobralo_temperature"):
            if not getattr(self, name) > 0:
                raise ValueError(f"TrainConfig.{name} must be > 0, got {getattr(self, name)!r}")
        if self.beta < 0:
            raise ValueError(f"TrainConfig.beta must be >= 0, got {self.beta}")
        if not 0 < self.c_sat <= 1:
            raise ValueError(f"TrainConfig.c_sat must be in (0, 1], got {self.c_sat}")
        if self.lbfgs_backend not in ("jaxopt", "optax"):
            raise ValueError(f"TrainConfig.lbfgs_backend must be 'jaxopt' or 'optax', got {self.lbfgs_backend!r}")
        if self.lbfgs_linesearch not in ("zoom", "hager-zhang", "backtracking"):
            raise ValueError(f"TrainConfig.lbfgs_linesearch must be 'zoom', 'hager-zhang' or 'backtracking', got {self.lbfgs_linesearch!r}")
        if self.lbfgs_linesearch_init not in ("increase", "max", "current"):
            raise ValueError(f"TrainConfig.lbfgs_linesearch_init must be 'increase', 'max' or 'current', got {self.lbfgs_linesearch_init!r}")
        if self.relobralo_lbfgs_apply not in ("iteration", "refresh"):
            raise ValueError(f"TrainConfig.relobralo_lbfgs_apply must be 'iteration' or 'refresh', got {self.relobralo_lbfgs_apply!r}")
        if self.relobralo not in (None, True, False, "both", "adam", "none"):
            raise ValueError(f"TrainConfig.relobralo must be None, a bool, 'both', 'adam' or 'none', got {self.relobralo!r}")

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


# ----------------------------------------------------------------------------------------
# resolved settings


@dataclasses.dataclass(frozen=True)
class _Setup:
    problem: Problem
    method: Method
    config: TrainConfig
    adam_steps: int
    lbfgs_steps: int
    k_upd: int
    width: int
    depth: int
    relobralo_stages: str
    refit_before_step: bool

    @property
    def k_max(self) -> int:
        return self.adam_steps + self.lbfgs_steps

    @property
    def n_terms(self) -> int:
        return len(self.problem.loss_terms)


def _resolve(problem: Problem, method: Method, cfg: TrainConfig) -> _Setup:
    d = problem.defaults
    relo = cfg.relobralo
    if relo is None:
        relo = method.relobralo_stages(problem)
    elif relo is True:
        relo = "both"
    elif relo is False:
        relo = "none"
    return _Setup(
        problem=problem,
        method=method,
        config=cfg,
        adam_steps=d.adam_steps if cfg.adam_steps is None else int(cfg.adam_steps),
        lbfgs_steps=d.lbfgs_steps if cfg.lbfgs_steps is None else int(cfg.lbfgs_steps),
        k_upd=method.k_upd(problem) if cfg.k_upd is None else int(cfg.k_upd),
        width=d.width if cfg.width is None else cfg.width,
        depth=d.depth if cfg.depth is None else cfg.depth,
        relobralo_stages=relo,
        refit_before_step=method.refit_before_lbfgs_step(problem),
    )


class Chunk(NamedTuple):
    """One jitted call: refresh the weights at tau(``tau_k``), then run ``n_steps`` steps."""

    stage: str  # "adam" or "lbfgs"
    tau_k: int  # global step whose tau is used at the refresh
    first_k: int  # global step k of the chunk's first step
    n_steps: int


def refresh_schedule(adam_steps: int, lbfgs_steps: int, k_upd: int, *, refit_before_step: bool = False) -> list[Chunk]:
    """The chunks of a run, i.e. where the weights are refreshed (REFERENCE §1.6).

    >>> [c.tau_k for c in refresh_schedule(400, 401, 200)]
    [1, 201, 400, 401, 601]
    """
    chunks = []
    for e in range(0, adam_steps, k_upd):
        chunks.append(Chunk("adam", e + 1, e + 1, min(k_upd, adam_steps - e)))
    if lbfgs_steps > 0:
        base = adam_steps
        if refit_before_step:
            for i in range(0, lbfgs_steps, k_upd):
                chunks.append(Chunk("lbfgs", base + i + 1, base + i + 1, min(k_upd, lbfgs_steps - i)))
        else:
            # start refit with Adam's last tau, then a refit after every i % k_upd == 0
            chunks.append(Chunk("lbfgs", base, base + 1, 1))
            for i in range(0, lbfgs_steps - 1, k_upd):
                chunks.append(Chunk("lbfgs", base + i + 1, base + i + 2, min(k_upd, lbfgs_steps - 1 - i)))
    return chunks


# ----------------------------------------------------------------------------------------
# model and loss


def build_model(problem: Problem, method: Method, key: jax.Array, *, width: int, depth: int):
    """The method's network for ``problem``."""
    kw = dict(init=method.init(problem), input_map=method.input_map(problem))
    if method.network == "mlp":
        return nets.mlp(key, problem.dim, width, depth, **kw)
    if method.network == "lnn":
        return nets.lnn_pinn(key, problem.dim, width, depth, **kw)
    return nets.star_pinn(key, problem.dim, width, **kw)


class Trainable(eqx.Module):
    """What the optimizers update: the network and (lbPINN) the log-variances s_c."""

    model: Any
    log_vars: Optional[jax.Array]


class TermValues(NamedTuple):
    terms: jax.Array  # (C,) the values ReLoBRaLo balances (PDE term curriculum-weighted)
    raw: jax.Array  # (C,) unweighted PDE MSE, IC, BC (the reference's plain loss terms)
    extra: jax.Array  # () un-balanced extra objective (lbPINN regulariser, gPINN gradient term)


def _aggregate(res: tuple[jax.Array, ...], how: str) -> jax.Array:
    if how == "sum":
        return sum(jnp.mean(r**2) for r in res)
    return jnp.mean(jnp.concatenate(res) ** 2)


def make_term_fn(setup: _Setup, static) -> Callable:
    """``term_fn(params, batch, w) -> TermValues``; objective = lambdas . terms + extra."""
    problem, method = setup.problem, setup.method

    def term_fn(params, batch, w):
        tr = eqx.combine(params, static)
        u = tr.model
        pts, src = batch["pde"]
        if method.grad_weight > 0:
            # gPINN: the residual as a function of z (source included), and its gradient
            def r_and_grad(z):
                r, g = jax.value_and_grad(lambda q: problem.residual(u, q))(z)
                return r, g

            r, g = jax.vmap(r_and_grad)(pts)
            extra = method.grad_weight * jnp.sum(jnp.mean(g**2, axis=0))
        else:
            r = problem.pde_residuals(u, pts, src)
            extra = jnp.zeros((), r.dtype)
        pde_raw = jnp.mean(r**2)
        pde_w = jnp.mean(w * r**2)
        cres = problem.constraint_residuals(u, batch)
        cons = [_aggregate(cres[t], method.aggregation) for t in problem.terms]
        raw = jnp.stack([pde_raw] + cons)
        terms = jnp.stack([pde_w] + cons)
        if method.learnable_balance:
            s = tr.log_vars
            terms = 0.5 * jnp.exp(-s) * terms
            extra = extra + 0.5 * jnp.sum(jax.nn.softplus(s))
        return TermValues(terms, raw, extra)

    return term_fn


def make_residual_fn(setup: _Setup, static) -> Callable:
    problem = setup.problem

    def residual_fn(params, batch):
        u = eqx.combine(params, static).model
        pts, src = batch["pde"]
        return problem.pde_residuals(u, pts, src)

    return residual_fn


class Hyper(NamedTuple):
    """Array-valued hyperparameters: chunk functions take them as (traceable) inputs so a
    sweep can vmap over them (see :mod:`cgmpinn_jax.sweep`)."""

    beta: jax.Array
    eps: jax.Array
    c_sat: jax.Array
    adam_lr: jax.Array

    @classmethod
    def from_config(cls, cfg: "TrainConfig", dtype=None) -> "Hyper":
        dtype = dtype or jnp.zeros(()).dtype
        return cls(*(jnp.asarray(getattr(cfg, f), dtype) for f in cls._fields))


def _make_weighting(setup: _Setup, hyper: Hyper):
    cfg, kind = setup.config, setup.method.weighting
    if kind == "cgm":
        return weighting_lib.cgm_weighting(
            n_components=cfg.n_components, beta=hyper.beta, eps=hyper.eps, variance_factor=cfg.variance_factor
        )
    if kind == "gmm":
        return weighting_lib.gmmpinn_weighting(n_components=cfg.n_components, beta=hyper.beta, eps=hyper.eps)
    if kind == "cl":
        return weighting_lib.clpinn_weighting(beta=hyper.beta, eps=hyper.eps)
    return weighting_lib.uniform_weighting()


def _make_balancing(setup: _Setup):
    cfg = setup.config
    if setup.relobralo_stages == "none":
        return balancing_lib.no_balancing(setup.n_terms)
    return balancing_lib.relobralo(
        setup.n_terms,
        alpha=cfg.relobralo_alpha,
        temperature=cfg.relobralo_temperature,
        rho=cfg.relobralo_rho,
        history_size=max(1, setup.k_max),
        variant=cfg.relobralo_variant,
    )


# ----------------------------------------------------------------------------------------
# state and results


class Carry(eqx.Module):
    """Everything a chunk updates (a pytree)."""

    params: Any
    opt: Any
    wstate: Any
    bstate: Any
    lambdas: jax.Array
    best_params: Any
    best_raw: jax.Array
    status: jax.Array  # int32 StageStatus of the current stage
    stall: jax.Array  # int32 consecutive small-change L-BFGS iterations


class History(NamedTuple):
    """Per-step records (one row per outer step, like the reference's loss curve)."""

    k: np.ndarray  # (S,) global step
    loss: np.ndarray  # (S,) objective at the start of the step (as the reference logs it)
    terms: np.ndarray  # (S, C) balanced terms (PDE curriculum-weighted)
    raw: np.ndarray  # (S, C) unweighted terms
    lambdas: np.ndarray  # (S, C) ReLoBRaLo weights used in the step
    evals: np.ndarray  # (S,) loss+gradient evaluations in the step
    refresh_k: np.ndarray  # (R,) tau_k of each refresh
    refresh_tau: np.ndarray  # (R,)
    refresh_spread: np.ndarray  # (R,) max(w)/min(w) after the refresh
    refresh_status: np.ndarray  # (R,) weighting status code (0 = fit used)
    snapshots: dict  # refresh index -> weights (N,), a few refreshes only

    def to_dict(self) -> dict:
        d = {k: np.asarray(v).tolist() for k, v in self._asdict().items() if k != "snapshots"}
        d["snapshots"] = {str(k): np.asarray(v).tolist() for k, v in self.snapshots.items()}
        return d


@dataclasses.dataclass
class TrainResult:
    """The outcome of :func:`train`."""

    problem: Problem
    method: Method
    config: TrainConfig
    model: Any  # the trained network (an equinox Module; call it on one point)
    log_vars: Optional[np.ndarray]  # lbPINN's s_c
    metrics: metrics_lib.Metrics
    e_loss: float  # the method's training objective at the end (REFERENCE §3)
    history: History
    adam_status: StageStatus
    lbfgs_status: StageStatus
    compile_seconds: float
    run_seconds: float
    adam_steps: int
    lbfgs_steps: int
    k_upd: int
    relobralo: str
    seed: Optional[int] = None
    batch: Any = None  # the training points

    @property
    def evals_per_lbfgs_iteration(self) -> float:
        h = self.history
        n_adam = int(np.sum(h.k <= self.adam_steps))
        e = h.evals[n_adam:]
        return float(np.mean(e)) if e.size else float("nan")

    def predict(self, points) -> np.ndarray:
        pts = jnp.asarray(points, dtype=jnp.zeros(()).dtype)
        return np.asarray(jax.vmap(self.model)(pts))

    def summary(self) -> dict:
        return {
            "problem": self.problem.name,
            "method": self.method.name,
            **self.metrics.as_dict(),
            "e_loss": self.e_loss,
            "adam_status": self.adam_status.name,
            "lbfgs_status": self.lbfgs_status.name,
            "compile_seconds": self.compile_seconds,
            "run_seconds": self.run_seconds,
            "adam_steps": self.adam_steps,
            "lbfgs_steps": self.lbfgs_steps,
            "k_upd": self.k_upd,
            "relobralo": self.relobralo,
            "evals_per_lbfgs_iteration": self.evals_per_lbfgs_iteration,
            "seed": self.seed,
        }


# ----------------------------------------------------------------------------------------
# L-BFGS backends


def _tree_max_abs(t) -> jax.Array:
    return jnp.max(jnp.stack([jnp.max(jnp.abs(x)) for x in jax.tree_util.tree_leaves(t)]))


class _Lbfgs:
    """A thin interface over jaxopt.LBFGS / optax.lbfgs driven one iteration at a time."""

    def __init__(self, setup: _Setup, obj_fn: Callable):
        cfg = setup.config
        self.backend = cfg.lbfgs_backend
        self.obj_fn = obj_fn  # (params, w, lambdas, batch) -> (value, TermValues)
        self.reset_on_failure = cfg.lbfgs_reset_on_failure
        if self.backend == "jaxopt":
            import jaxopt

            # value_and_grad=False: jaxopt differentiates ``fun`` itself, so the line search's
            # re-evaluation of aux at its start point (jaxopt does not pass aux along) is a
            # forward pass only, not a full loss+gradient evaluation.
            self.solver = jaxopt.LBFGS(
                fun=obj_fn,
                has_aux=True,
                maxiter=max(1, setup.lbfgs_steps),
                tol=0.0,
                history_size=cfg.lbfgs_history,
                linesearch=cfg.lbfgs_linesearch,
                linesearch_init=cfg.lbfgs_linesearch_init,
                max_stepsize=cfg.lbfgs_lr,
                maxls=cfg.lbfgs_max_linesearch,
                implicit_diff=False,
                jit=True,
                unroll=False,
            )
        else:
            self.solver = optax.lbfgs(
                learning_rate=cfg.lbfgs_lr,
                memory_size=cfg.lbfgs_history,
                linesearch=optax.scale_by_zoom_linesearch(max_linesearch_steps=cfg.lbfgs_max_linesearch, initial_guess_strategy="one"),
            )

    def init(self, params, w, lam, batch):
        if self.backend == "jaxopt":
            return self.solver.init_state(params, w, lam, batch)
        return self.solver.init(params)

    def set_point(self, state, value, grad, aux):
        """Replace the stored value/gradient (after the objective changed)."""
        if self.backend == "jaxopt":
            return state._replace(value=value, grad=grad, aux=aux, error=optax.tree.norm(grad))
        return optax.tree_utils.tree_set(state, value=value, grad=grad)

    def stored(self, state):
        """(value, grad, aux) at the current point; aux is None for optax."""
        if self.backend == "jaxopt":
            return state.value, state.grad, state.aux
        return optax.tree_utils.tree_get(state, "value"), optax.tree_utils.tree_get(state, "grad"), None

    def step(self, params, state, w, lam, batch, value, grad):
        """One iteration from (value, grad) at ``params``.

        Returns new params, state, the objective at the new point and the evaluations used."""
        if self.backend == "jaxopt":
            n0 = state.num_linesearch_iter
            out = self.solver.update(params, state, w, lam, batch)
            new = out.state
            # Like torch (and Nocedal & Wright), keep a curvature pair only if y.s > 1e-10;
            # jaxopt stores every pair, and one with y.s <= 0 (float32 noise near a
            # minimum, or an objective change) makes later directions non-descent and
            # the line search fail. The slot that would have been overwritten keeps its
            # older pair.
            s_vec = optax.tree.sub(out.params, params)
            y_vec = optax.tree.sub(new.grad, grad)
            keep = optax.tree.vdot(s_vec, y_vec) > 1e-10
            pick = lambda a, b: jax.tree_util.tree_map(lambda x, y: jnp.where(keep, x, y), a, b)
            new = new._replace(
                s_history=pick(new.s_history, state.s_history),
                y_history=pick(new.y_history, state.y_history),
                rho_history=pick(new.rho_history, state.rho_history),
                gamma=jnp.where(keep, new.gamma, state.gamma),
            )
            if self.reset_on_failure:
                # a failed line search means the quasi-Newton model is off: restart it
                # from the scaled identity (its curvature pairs are dropped)
                failed = new.failed_linesearch
                zero = lambda t: jax.tree_util.tree_map(lambda x: jnp.where(failed, jnp.zeros_like(x), x), t)
                new = new._replace(
                    s_history=zero(new.s_history),
                    y_history=zero(new.y_history),
                    rho_history=zero(new.rho_history),
                )
            # each line-search iteration is one loss+gradient evaluation
            return out.params, new, new.value, new.aux, new.num_linesearch_iter - n0

        def value_fn(p):
            return self.obj_fn(p, w, lam, batch)[0]

        updates, new_state = self.solver.update(grad, state, params, value=value, grad=grad, value_fn=value_fn)
        new_params = optax.apply_updates(params, updates)
        new_value = optax.tree_utils.tree_get(new_state, "value")
        info = optax.tree_utils.tree_get(new_state, "info")
        n_evals = getattr(info, "num_linesearch_steps", jnp.asarray(1))
        return new_params, new_state, new_value, None, n_evals


# ----------------------------------------------------------------------------------------
# the engine


def _stage_uses_relobralo(setup: _Setup, stage: str) -> bool:
    return setup.relobralo_stages == "both" or (setup.relobralo_stages == "adam" and stage == "adam")


class _Engine:
    def __init__(self, setup: _Setup, static):
        self.setup = setup
        self.static = static
        cfg = setup.config
        self.term_fn = make_term_fn(setup, static)
        self.residual_fn = make_residual_fn(setup, static)
        self.weighting_init = _make_weighting(setup, Hyper.from_config(cfg)).init
        self.balancing = _make_balancing(setup)
        self.adam_init = optax.adam(cfg.adam_lr).init
        self.lbfgs = _Lbfgs(setup, self.objective)
        self.objective_jit = jax.jit(self.objective)
        self.chunk_len = setup.k_upd

    # --- objective -------------------------------------------------------------------
    def objective(self, params, w, lam, batch):
        tv = self.term_fn(params, batch, w)
        return jnp.dot(lam, tv.terms, precision=jax.lax.Precision.HIGHEST) + tv.extra, tv

    def value_and_grad(self, params, w, lam, batch):
        (value, tv), grad = jax.value_and_grad(self.objective, has_aux=True)(params, w, lam, batch)
        return (value, tv), grad

    def balanced_eval(self, params, w, bstate, batch):
        """One forward+backward: term values, a ReLoBRaLo update from them, and the
        gradient of lambda . terms + extra with the new (detached) lambdas."""
        tv, vjp = jax.vjp(lambda p: self.term_fn(p, batch, w), params)
        lam, bstate = self.balancing.update(jax.lax.stop_gradient(tv.terms), bstate)
        lam = jax.lax.stop_gradient(lam)
        zeros = TermValues(jnp.zeros_like(tv.terms), jnp.zeros_like(tv.raw), jnp.ones_like(tv.extra))
        cot = zeros._replace(terms=lam.astype(tv.terms.dtype))
        (grad,) = vjp(cot)
        value = jnp.dot(lam, tv.terms, precision=jax.lax.Precision.HIGHEST) + tv.extra
        return value, grad, tv, lam, bstate

    # --- refresh ---------------------------------------------------------------------
    def refresh(self, carry: Carry, batch, hyper: Hyper, tau_k):
        tau = weighting_lib.tau(tau_k, self.setup.k_max, hyper.c_sat)
        r = self.residual_fn(carry.params, batch)
        w, wstate = _make_weighting(self.setup, hyper).update(r, tau, carry.wstate)
        return w, wstate

    def _guard(self, carry: Carry, raw_total, params_now):
        """Update best params / status after a step whose unweighted loss is raw_total."""
        finite = jnp.isfinite(raw_total)
        better = finite & (raw_total < carry.best_raw)
        best_params = jax.tree_util.tree_map(lambda b, p: jnp.where(better, p, b), carry.best_params, params_now)
        best_raw = jnp.where(better, raw_total, carry.best_raw)
        diverged = finite & (raw_total > self.setup.config.divergence_ratio * best_raw)
        status = jnp.where(~finite, StageStatus.NONFINITE, jnp.where(diverged, StageStatus.DIVERGED, carry.status))
        return best_params, best_raw, status.astype(jnp.int32)

    # --- chunks ----------------------------------------------------------------------
    def adam_chunk(self, carry: Carry, batch, hyper: Hyper, tau_k, n_steps):
        use_relo = _stage_uses_relobralo(self.setup, "adam")
        adam = optax.adam(hyper.adam_lr)
        w, wstate = self.refresh(carry, batch, hyper, tau_k)
        carry = eqx.tree_at(lambda c: c.wstate, carry, wstate)
        L, C = self.chunk_len, self.setup.n_terms
        dtype = w.dtype
        hist0 = (jnp.zeros(L, dtype), jnp.zeros((L, C), dtype), jnp.zeros((L, C), dtype), jnp.zeros((L, C), dtype))

        def cond(s):
            i, c, _ = s
            return (i < n_steps) & (c.status == StageStatus.COMPLETED)

        def body(s):
            i, c, (h_loss, h_terms, h_raw, h_lam) = s
            if use_relo:
                value, grad, tv, lam, bstate = self.balanced_eval(c.params, w, c.bstate, batch)
            else:
                (value, tv), grad = self.value_and_grad(c.params, w, c.lambdas, batch)
                lam, bstate = c.lambdas, c.bstate
            raw_total = jnp.sum(tv.raw)
            best_params, best_raw, status = self._guard(c, raw_total, c.params)
            updates, opt = adam.update(grad, c.opt, c.params)
            params = optax.apply_updates(c.params, updates)
            ok = status == StageStatus.COMPLETED
            params = jax.tree_util.tree_map(lambda new, old: jnp.where(ok, new, old), params, c.params)
            c = Carry(params, opt, c.wstate, bstate, lam, best_params, best_raw, status, c.stall)
            hist = (h_loss.at[i].set(value), h_terms.at[i].set(tv.terms), h_raw.at[i].set(tv.raw), h_lam.at[i].set(lam))
            return i + 1, c, hist

        n_done, carry, hist = jax.lax.while_loop(cond, body, (jnp.int32(0), carry, hist0))
        evals = jnp.ones(L, jnp.int32)
        return carry, w, n_done, hist + (evals,)

    def lbfgs_chunk(self, carry: Carry, batch, hyper: Hyper, tau_k, n_steps):
        use_relo = _stage_uses_relobralo(self.setup, "lbfgs")
        cfg = self.setup.config
        per_iter = use_relo and cfg.relobralo_lbfgs_apply == "iteration"
        w, wstate = self.refresh(carry, batch, hyper, tau_k)
        carry = eqx.tree_at(lambda c: c.wstate, carry, wstate)
        L, C = self.chunk_len, self.setup.n_terms
        dtype = w.dtype
        hist0 = (jnp.zeros(L, dtype), jnp.zeros((L, C), dtype), jnp.zeros((L, C), dtype), jnp.zeros((L, C), dtype), jnp.zeros(L, jnp.int32))
        opt = carry.opt
        # the lambdas of the objective in this chunk (unless ReLoBRaLo changes them every
        # iteration): ones without ReLoBRaLo, else ReLoBRaLo's latest
        lam_chunk = carry.lambdas
        if not per_iter:
            # jaxopt keeps value, gradient and aux at the accepted point; optax keeps value
            # and gradient (its line search ends with them). Both are re-based here once per
            # chunk, so that no iteration pays a loss+gradient evaluation of its own.
            (value, tv), grad = self.value_and_grad(carry.params, w, lam_chunk, batch)
            opt = self.lbfgs.set_point(opt, value, grad, tv)
        carry = eqx.tree_at(lambda c: c.opt, carry, opt)

        def cond(s):
            i, c, _ = s
            return (i < n_steps) & (c.status == StageStatus.COMPLETED)

        def body(s):
            i, c, (h_loss, h_terms, h_raw, h_lam, h_ev) = s
            opt = c.opt
            if per_iter:
                value, grad, tv, lam, bstate = self.balanced_eval(c.params, w, c.bstate, batch)
                opt = self.lbfgs.set_point(opt, value, grad, tv)
                n_ev = jnp.int32(1)
                lam_next = lam
            else:
                if self.lbfgs.backend == "jaxopt":
                    value, grad, tv = self.lbfgs.stored(opt)
                else:
                    # optax: value and gradient from the line search's last (accepted) trial;
                    # the per-term values for the guard and the history need one forward pass
                    value, grad = self.lbfgs.stored(opt)[:2]
                    tv = self.term_fn(c.params, batch, w)
                n_ev = jnp.where(i == 0, 1, 0).astype(jnp.int32)  # the chunk's re-basing evaluation
                lam = lam_chunk
                if use_relo:  # "refresh": ReLoBRaLo's state moves every iteration, the objective's lambdas per chunk
                    lam_next, bstate = self.balancing.update(jax.lax.stop_gradient(tv.terms), c.bstate)
                    lam_next = jax.lax.stop_gradient(lam_next)
                else:
                    lam_next, bstate = c.lambdas, c.bstate
            gtol_hit = _tree_max_abs(grad) <= cfg.lbfgs_gtol
            params, opt, new_value, _, ls_evals = self.lbfgs.step(c.params, opt, w, lam, batch, value, grad)
            # guards on the unweighted loss at the start point (known) and the new objective
            raw_total = jnp.sum(tv.raw)
            best_params, best_raw, status = self._guard(c, raw_total, c.params)
            bad_new = ~jnp.isfinite(new_value)
            status = jnp.where((status == 0) & bad_new, StageStatus.NONFINITE, status)
            status = jnp.where((status == 0) & gtol_hit, StageStatus.GRAD_TOL, status)
            # stall: iterations since the best unweighted loss last improved by a relative ftol
            improved = raw_total < c.best_raw * (1.0 - cfg.lbfgs_ftol)
            stall = jnp.where(improved, 0, c.stall + 1)
            status = jnp.where((status == 0) & (stall >= cfg.lbfgs_tol_patience), StageStatus.LOSS_TOL, status)
            ok = (status == StageStatus.COMPLETED) | (status == StageStatus.LOSS_TOL)
            params = jax.tree_util.tree_map(lambda new, old: jnp.where(ok, new, old), params, c.params)
            c = Carry(params, opt, c.wstate, bstate, lam_next, best_params, best_raw, status.astype(jnp.int32), stall.astype(jnp.int32))
            hist = (
                h_loss.at[i].set(value),
                h_terms.at[i].set(tv.terms),
                h_raw.at[i].set(tv.raw),
                h_lam.at[i].set(lam),
                h_ev.at[i].set(n_ev + jnp.asarray(ls_evals, jnp.int32)),
            )
            return i + 1, c, hist

        n_done, carry, hist = jax.lax.while_loop(cond, body, (jnp.int32(0), carry, hist0))
        return carry, w, n_done, hist


def _restore_best(carry: Carry) -> Carry:
    bad = (carry.status == StageStatus.NONFINITE) | (carry.status == StageStatus.DIVERGED)
    params = jax.tree_util.tree_map(lambda b, p: jnp.where(bad & jnp.isfinite(carry.best_raw), b, p), carry.best_params, carry.params)
    return eqx.tree_at(lambda c: c.params, carry, params)


def _fmt_terms(names, values) -> str:
    return " ".join(f"{n}={float(v):.3e}" for n, v in zip(names, values))


def train(
    problem: Problem | str,
    method: Method | str = "cgmpinn",
    config: TrainConfig | None = None,
    *,
    key: jax.Array | int = 1224,
    quiet: bool = False,
    snapshot_refreshes: int = 4,
    print_fn: Callable[[str], None] | None = None,
) -> TrainResult:
    """Train ``method`` on ``problem`` with Adam then L-BFGS.

    Args:
        problem: a :class:`~cgmpinn_jax.problems.Problem` or a registry name.
        method: a :class:`~cgmpinn_jax.methods.Method` or a registry name.
        config: options (:class:`TrainConfig`); defaults are the reference's settings.
        key: PRNG key or integer seed; split into (points, network, ReLoBRaLo) keys.
        quiet: no progress output.
        snapshot_refreshes: keep the per-point weights of this many refreshes (evenly
            spaced) in the history, for plots.

    Returns:
        :class:`TrainResult` with the trained model, metrics on the test grid, e_loss,
        per-step histories, stage statuses, and compile / run seconds.

    Example:
        >>> import cgmpinn_jax as cj
        >>> res = cj.train("poisson1d", "pinn", cj.TrainConfig(adam_steps=20, lbfgs_steps=5), quiet=True)
        >>> res.metrics.rel_e2 > 0
        True
    """
    problem = get_problem(problem)
    method = get_method(method)
    config = config or TrainConfig()
    if not isinstance(config, TrainConfig):
        raise ValueError(f"config must be a TrainConfig, got {type(config).__name__}")
    seed = None
    if isinstance(key, (int, np.integer)):
        seed = int(key)
        key = jax.random.key(seed)
    setup = _resolve(problem, method, config)
    emit = (lambda s: None) if quiet else (print_fn or (lambda s: print(s, file=sys.stderr, flush=True)))

    with jax.default_matmul_precision("highest"):
        return _train(setup, key, seed, emit, snapshot_refreshes)


_ENGINES: dict = {}
_COMPILED: dict = {}
_CACHE_SIZE = 32


def _static_and_engine(setup: _Setup) -> tuple[Any, _Engine]:
    """The non-array part of the trainable (identical for every key) and the engine,
    cached per setup so that repeated runs (seeds, tests, benchmarks) reuse compilations."""
    key = (setup, jax.config.jax_enable_x64)
    if key not in _ENGINES:
        if len(_ENGINES) >= _CACHE_SIZE:
            _ENGINES.clear()
            _COMPILED.clear()
        _ENGINES[key] = _make_static_and_engine(setup)
    return _ENGINES[key]


def _make_static_and_engine(setup: _Setup) -> tuple[Any, _Engine]:
    model = jax.eval_shape(lambda k: build_model(setup.problem, setup.method, k, width=setup.width, depth=setup.depth), jax.random.key(0))
    log_vars = jnp.zeros(setup.n_terms) if setup.method.learnable_balance else None
    _, static = eqx.partition(Trainable(model, log_vars), eqx.is_array)
    return static, _Engine(setup, static)


def _init_state(setup: _Setup, eng: _Engine, key: jax.Array):
    """Training points and the initial carry from one key (pure; vmappable over keys)."""
    problem, method = setup.problem, setup.method
    k_pts, k_net, k_bal = jax.random.split(key, 3)
    batch = problem.sample(k_pts)
    model = build_model(problem, method, k_net, width=setup.width, depth=setup.depth)
    dtype = jnp.zeros(()).dtype
    log_vars = jnp.zeros(setup.n_terms, dtype) if method.learnable_balance else None
    params, _ = eqx.partition(Trainable(model, log_vars), eqx.is_array)
    carry = Carry(
        params=params,
        opt=eng.adam_init(params),
        wstate=eng.weighting_init(batch["pde"][0].shape[0]),
        bstate=eng.balancing.init(k_bal),
        lambdas=jnp.ones(setup.n_terms, dtype),
        best_params=params,
        best_raw=jnp.asarray(jnp.inf, dtype),
        status=jnp.int32(0),
        stall=jnp.int32(0),
    )
    return carry, batch


def _to_host(x) -> np.ndarray:
    """The whole of ``x`` as a numpy array, also when its shards live in other processes
    (multi-host sweeps: gathered with ``process_allgather``; every process must call this)."""
    if isinstance(x, jax.Array) and not x.is_fully_addressable:
        from jax.experimental import multihost_utils

        return np.asarray(multihost_utils.process_allgather(x, tiled=True))
    return np.asarray(x)


class _RunOutput(NamedTuple):
    carry: Carry
    w: jax.Array
    history: dict  # arrays with a leading member axis
    statuses: dict  # stage -> (B,) int array
    compile_seconds: float
    run_seconds: float


def _run_stages(setup: _Setup, eng: _Engine, carry: Carry, batch, hyper: Hyper, emit, *, batched: bool,
                snapshot_refreshes: int = 4) -> _RunOutput:
    """The host loop over chunks. ``batched``: carry, batch and hyper have a leading member
    axis and every chunk is vmapped over it (a sweep); otherwise one run."""
    problem, method = setup.problem, setup.method
    C = setup.n_terms
    dtype = jnp.zeros(()).dtype
    schedule = refresh_schedule(setup.adam_steps, setup.lbfgs_steps, setup.k_upd, refit_before_step=setup.refit_before_step)
    vm = (lambda f, axes: jax.vmap(f, in_axes=axes)) if batched else (lambda f, axes: f)
    lead = _to_host if batched else (lambda x: np.asarray(x)[None])

    compile_s = 0.0

    def get_compiled(name, fn, *args):
        """AOT-compile once per (engine, function, argument signature); time it."""
        nonlocal compile_s
        leaves, tree = jax.tree_util.tree_flatten(args)
        sig = tuple((np.shape(x), jnp.result_type(x), str(getattr(x, "sharding", None))) for x in leaves)
        key = (id(eng), name, batched, tree, sig)
        if key not in _COMPILED:
            t0 = time.perf_counter()
            _COMPILED[key] = (eng, jax.jit(fn).lower(*args).compile())
            compile_s += time.perf_counter() - t0
        return _COMPILED[key][1]

    i32 = lambda v: jnp.asarray(v, jnp.int32)
    rows = {k: [] for k in ("k", "loss", "terms", "raw", "lambdas", "evals")}
    refresh = {k: [] for k in ("k", "tau", "spread", "status")}
    weights_seen = []
    statuses = {}
    names = problem.loss_terms
    tag = f"[{problem.name}/{method.name}]"
    t_start = time.perf_counter()
    n_pde = batch["pde"][0].shape[-2]
    w = jnp.ones(carry.lambdas.shape[:-1] + (n_pde,), dtype)
    for stage in ("adam", "lbfgs"):
        chunks = [c for c in schedule if c.stage == stage]
        if not chunks:
            statuses[stage] = np.full(lead(carry.status).shape, int(StageStatus.SKIPPED))
            continue
        carry = eqx.tree_at(
            lambda c: (c.status, c.stall, c.best_raw, c.best_params),
            carry,
            (jnp.zeros_like(carry.status), jnp.zeros_like(carry.stall), jnp.full_like(carry.best_raw, jnp.inf), carry.params),
        )
        if stage == "lbfgs":
            if not _stage_uses_relobralo(setup, "lbfgs"):
                carry = eqx.tree_at(lambda c: c.lambdas, carry, jnp.ones_like(carry.lambdas))
            init_args = (carry.params, w, carry.lambdas, batch)
            opt = get_compiled("lbfgs_init", vm(eng.lbfgs.init, 0), *init_args)(*init_args)
            carry = eqx.tree_at(lambda c: c.opt, carry, opt)
        for chunk in chunks:
            args = (carry, batch, hyper, i32(chunk.tau_k), i32(chunk.n_steps))
            fn = vm(eng.adam_chunk if stage == "adam" else eng.lbfgs_chunk, (0, 0, 0, None, None))
            carry, w, n_done, hist = get_compiled(stage, fn, *args)(*args)
            n_done = lead(n_done)
            n = int(n_done.max())
            h = [lead(x)[:, :n].astype(float if i < 4 else np.int64) for i, x in enumerate(hist)]
            past = np.arange(n)[None, :] >= n_done[:, None]  # steps a stopped member did not take
            for i in range(4):
                h[i][past] = np.nan
            h[4][past] = 0
            rows["k"].append(np.arange(chunk.first_k, chunk.first_k + n))
            for name, arr in zip(("loss", "terms", "raw", "lambdas", "evals"), h):
                rows[name].append(arr)
            tau = lead(weighting_lib.tau(chunk.tau_k, setup.k_max, hyper.c_sat)).reshape(-1)
            w_np = lead(w)
            refresh["k"].append(chunk.tau_k)
            refresh["tau"].append(tau)
            refresh["spread"].append(w_np.max(-1) / np.maximum(w_np.min(-1), 1e-30))
            refresh["status"].append(lead(getattr(carry.wstate, "last_status", jnp.zeros_like(carry.status))).reshape(-1))
            weights_seen.append(w_np)
            if n:
                if batched:
                    emit(f"{tag} {stage:5s} k={chunk.first_k + n - 1:6d} tau={tau[0]:.3f} "
                         f"median loss over {len(n_done)} runs={np.nanmedian(h[0][:, -1]):.3e}")
                else:
                    emit(
                        f"{tag} {stage:5s} k={chunk.first_k + n - 1:6d} tau={tau[0]:.3f} loss={h[0][0, -1]:.3e} "
                        f"{_fmt_terms(names, h[2][0, -1])} w_spread={refresh['spread'][-1][0]:.2f}"
                    )
            st = lead(carry.status)
            if np.all(st != StageStatus.COMPLETED):
                if not batched:
                    emit(f"{tag} {stage} stage stopped at k={chunk.first_k + n - 1}: {StageStatus(int(st[0])).name}")
                break
        statuses[stage] = lead(carry.status).astype(np.int64)
        carry = get_compiled("restore_" + stage, vm(_restore_best, 0), carry)(carry)
    jax.block_until_ready(carry.params)
    run_s = time.perf_counter() - t_start - compile_s

    cat = lambda xs, axis, shape: np.concatenate(xs, axis=axis) if xs else np.zeros(shape)
    B = lead(carry.status).shape[0]
    n_snap = len(weights_seen)
    idx = sorted(set(np.linspace(0, n_snap - 1, min(snapshot_refreshes, n_snap)).round().astype(int).tolist())) if n_snap else []
    history = dict(
        k=cat(rows["k"], 0, (0,)).astype(np.int64),
        loss=cat(rows["loss"], 1, (B, 0)),
        terms=cat(rows["terms"], 1, (B, 0, C)),
        raw=cat(rows["raw"], 1, (B, 0, C)),
        lambdas=cat(rows["lambdas"], 1, (B, 0, C)),
        evals=cat(rows["evals"], 1, (B, 0)).astype(np.int64),
        refresh_k=np.asarray(refresh["k"], np.int64),
        refresh_tau=np.stack(refresh["tau"], 1) if refresh["tau"] else np.zeros((B, 0)),
        refresh_spread=np.stack(refresh["spread"], 1) if refresh["spread"] else np.zeros((B, 0)),
        refresh_status=np.stack(refresh["status"], 1).astype(np.int64) if refresh["status"] else np.zeros((B, 0), np.int64),
        snapshots={i: weights_seen[i] for i in idx},
    )
    return _RunOutput(carry, w, history, statuses, compile_s, run_s)


def _member_history(h: dict, b: int) -> History:
    per = {k: (v if k in ("k", "refresh_k") else v[b]) for k, v in h.items() if k != "snapshots"}
    return History(**per, snapshots={i: v[b] for i, v in h["snapshots"].items()})


def _train(setup: _Setup, key, seed, emit, snapshot_refreshes) -> TrainResult:
    problem, method = setup.problem, setup.method
    static, eng = _static_and_engine(setup)
    dtype = jnp.zeros(()).dtype
    hyper = Hyper.from_config(setup.config, dtype)
    carry, batch = _init_state(setup, eng, key)
    out = _run_stages(setup, eng, carry, batch, hyper, emit, batched=False, snapshot_refreshes=snapshot_refreshes)
    carry, w = out.carry, out.w

    trained = eqx.combine(carry.params, static)
    metrics = metrics_lib.evaluate(problem, trained.model)
    e_loss = float(eng.objective_jit(carry.params, w, carry.lambdas, batch)[0])
    result = TrainResult(
        problem=problem,
        method=method,
        config=setup.config,
        model=trained.model,
        log_vars=None if trained.log_vars is None else np.asarray(trained.log_vars),
        metrics=metrics,
        e_loss=e_loss,
        history=_member_history(out.history, 0),
        adam_status=StageStatus(int(out.statuses["adam"][0])),
        lbfgs_status=StageStatus(int(out.statuses["lbfgs"][0])),
        compile_seconds=out.compile_seconds,
        run_seconds=out.run_seconds,
        adam_steps=setup.adam_steps,
        lbfgs_steps=setup.lbfgs_steps,
        k_upd=setup.k_upd,
        relobralo=setup.relobralo_stages,
        seed=seed,
        batch=batch,
    )
    emit(
        f"[{problem.name}/{method.name}] done: rel_e2={metrics.rel_e2:.3e} e2={metrics.e2:.3e} e_inf={metrics.e_inf:.3e} "
        f"e_loss={e_loss:.3e} (compile {out.compile_seconds:.1f}s, run {out.run_seconds:.1f}s)"
    )
    return result
