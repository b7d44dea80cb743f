"""The options of each part of a run, one frozen dataclass per part, composed by
[`TrainConfig`][cgmpinn_jax.TrainConfig] (`cgmpinn_jax.config`).

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
           "ReLoBRaLoOptions", "GN_FORMS", "GROUPS"]

#: the Gauss-Newton member's system forms (see `GaussNewtonOptions`)
GN_FORMS = ("auto", "kernel", "gramian", "pcg", "matfree", "svd")


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
    """The Adam stage (optax Adam, a refresh of the weights every ``k_upd`` steps).

    Attributes:
        steps: Adam steps (paper: 5000; Fisher-KPP 8000). ``None``: the problem's.
        lr: the learning rate (1e-3).
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
    (`cgmpinn_jax.config.stop_rule`).

    Attributes:
        steps: iterations (paper: 10000 L-BFGS; Fisher-KPP 12000; the accurate preset 1500
            Gauss-Newton). ``None``: the problem's.
        gtol: the gradient tolerance (stop with GRAD_TOL when max|g| <= gtol * max(1,
            |objective|)).
        ftol: the relative improvement of the best unweighted loss that resets the stall count.
        patience: stop (LOSS_TOL) after this many iterations without such an improvement.
        time_limit: wall-clock seconds for each stage after Adam (``None``: no limit), as
            `AdamOptions.time_limit`: the stage stops with ``TIME_LIMIT`` and keeps its best point.

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
    """The L-BFGS members, ``second_stage="optax"`` and ``"jaxopt"``.

    Attributes:
        lr: the line search's first trial step (1.0; the reference's torch lr is 0.8).
        history: the curvature memory (100, as the reference).
        max_linesearch: at most this many line-search evaluations per iteration (10).
        linesearch: jaxopt only: ``"zoom"`` (the default), ``"hager-zhang"`` or
            ``"backtracking"``.
        linesearch_init: jaxopt only: ``"increase"`` (the default), ``"max"`` or ``"current"``.
        reset_on_failure: jaxopt only: restart the curvature memory after a failed line
            search (False).

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
    """The dense quasi-Newton members, ``second_stage="bfgs"``, ``"ssbfgs"`` and
    ``"ssbroyden"`` (an n x n inverse Hessian over the raveled parameters).

    Attributes:
        max_params: refuse networks with more parameters (20000).
        max_linesearch: at most this many line-search evaluations per iteration (10).

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
    (`cgmpinn_jax.solvers.GaussNewton`). Its budget and tolerances are the second stage's
    ([`SecondStageOptions`][cgmpinn_jax.SecondStageOptions]).

    Attributes:
        form: the linear system's form: ``"auto"`` (in float32 ``"svd"`` up to 4096 rows or
            parameters; else the Gramian ``J^T J`` when rows exceed parameters, ``"pcg"``
            from 2048 rows on, the exact kernel ``J J^T`` below; ``"matfree"`` where that
            form would need more than ``memory_limit_gb``),
            ``"kernel"``, ``"gramian"``, ``"pcg"`` (the kernel system by conjugate
            gradients preconditioned with an earlier iteration's Cholesky factor),
            ``"matfree"`` (conjugate gradients on products with ``J`` and ``J^T`` from
            automatic differentiation: no Jacobian and no matrix is stored), or ``"svd"``
            (every trial's step from one thin SVD of ``J``: no squared condition number,
            several times the kernel step's cost).
        mu_init: the first damping, relative to the mean diagonal of ``J^T J`` (1e-3).
        mu_min: the damping's lower bound, relative as ``mu_init`` (1e-15).
        mu_max: the damping's upper bound, relative as ``mu_init`` (1e8).
        max_trials: trials of the damping per iteration (12).
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
    """The per-point weights (paper §2.2-2.4): the refresh period every method's chunks use,
    and the CGM mixture (GMMPINN and CLPINN read ``n_components``, ``beta``, ``eps``).

    Attributes:
        k_upd: steps between two refreshes of the per-point weights (paper k_upd; reference
            200, Fisher-KPP CGMPINN 100). ``None``: the method's on this problem.
        n_components: K, the GMM components (4), or ``"bic"`` (K in 1..6 by BIC each refresh).
        beta: the difficulty exponent beta (1).
        eps: the epsilon of the min-max normalisations (1e-6).
        c_sat: tau reaches 1 at c_sat * k_max (0.8).
        variance_factor: multiply by the precision factor v_m (True).
        system_weighting: on a system (several PDE equations), ``"per_equation"`` (one
            mixture and one weight per point and equation; the default) or ``"norm"`` (one
            mixture on the norm of each point's residual vector, one weight per point; the
            default until ``cgmpinn_jax.config.CONFIG_DEFAULTS`` 2, and what a config stored before it meant by
            leaving the option out); docs/problems-from-data.md has the measurement behind
            the default. No effect on a problem with one equation.

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
    """ReLoBRaLo, the balancing of the loss terms (lambda per term).

    Attributes:
        stages: ``None`` = the method's default, ``"both"`` stages, ``"adam"`` stage only,
            ``"none"``; ``True``/``False`` mean ``"both"``/``"none"``.
        alpha: alpha (0.999).
        rho: rho (0.99).
        temperature: T (1).
        variant: ``"reference"`` (the released code) or ``"original"`` (the paper).
        second_stage_apply: ``"iteration"`` (new lambdas in the objective every iteration of
            a stage after Adam, as the reference) or ``"refresh"`` (only at the weight
            refreshes).

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


#: TrainConfig's option groups: field name -> class
GROUPS = {"adam": AdamOptions, "second": SecondStageOptions, "lbfgs": LBFGSOptions, "dense": DenseOptions,
          "gauss_newton": GaussNewtonOptions, "cgm": CGMOptions, "balancing": ReLoBRaLoOptions}
