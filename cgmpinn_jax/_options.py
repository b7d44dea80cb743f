"""The options of each part of a run, one frozen dataclass per part, composed by
[`TrainConfig`][cgmpinn_jax.TrainConfig]; each is importable from ``cgmpinn_jax`` and
``cgmpinn_jax.config``.

Each class holds only the options its part reads and checks them on construction; an error
names the class and the option (``GaussNewtonOptions.mu_init must be > 0, got -1.0``). Every
default is the reference code's (docs/reference-code.md §2, §4-§7, §8.7); ``None`` means "the
problem's or the method's own default".
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Optional

import numpy as np

__all__ = ["AdamOptions", "SecondStageOptions", "LBFGSOptions", "DenseOptions", "GaussNewtonOptions", "CGMOptions",
           "ReLoBRaLoOptions", "NetworkOptions", "GN_FORMS", "GROUPS"]

GN_FORMS = ("auto", "kernel", "gramian", "pcg", "matfree", "svd")
"""The Gauss-Newton member's linear-system forms, the values of ``GaussNewtonOptions.form``."""


def _is_int(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _is_real(v) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))


class _Checks:
    """Checks shared by the option classes; each error names ``Class.option``."""

    def _name(self, name: str) -> str:
        return f"{type(self).__name__}.{name}"

    def _int(self, name: str, least: int, none: bool = False) -> None:
        v = getattr(self, name)
        if v is None and none:
            return
        if not _is_int(v) or v < least:
            what = "a non-negative int" if least == 0 else "a positive int"
            raise ValueError(f"{self._name(name)} must be {'None or ' if none else ''}{what}, got {v!r}")

    def _real(self, name: str, *, positive: bool = False, at_least: Optional[float] = None, none: bool = False) -> None:
        v = getattr(self, name)
        if v is None and none:
            return
        if not _is_real(v) or not math.isfinite(float(v)):
            raise ValueError(f"{self._name(name)} must be {'None or ' if none else ''}a finite number, got {v!r}")
        if positive and not v > 0:
            raise ValueError(f"{self._name(name)} must be > 0, got {v!r}")
        if at_least is not None and v < at_least:
            raise ValueError(f"{self._name(name)} must be >= {at_least:g}, got {v!r}")

    def _within(self, name: str, lo: float, hi: float, *, open_lo: bool = False) -> None:
        self._real(name)
        v = getattr(self, name)
        if not ((lo < v) if open_lo else (lo <= v)) or not v <= hi:
            raise ValueError(f"{self._name(name)} must be in {'(' if open_lo else '['}{lo:g}, {hi:g}], got {v!r}")

    def _choice(self, name: str, allowed: tuple) -> None:
        v = getattr(self, name)
        if not isinstance(v, str) or v not in allowed:
            raise ValueError(f"{self._name(name)} must be one of {allowed}, got {v!r}")

    def _bool(self, name: str) -> None:
        if not isinstance(getattr(self, name), (bool, np.bool_)):
            raise ValueError(f"{self._name(name)} must be True or False, got {getattr(self, name)!r}")


@dataclasses.dataclass(frozen=True)
class AdamOptions(_Checks):
    """The Adam stage: optax Adam with the reference's torch defaults (betas 0.9, 0.999,
    epsilon 1e-8, no weight decay, a constant learning rate), one step per outer step, and a
    refresh of the per-point weights every ``cgm.k_upd`` steps.

    Args:
        steps: the stage's budget, in Adam steps (paper: 5000; Fisher-KPP 8000); ``0`` skips
            the stage. ``None``: the problem's default.
        lr: the learning rate, the size of every Adam step (1e-3). Swept inside one compiled
            call by [`sweep`][cgmpinn_jax.sweep] as ``adam_lr``.
        time_limit: wall-clock seconds for the stage (``None``: no limit). A stage that
            reaches it stops at the next call boundary with status ``TIME_LIMIT``, keeps its
            best point, and the run goes on with the next stage. It changes no step: a run
            that does not reach it is the same run.

    Examples:
        >>> AdamOptions(steps=2000).lr
        0.001
    """

    steps: Optional[int] = None
    lr: float = 1e-3
    time_limit: Optional[float] = None

    def __post_init__(self):
        self._int("steps", 0, none=True)
        self._real("lr", positive=True)
        self._real("time_limit", positive=True, none=True)


