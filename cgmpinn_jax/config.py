"""Training options: [`TrainConfig`][cgmpinn_jax.TrainConfig], its named presets, and the traceable `Hyper`.

Every field has the reference code's default (docs/reference-code.md §2,
§4-§7, §8.7); ``None`` means
"the problem's or the method's own default". A user changes settings here, never by editing
code; the dataclass is frozen (hashable: it keys the compile cache) and validated on
construction, so a mistake fails before anything is compiled.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Literal, NamedTuple, Optional, get_args

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["TrainConfig", "Hyper", "Precision", "SecondStage", "StopRule", "PRESETS", "stop_rule"]

Precision = Literal["float32", "float64", "mixed"]
SecondStage = Literal["optax", "jaxopt", "bfgs", "ssbfgs", "ssbroyden", "gauss_newton"]
RelobraloStages = Literal["both", "adam", "none"]

# options that only the jaxopt L-BFGS reads, with their defaults
_JAXOPT_ONLY = {"lbfgs_linesearch": "zoom", "lbfgs_linesearch_init": "increase", "lbfgs_reset_on_failure": False}
_DENSE = ("bfgs", "ssbfgs", "ssbroyden")
# options that only the Gauss-Newton member reads, with their defaults
_GN_ONLY = {"gn_form": "auto", "gn_mu_init": 1e-3, "gn_mu_min": 1e-15, "gn_mu_max": 1e8, "gn_max_trials": 12,
            "gn_memory_limit_gb": 16.0}


class StopRule(NamedTuple):
    """The second stage's tolerances, resolved for one precision (see `stop_rule`)."""

    gtol: float  # stop (GRAD_TOL) when max|g| <= gtol * max(1, |objective|)
    ftol: float  # relative improvement of the best unweighted loss that resets the stall count
    patience: int  # stop (LOSS_TOL) after this many iterations without such an improvement


#: Default tolerances per second-stage precision (float32: the values every table run used).
#: float32 -- on 1D Poisson the loss stops improving long before the L-BFGS budget ends
#: while failing line searches burn most of the line-search budget every iteration, and
#: running the full budget made the error worse: stop after 1000 iterations without a 0.1%
#: gain. float64 -- the loss keeps falling slowly for the whole budget, well past where the
#: float32 rule would stop it (benchmarks/results/stop_rules.md), so the float64 rule only
#: catches a true stall: no relative gain of 1e-9 in 2000 iterations; the gradient
#: tolerance is relative to the objective and far below what float32 resolves.
_STOP_DEFAULTS = {
    "float32": StopRule(gtol=1e-7, ftol=1e-3, patience=1000),
    "float64": StopRule(gtol=1e-12, ftol=1e-9, patience=2000),
}
#: Gauss-Newton (Levenberg-Marquardt): a plateau is a few hundred iterations, not 2000 (an
#: iteration costs ~100 L-BFGS iterations); the gradient rule is off (it would test a gradient
#: one iteration old, and NO_DECREASE ends a converged run).
_GN_STOP_DEFAULTS = {
    "float32": StopRule(gtol=0.0, ftol=1e-6, patience=100),
    "float64": StopRule(gtol=0.0, ftol=1e-10, patience=200),
}