@dataclasses.dataclass(frozen=True)
class SecondStageOptions(_Checks):
    """Every stage after Adam, whichever member runs it (L-BFGS, dense quasi-Newton or
    Gauss-Newton): its budget and its stop rule's tolerances (one iteration per outer step).

    The tolerances left at ``None`` take the member's defaults for the stage's precision
    ([`stop_rule`][cgmpinn_jax.config.stop_rule] lists them: for L-BFGS in float32
    ``gtol=1e-7, ftol=1e-3, patience=1000``).

    Args:
        steps: the budget of each stage after Adam, in iterations (paper: 10000 L-BFGS;
            Fisher-KPP 12000; the accurate preset 1500 Gauss-Newton); ``0`` skips the stage.
            ``None``: the problem's default.
        gtol: the gradient tolerance: the stage stops with ``GRAD_TOL`` when
            ``max|g| <= gtol * max(1, |objective|)``, ``g`` the objective's gradient; ``0``
            turns the test off. ``None``: the member's default.
        ftol: the relative improvement of the best unweighted loss (PDE + IC + BC) that counts
            as progress and resets the stall count (``None``: the member's default).
        patience: the stage stops with ``LOSS_TOL`` after this many iterations in a row without
            such an improvement (``None``: the member's default).
        time_limit: wall-clock seconds for each stage after Adam (``None``: no limit), as
            ``AdamOptions.time_limit``: the stage stops with ``TIME_LIMIT`` and keeps its best
            point.

    Examples:
        >>> SecondStageOptions(steps=1500).patience is None
        True
    """

    steps: Optional[int] = None
    gtol: Optional[float] = None
    ftol: Optional[float] = None
    patience: Optional[int] = None
    time_limit: Optional[float] = None

    def __post_init__(self):
        self._int("steps", 0, none=True)
        self._real("gtol", at_least=0.0, none=True)
        self._real("ftol", at_least=0.0, none=True)
        self._int("patience", 1, none=True)
        self._real("time_limit", positive=True, none=True)


@dataclasses.dataclass(frozen=True)
class LBFGSOptions(_Checks):
    """The L-BFGS members, ``second_stage="optax"`` (optax L-BFGS with its zoom line search)
    and ``"jaxopt"`` (jaxopt.LBFGS). Their budget and tolerances are the second stage's
    ([`SecondStageOptions`][cgmpinn_jax.SecondStageOptions]).

    Args:
        lr: the line search's first trial step, as a multiple of the L-BFGS direction (1.0;
            jaxopt also caps every step at it). The reference's torch L-BFGS used 0.8, which
            made jaxopt's line search fail far more often.
        history: the curvature memory: how many of the latest ``(s, y)`` pairs (parameter and
            gradient changes) build the inverse-Hessian approximation (100, as the reference).
        max_linesearch: at most this many loss+gradient evaluations in one iteration's line
            search (10; torch allows 25, which in a float32 plateau are wasted).
        linesearch: jaxopt only: the line-search algorithm, ``"zoom"`` (strong Wolfe, the
            default), ``"hager-zhang"`` or ``"backtracking"`` (Armijo).
        linesearch_init: jaxopt only: the first trial step of each line search:
            ``"increase"`` (the previous accepted step, increased, capped at ``lr``; the
            default), ``"max"`` (``lr`` every time) or ``"current"`` (the previous accepted
            step).
        reset_on_failure: jaxopt only: empty the curvature memory after a line search that
            found no acceptable step (False).

    A jaxopt-only option set while no stage runs jaxopt is an error (it would have no effect).

    Examples:
        >>> LBFGSOptions(linesearch="backtracking").history
        100
    """

    lr: float = 1.0
    history: int = 100
    max_linesearch: int = 10
    linesearch: str = "zoom"
    linesearch_init: str = "increase"
    reset_on_failure: bool = False

    #: the options only jaxopt reads
    JAXOPT_ONLY = ("linesearch", "linesearch_init", "reset_on_failure")

    def __post_init__(self):
        self._real("lr", positive=True)
        self._int("history", 1)
        self._int("max_linesearch", 1)
        self._choice("linesearch", ("zoom", "hager-zhang", "backtracking"))
        self._choice("linesearch_init", ("increase", "max", "current"))
        self._bool("reset_on_failure")


@dataclasses.dataclass(frozen=True)
class DenseOptions(_Checks):
    """The dense quasi-Newton members, ``second_stage="bfgs"``, ``"ssbfgs"`` (self-scaled
    BFGS) and ``"ssbroyden"`` (self-scaled Broyden): a full n x n inverse-Hessian
    approximation over the raveled parameters, for small networks. Their budget and
    tolerances are the second stage's ([`SecondStageOptions`][cgmpinn_jax.SecondStageOptions]).

    Args:
        max_params: the largest network, in parameters, the members accept (20000: an
            n x n matrix of 4e8 entries); a larger one is refused before anything is compiled.
        max_linesearch: at most this many loss+gradient evaluations in one iteration's line
            search (10).

    Examples:
        >>> DenseOptions().max_params
        20000
    """

    max_params: int = 20_000
    max_linesearch: int = 10

    def __post_init__(self):
        self._int("max_params", 1)
        self._int("max_linesearch", 1)


@dataclasses.dataclass(frozen=True)
class GaussNewtonOptions(_Checks):
    """The Gauss-Newton (Levenberg-Marquardt) member, ``second_stage="gauss_newton"``
    ([`GaussNewton`][cgmpinn_jax.solvers.GaussNewton]). Its budget and tolerances are the
    second stage's ([`SecondStageOptions`][cgmpinn_jax.SecondStageOptions]).

    An iteration forms the residuals ``r`` (M rows) and their Jacobian ``J`` (M x P), solves
    the damped system ``(J^T J + mu I) d = -J^T r`` for the step ``d``, and accepts ``x + d``
    when the objective falls. The damping ``mu`` interpolates between a Gauss-Newton step
    (small ``mu``) and a short gradient step (large ``mu``); it shrinks after an accepted trial
    and grows after a rejected one (Nielsen's rule), and carries over to the next iteration.
    Every ``mu`` is relative to the Jacobian's scale, the mean diagonal of ``J^T J``.

    Args:
        form: how the damped system is solved: ``"auto"`` (in float32 ``"svd"`` up to 4096
            rows or parameters; else the Gramian ``J^T J`` when rows exceed parameters,
            ``"pcg"`` from 2048 rows on, the exact kernel ``J J^T`` below; ``"matfree"``
            where that form would need more than ``memory_limit_gb``), ``"kernel"`` (the
            M x M system ``J J^T + mu I`` by Cholesky), ``"gramian"`` (the P x P system
            ``J^T J + mu I`` by Cholesky), ``"pcg"`` (the kernel system by conjugate
            gradients preconditioned with an earlier iteration's Cholesky factor),
            ``"matfree"`` (conjugate gradients on products with ``J`` and ``J^T`` from
            automatic differentiation: no Jacobian and no matrix is stored), or ``"svd"``
            (every trial's step from one thin SVD of ``J``: no squared condition number,
            several times the kernel step's cost).
        mu_init: the damping of the stage's first trial (1e-3).
        mu_min: the smallest damping (1e-15).
        mu_max: the largest damping (1e8); a trial rejected at it stops the stage with
            ``NO_DECREASE`` (no decrease even along a short gradient step).
        max_trials: at most this many trial steps (values of ``mu``) per iteration, each one
            forward pass of the objective (12); an iteration whose trials all fail leaves the
            parameters as they are.
        memory_limit_gb: the memory an iteration may hold, GiB (16); a larger system is
            refused before anything is compiled (``form="auto"`` takes ``"matfree"`` instead).

    Options set while no stage runs Gauss-Newton are an error (they would have no effect).

    Examples:
        >>> GaussNewtonOptions(mu_init=1e-2).form
        'auto'
    """

    form: str = "auto"
    mu_init: float = 1e-3
    mu_min: float = 1e-15
    mu_max: float = 1e8
    max_trials: int = 12
    memory_limit_gb: float = 16.0

    def __post_init__(self):
        self._choice("form", GN_FORMS)
        for name in ("mu_init", "mu_min", "mu_max", "memory_limit_gb"):
            self._real(name, positive=True)
        self._int("max_trials", 1)
        if not self.mu_min <= self.mu_init <= self.mu_max:
            raise ValueError(f"GaussNewtonOptions: need mu_min <= mu_init <= mu_max, got {self.mu_min}, "
                             f"{self.mu_init}, {self.mu_max}")