def _is_real(v) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """Training options (the reference code's defaults; ``None`` = the problem's or method's).

    Every field below is a keyword argument; the sections group them by what they set.

    Attributes: Budget and network
        adam_steps: Adam steps (paper: 5000; Fisher-KPP 8000). ``None``: the problem's.
        lbfgs_steps: second-stage iterations (paper: 10000 L-BFGS; Fisher-KPP 12000). ``None``:
            the problem's.
        stages: the run's stages in order (``None``: ``("adam", "lbfgs")``). ``"adam"`` comes
            first if at all; a later stage is ``"lbfgs"`` (the member ``second_stage`` names:
            the historic name of the second stage, whichever member) or a member's own name
            (``"optax"``, ``"jaxopt"``, ``"bfgs"``, ``"ssbfgs"``, ``"ssbroyden"``,
            ``"gauss_newton"``), each at most once. A third stage is configuration, e.g.
            ``stages=("adam", "lbfgs", "gauss_newton")``: Adam, L-BFGS, then Gauss-Newton from
            where L-BFGS stopped. Every stage after Adam starts with a weight refresh at the
            previous stage's last tau (as the second stage does), and the curriculum spans
            ``c_sat`` of all stages' steps together.
        stage_steps: each stage's budget, in the order of ``stages`` (``None``, or ``None``
            entries: ``adam_steps`` for Adam and ``lbfgs_steps`` for every later stage).
        k_upd: steps between two refreshes of the per-point weights (paper k_upd; reference
            200, Fisher-KPP CGMPINN 100). ``None``: the method's on this problem.
        width: hidden width (reference 50).
        depth: number of hidden layers (reference 4).

    Attributes: Adam stage
        adam_lr: Adam's learning rate (1e-3).

    Attributes: Precision
        precision: ``"float32"`` (default: the faithful setting), ``"float64"`` (the whole run),
            or ``"mixed"`` (Adam in float32; parameters, points, targets and optimizer states
            cast to float64 at the hand-off, the second stage in float64). jax's global
            configuration is untouched: the run scopes ``jax_enable_x64`` and restores it.

    Attributes: Second stage (one iteration per outer step, the objective frozen within it)
        second_stage: ``"optax"`` (optax L-BFGS with its zoom line search; the default),
            ``"jaxopt"`` (jaxopt.LBFGS), or a dense inverse-Hessian quasi-Newton method for
            small networks: ``"bfgs"``, ``"ssbfgs"`` (self-scaled BFGS), ``"ssbroyden"``
            (self-scaled Broyden); see `cgmpinn_jax.solvers._second_stage`.
        lbfgs_lr: the line search's first trial step (1.0; the reference's torch lr is 0.8).
        lbfgs_history: L-BFGS memory (100, as the reference). L-BFGS members only.
        lbfgs_max_linesearch: at most this many line-search evaluations per iteration (10).
        lbfgs_linesearch: jaxopt only: ``"zoom"`` (the default), ``"hager-zhang"`` or
            ``"backtracking"``. Setting it with another ``second_stage`` is an error, not
            silently ignored.
        lbfgs_linesearch_init: jaxopt only: ``"increase"`` (the default), ``"max"`` or
            ``"current"``. Setting it with another ``second_stage`` is an error.
        lbfgs_reset_on_failure: jaxopt only: restart the curvature memory after a failed line
            search (False). Setting it with another ``second_stage`` is an error.
        dense_max_params: the dense members refuse networks with more parameters (20000).
        gn_form: ``second_stage="gauss_newton"`` only
            (`cgmpinn_jax.solvers._gauss_newton`), as are the other ``gn_*`` options: the
            linear system's form (``"auto"``: kernel ``J J^T`` when rows <= parameters, else
            Gramian ``J^T J``; or ``"kernel"`` / ``"gramian"``).
        gn_mu_init: the first damping, relative to the mean diagonal of ``J^T J`` (1e-3).
        gn_mu_min: the damping's lower bound, relative as ``gn_mu_init`` (1e-15).
        gn_mu_max: the damping's upper bound, relative as ``gn_mu_init`` (1e8).
        gn_max_trials: trials of the damping per iteration (12).
        gn_memory_limit_gb: the memory an iteration may hold, GiB (16).
        lbfgs_gtol: the stop rule's gradient tolerance (GRAD_TOL); ``None`` = the default for
            the second stage's precision (`stop_rule`).
        lbfgs_ftol: the stop rule's relative loss improvement (LOSS_TOL); ``None`` = the
            default for the second stage's precision (`stop_rule`).
        lbfgs_tol_patience: the stop rule's iterations without such an improvement (LOSS_TOL);
            ``None`` = the default for the second stage's precision (`stop_rule`).
        divergence_ratio: a stage stops (DIVERGED, best parameters restored) when the
            unweighted loss exceeds this multiple of the best seen in the stage (1e6).

    Attributes: CGM weighting (paper §2.2-2.4)
        n_components: K, the GMM components (4), or ``"bic"`` (K in 1..6 by BIC each refresh).
        beta: the difficulty exponent beta (1).
        eps: the epsilon of the min-max normalisations (1e-6).
        c_sat: tau reaches 1 at c_sat * k_max (0.8).
        variance_factor: multiply by the precision factor v_m (True).
        system_weighting: on a system (several PDE equations), ``"norm"`` (one mixture on the
            norm of each point's residual vector, one weight per point; the default) or
            ``"per_equation"`` (one mixture and one weight per point and equation);
            docs/problems-from-data.md has the measurement behind the default.

    Attributes: ReLoBRaLo (loss balancing)
        relobralo: ``None`` = the method's default, ``"both"`` stages, ``"adam"`` stage only,
            ``"none"``; ``True``/``False`` mean ``"both"``/``"none"``.
        relobralo_alpha: alpha (0.999).
        relobralo_rho: rho (0.99).
        relobralo_temperature: T (1).
        relobralo_variant: ``"reference"`` (the released code) or ``"original"`` (the paper).
        relobralo_lbfgs_apply: ``"iteration"`` (new lambdas in the objective every second-stage
            iteration, as the reference) or ``"refresh"`` (only at the weight refreshes).

    Examples:
        >>> TrainConfig(adam_steps=100, precision="float64").precision
        'float64'
        >>> TrainConfig.preset("accurate").second_stage
        'gauss_newton'
    """

    adam_steps: Optional[int] = None
    lbfgs_steps: Optional[int] = None
    stages: Optional[tuple] = None
    stage_steps: Optional[tuple] = None
    k_upd: Optional[int] = None
    width: Optional[int] = None
    depth: Optional[int] = None
    adam_lr: float = 1e-3
    precision: Precision = "float32"
    second_stage: SecondStage = "optax"
    lbfgs_lr: float = 1.0
    lbfgs_history: int = 100
    lbfgs_max_linesearch: int = 10
    lbfgs_linesearch: str = "zoom"
    lbfgs_linesearch_init: str = "increase"
    lbfgs_reset_on_failure: bool = False
    dense_max_params: int = 20_000
    gn_form: str = "auto"
    gn_mu_init: float = 1e-3
    gn_mu_min: float = 1e-15
    gn_mu_max: float = 1e8
    gn_max_trials: int = 12
    gn_memory_limit_gb: float = 16.0
    lbfgs_gtol: Optional[float] = None
    lbfgs_ftol: Optional[float] = None
    lbfgs_tol_patience: Optional[int] = None
    divergence_ratio: float = 1e6
    n_components: Any = 4
    beta: float = 1.0
    eps: float = 1e-6
    c_sat: float = 0.8
    variance_factor: bool = True
    system_weighting: str = "norm"
    relobralo: Any = None
    relobralo_alpha: float = 0.999
    relobralo_rho: float = 0.99
    relobralo_temperature: float = 1.0
    relobralo_variant: str = "reference"
    relobralo_lbfgs_apply: str = "iteration"

    def __post_init__(self):
        self._check_stages()
        self._check_ints()
        self._check_floats()
        self._check_choices()

    def _check_stages(self):
        for name in ("stages", "stage_steps"):  # a JSON round trip gives lists
            if isinstance(getattr(self, name), list):
                object.__setattr__(self, name, tuple(getattr(self, name)))
        if self.stages is not None:
            allowed = ("adam", "lbfgs") + get_args(SecondStage)
            if not isinstance(self.stages, tuple) or not self.stages:
                raise ValueError(f"TrainConfig.stages must be None or a non-empty tuple of stage names, got {self.stages!r}")
            for i, st in enumerate(self.stages):
                if st not in allowed:
                    raise ValueError(f"TrainConfig.stages[{i}] must be one of {allowed}, got {st!r}")
                if st == "adam" and i > 0:
                    raise ValueError(f"TrainConfig.stages: 'adam' can only be the first stage, got {self.stages!r}")
            if len(set(self.stages)) < len(self.stages):
                raise ValueError(f"TrainConfig.stages names a stage twice: {self.stages!r}")
        if self.stage_steps is not None:
            names = self.stage_names
            if not isinstance(self.stage_steps, tuple) or len(self.stage_steps) != len(names):
                raise ValueError(f"TrainConfig.stage_steps must be None or a tuple of {len(names)} budgets (one per "
                                 f"stage of {names}), got {self.stage_steps!r}")
            for i, v in enumerate(self.stage_steps):
                if v is not None and (not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 0):
                    raise ValueError(f"TrainConfig.stage_steps[{i}] must be None or a non-negative int, got {v!r}")

    @property
    def stage_names(self) -> tuple:
        """The run's stages, in order (``stages``, or ``("adam", "lbfgs")``)."""
        return ("adam", "lbfgs") if self.stages is None else self.stages

    @property
    def members(self) -> tuple:
        """The second-stage member of each stage after Adam (``"lbfgs"`` resolved to ``second_stage``)."""
        return tuple(self.second_stage if st == "lbfgs" else st for st in self.stage_names if st != "adam")

    def _check_ints(self):
        for name in ("adam_steps", "lbfgs_steps"):
            v = getattr(self, name)
            if v is not None and (not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 0):
                raise ValueError(f"TrainConfig.{name} must be a non-negative int, got {v!r}")
        if self.n_components != "bic" and (not isinstance(self.n_components, (int, np.integer)) or self.n_components < 1):
            raise ValueError(f"TrainConfig.n_components must be a positive int or 'bic', got {self.n_components!r}")
        for name in ("k_upd", "width", "depth", "lbfgs_history", "lbfgs_max_linesearch", "lbfgs_tol_patience", "dense_max_params",
                     "gn_max_trials"):
            v = getattr(self, name)
            if v is not None and (not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1):
                raise ValueError(f"TrainConfig.{name} must be a positive int, got {v!r}")

    def _check_floats(self):
        floats = ("adam_lr", "lbfgs_lr", "lbfgs_gtol", "lbfgs_ftol", "divergence_ratio", "beta", "eps", "c_sat",
                  "relobralo_alpha", "relobralo_rho", "relobralo_temperature", "gn_mu_init", "gn_mu_min", "gn_mu_max",
                  "gn_memory_limit_gb")
        for name in floats:
            v = getattr(self, name)
            if v is None and name in ("lbfgs_gtol", "lbfgs_ftol"):
                continue
            if not _is_real(v) or not math.isfinite(float(v)):
                raise ValueError(f"TrainConfig.{name} must be a finite number, got {v!r}")
        for name in ("adam_lr", "lbfgs_lr", "eps", "divergence_ratio", "relobralo_temperature", "gn_mu_init", "gn_mu_min",
                     "gn_mu_max", "gn_memory_limit_gb"):
            if not getattr(self, name) > 0:
                raise ValueError(f"TrainConfig.{name} must be > 0, got {getattr(self, name)!r}")
        for name in ("lbfgs_gtol", "lbfgs_ftol"):
            if getattr(self, name) is not None and getattr(self, name) < 0:
                raise ValueError(f"TrainConfig.{name} must be >= 0, got {getattr(self, name)!r}")
        if not self.gn_mu_min <= self.gn_mu_init <= self.gn_mu_max:
            raise ValueError(f"TrainConfig: need gn_mu_min <= gn_mu_init <= gn_mu_max, got {self.gn_mu_min}, "
                             f"{self.gn_mu_init}, {self.gn_mu_max}")
        if self.beta < 0:
            raise ValueError(f"TrainConfig.beta must be >= 0, got {self.beta}")
        if not 0 < self.c_sat <= 1:
            raise ValueError(f"TrainConfig.c_sat must be in (0, 1], got {self.c_sat}")
        for name in ("relobralo_alpha", "relobralo_rho"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"TrainConfig.{name} must be in [0, 1], got {getattr(self, name)}")

    def _check_choices(self):
        choices = {
            "precision": get_args(Precision),
            "second_stage": get_args(SecondStage),
            "lbfgs_linesearch": ("zoom", "hager-zhang", "backtracking"),
            "lbfgs_linesearch_init": ("increase", "max", "current"),
            "relobralo_lbfgs_apply": ("iteration", "refresh"),
            "relobralo_variant": ("reference", "original"),
            "gn_form": ("auto", "kernel", "gramian"),
            "system_weighting": ("norm", "per_equation"),
        }
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"TrainConfig.{name} must be one of {allowed}, got {getattr(self, name)!r}")
        if self.relobralo not in (None, True, False, "both", "adam", "none"):
            raise ValueError(f"TrainConfig.relobralo must be None, a bool, 'both', 'adam' or 'none', got {self.relobralo!r}")
        members = self.members
        if "jaxopt" not in members:
            for name, default in _JAXOPT_ONLY.items():
                if getattr(self, name) != default:
                    raise ValueError(f"TrainConfig.{name} is a jaxopt L-BFGS option; it has no effect with "
                                     f"second_stage={self.second_stage!r} (use second_stage='jaxopt')")
        if "gauss_newton" not in members:
            for name, default in _GN_ONLY.items():
                if getattr(self, name) != default:
                    raise ValueError(f"TrainConfig.{name} is a Gauss-Newton option; it has no effect with "
                                     f"second_stage={self.second_stage!r} (use second_stage='gauss_newton')")

    def to_dict(self) -> dict:
        """The fields as a dict; ``stages`` and ``stage_steps`` only when set, and
        ``system_weighting`` only when not ``"norm"`` (so that a two-stage config's record, and
        the checkpoints keyed by it, read as before)."""
        d = dataclasses.asdict(self)
        for name in ("stages", "stage_steps"):
            if d[name] is None:
                del d[name]
        if d["system_weighting"] == "norm":
            del d["system_weighting"]
        return d

    @property
    def second_stage_dtype(self) -> str:
        return "float32" if self.precision == "float32" else "float64"

    @classmethod
    def preset(cls, name: str, **overrides) -> "TrainConfig":
        """A named setting from `PRESETS`, with ``overrides`` on top.

        ``"faithful"`` is the default (the reference's float32 run); ``"accurate"`` is the
        best measured setting for accuracy (float64 Gauss-Newton,
        ``benchmarks/results/accuracy.md``); ``"accurate_lbfgs"`` the float64 L-BFGS setting
        (``benchmarks/results/precision.md``)."""
        if name not in PRESETS:
            raise ValueError(f"unknown preset {name!r}; valid names: {', '.join(PRESETS)}")
        return cls(**{**PRESETS[name], **overrides})