@dataclasses.dataclass(frozen=True)
class CGMOptions(_Checks):
    """The per-point weights of the PDE residuals (paper §2.2-2.4): the refresh period every
    method's chunks use, and the CGM mixture (GMMPINN and CLPINN read ``n_components``,
    ``beta``, ``eps``).

    At every refresh a one-dimensional Gaussian mixture is fitted to the signed PDE residuals.
    Each component m gets a difficulty ``d_m`` (the mean squared residual of its points),
    min-max normalised to ``[0, 1]``, and a weight that moves from favouring easy components,
    ``exp(-beta d_m)``, to favouring hard ones, ``exp(-beta (1 - d_m))``, as the curriculum
    parameter ``tau`` goes from 0 to 1. A point's weight is its components' weights averaged
    by its responsibilities, normalised to mean 1; it stays fixed until the next refresh.

    Args:
        k_upd: steps between two refreshes of the per-point weights (paper k_upd; reference
            200, Fisher-KPP CGMPINN 100). ``None``: the method's default on this problem.
        n_components: K, the number of mixture components (4), or ``"bic"`` (K in 1..6
            chosen by the Bayesian information criterion at each refresh).
        beta: the difficulty exponent (1): the larger, the stronger the contrast between the
            weights of easy and hard components; ``0`` weights every point alike. Swept inside
            one compiled call by [`sweep`][cgmpinn_jax.sweep].
        eps: the small constant of the normalisations (1e-6): it guards the divisions by a
            component's total responsibility, by a variance and by the mean weight, and a
            difficulty range below it gives uniform weights. Absolute, as in the reference.
            Sweepable.
        c_sat: the curriculum's saturation fraction (0.8): ``tau = min(k / (c_sat k_max), 1)``
            on the global step ``k`` of ``k_max`` (all stages' steps), so the weights reach
            their hard-first end after this fraction of the run. In ``(0, 1]``; sweepable.
        variance_factor: also multiply a component's weight by its normalised precision
            ``v_m = (1/(sigma_m^2 + eps)) / max_l (1/(sigma_l^2 + eps))``, faded towards 1 as
            ``tau`` grows (True), so tightly clustered residuals count more early on.
        system_weighting: on a system (several PDE equations), ``"per_equation"`` (one
            mixture and one weight per point and equation; the default) or ``"norm"`` (one
            mixture on the norm of each point's residual vector, one weight per point; the
            default until [`CONFIG_DEFAULTS`][cgmpinn_jax.config.CONFIG_DEFAULTS] 2, and what
            a config stored before it meant by leaving the option out);
            docs/problems-from-data.md has the measurement behind the default. No effect on a
            problem with one equation.

    Examples:
        >>> CGMOptions(k_upd=100).n_components
        4
    """

    k_upd: Optional[int] = None
    n_components: Any = 4
    beta: float = 1.0
    eps: float = 1e-6
    c_sat: float = 0.8
    variance_factor: bool = True
    system_weighting: str = "per_equation"

    def __post_init__(self):
        self._int("k_upd", 1, none=True)
        if self.n_components != "bic" and (not _is_int(self.n_components) or self.n_components < 1):
            raise ValueError(f"CGMOptions.n_components must be a positive int or 'bic', got {self.n_components!r}")
        self._real("beta", at_least=0.0)
        self._real("eps", positive=True)
        self._within("c_sat", 0.0, 1.0, open_lo=True)
        self._bool("variance_factor")
        self._choice("system_weighting", ("norm", "per_equation"))


@dataclasses.dataclass(frozen=True)
class ReLoBRaLoOptions(_Checks):
    """ReLoBRaLo (relative loss balancing with random lookback): one weight ``lambda_c`` per
    loss term (PDE, IC, BC, ...), so that the objective is ``sum_c lambda_c L_c``.

    At every step (Adam) or iteration (later stages) the weights are recomputed from the
    current term losses ``L_c`` and a reference value of each:

        lambda_c = C softmax_c( L_c / (L_ref_c + 1e-8) / T ),

    C the number of terms, so the weights sum to C and a term that fell less than the others
    relative to its reference gets more weight. In the ``"reference"`` variant the reference
    is, with probability ``rho``, an exponential moving average of the losses,
    ``L_bar <- alpha L_bar + (1 - alpha) L`` (updated before use), and otherwise the losses of
    a uniformly drawn earlier step (the random lookback). The weights are treated as
    constants by the gradient.

    Args:
        stages: where ReLoBRaLo runs: ``"both"`` (Adam and every later stage), ``"adam"``
            (the Adam stage only; the later stages sum the terms with every lambda 1),
            ``"none"`` (every lambda 1), or ``None``: the method's default (CGMPINN
            ``"both"``, the baselines ``"none"``, the GMMPINN and CLPINN ablations as the
            reference ran them on each problem). ``True`` and ``False`` mean ``"both"`` and
            ``"none"``.
        alpha: the smoothing factor in ``[0, 1]`` (0.999). ``"reference"``: the EMA's memory,
            about ``1 / (1 - alpha)`` steps. ``"original"``: the share of the weights that
            carries over from history, against ``1 - alpha`` for the weights relative to the
            previous step's losses.
        rho: the probability in ``[0, 1]`` (0.99) of the usual reference: ``"reference"``,
            of comparing with the EMA rather than with a random earlier step's losses;
            ``"original"``, of keeping the previous weights as the history rather than the
            weights relative to the first step's losses.
        temperature: the softmax temperature T > 0 (1): a large T pulls every lambda
            towards 1, a small T gives nearly all the weight to the term with the largest
            relative loss.
        variant: ``"reference"`` (the authors' released code, the default: an EMA of the
            losses as the reference) or ``"original"`` (Bischof & Kraus 2021: an EMA of the
            weights, no random lookback).
        second_stage_apply: in a stage after Adam, when the objective takes the new lambdas:
            ``"iteration"`` (at every iteration, as the reference) or ``"refresh"`` (only at
            the weight refreshes, every ``cgm.k_upd`` iterations; ReLoBRaLo's state still
            moves every iteration). ``"refresh"`` keeps the objective fixed between refreshes,
            so the solver's curvature pairs come from one objective; the
            ``"accurate"`` presets use it.

    Examples:
        >>> ReLoBRaLoOptions(stages="adam").alpha
        0.999
    """

    stages: Any = None
    alpha: float = 0.999
    rho: float = 0.99
    temperature: float = 1.0
    variant: str = "reference"
    second_stage_apply: str = "iteration"

    def __post_init__(self):
        if not (isinstance(self.stages, bool) or self.stages in (None, "both", "adam", "none")):
            raise ValueError(f"ReLoBRaLoOptions.stages must be None, a bool, 'both', 'adam' or 'none', got {self.stages!r}")
        self._within("alpha", 0.0, 1.0)
        self._within("rho", 0.0, 1.0)
        self._real("temperature", positive=True)
        self._choice("variant", ("reference", "original"))
        self._choice("second_stage_apply", ("iteration", "refresh"))