#: Named settings for `TrainConfig.preset` (fields that differ from the defaults).
#: "accurate": float64, the Gauss-Newton (Levenberg-Marquardt) second stage for 1500
#: iterations, and ReLoBRaLo's lambdas moved into the second-stage objective once per weight
#: refresh. The measured numbers behind it are in ``benchmarks/results/accuracy.md``.
#: "accurate_lbfgs": the previous accurate preset, float64 optax L-BFGS for the problem's
#: budget; accurate on 1D Poisson CGMPINN, it stalls above a relative e2 of 1e-5 on heat,
#: damped wave and 2D Poisson (``benchmarks/results/precision.md``).
PRESETS: dict[str, dict] = {
    "faithful": {},
    "accurate": {"precision": "float64", "second_stage": "gauss_newton", "lbfgs_steps": 1500,
                 "relobralo_lbfgs_apply": "refresh"},
    "accurate_lbfgs": {"precision": "float64", "second_stage": "optax", "relobralo_lbfgs_apply": "refresh"},
}


def stop_rule(config: TrainConfig, member: Optional[str] = None) -> StopRule:
    """A second-stage member's tolerances (``member``: ``None`` = ``config.second_stage``):
    the config's, or the member's defaults for its precision."""
    member = config.second_stage if member is None else member
    table = _GN_STOP_DEFAULTS if member == "gauss_newton" else _STOP_DEFAULTS
    d = table[config.second_stage_dtype]
    return StopRule(
        gtol=d.gtol if config.lbfgs_gtol is None else float(config.lbfgs_gtol),
        ftol=d.ftol if config.lbfgs_ftol is None else float(config.lbfgs_ftol),
        patience=d.patience if config.lbfgs_tol_patience is None else int(config.lbfgs_tol_patience),
    )


class Hyper(NamedTuple):
    """Array-valued hyperparameters: chunk functions take them as (traceable) inputs so a
    sweep can vmap over them (see `cgmpinn_jax.training._sweep`)."""

    beta: jax.Array
    eps: jax.Array
    c_sat: jax.Array
    adam_lr: jax.Array

    @classmethod
    def from_config(cls, cfg: TrainConfig, dtype=None) -> "Hyper":
        dtype = dtype or jnp.zeros(()).dtype
        return cls(*(jnp.asarray(getattr(cfg, f), dtype) for f in cls._fields))