def _frozen(v: Any) -> Any:
    """``v`` hashable: lists (a JSON round trip's) as tuples, all the way down."""
    return tuple(_frozen(x) for x in v) if isinstance(v, (list, tuple)) else v


@dataclasses.dataclass(frozen=True)
class NetworkOptions(_Checks):
    """The network, when it is not the method's own.

    ``name=None`` (the default) keeps the method's network: the paper's tanh MLP (CGMPINN, PINN,
    lbPINN, gPINN, the ablations), LNN-PINN or STAR-PINN. Any other network replaces the MLP of
    the methods that have one; it is built once per run from the run's key as
    ``factory(key, in_dim, out_dim, **options)`` and must map one point ``(in_dim,)`` to a
    scalar (``out_dim == 1``) or to an ``(out_dim,)`` vector. A built-in choice also gets the
    run's ``width`` and ``depth`` unless ``options`` set them. The name is saved with a trained
    model, so ``load_model`` and ``resume`` rebuild the network from it.

    Args:
        name: ``None``; a built-in choice, a key of
            [`NETWORKS`][cgmpinn_jax.nn.NETWORKS] (``"fourier"``, ``"siren"``,
            ``"periodic"``, ``"laaf"``, ...); or ``"package.module:factory"``, an importable
            function ``factory(key, in_dim, out_dim, **options) -> equinox.Module``.
        options: keyword arguments of the factory, a dict (stored as sorted ``(name, value)``
            pairs; lists become tuples, so the options stay hashable).

    Examples:
        >>> NetworkOptions("siren", {"omega0": 30.0}).kwargs
        {'omega0': 30.0}
    """

    name: Optional[str] = None
    options: Any = ()

    def __post_init__(self):
        opts = self.options
        if isinstance(opts, dict):
            opts = opts.items()
        try:
            pairs = tuple(sorted((str(k), _frozen(v)) for k, v in opts))
            bad = [k for k, v in pairs if not k.isidentifier() or hash(v) is None]
        except (TypeError, ValueError):
            raise ValueError(f"NetworkOptions.options must be a dict of keyword arguments, got {self.options!r}") from None
        if bad:
            raise ValueError(f"NetworkOptions.options: {bad[0]!r} is not a keyword argument name")
        object.__setattr__(self, "options", pairs)
        if self.name is None:
            if pairs:
                raise ValueError("NetworkOptions.options are set but no network name is given (name=None keeps the "
                                 "method's network)")
        elif not isinstance(self.name, str) or not self.name.strip() or self.name.count(":") > 1:
            raise ValueError(f"NetworkOptions.name must be None, a built-in network's name or "
                             f"'package.module:factory', got {self.name!r}")

    @property
    def kwargs(self) -> dict:
        """The factory's keyword arguments, as a dict."""
        return dict(self.options)


#: TrainConfig's option groups: field name -> class
GROUPS = {"adam": AdamOptions, "second": SecondStageOptions, "lbfgs": LBFGSOptions, "dense": DenseOptions,
          "gauss_newton": GaussNewtonOptions, "cgm": CGMOptions, "balancing": ReLoBRaLoOptions,
          "network": NetworkOptions}
