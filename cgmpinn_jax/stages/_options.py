"""A run's stages as objects: each stage is one frozen, hashable object that holds its solver's
options, its budget and its stop rule, validated on construction; a run is the tuple of its
stages (``TrainConfig(stages=(Adam(steps=5000), LBFGS(steps=10000)))``). The classes are public
as `cgmpinn_jax.stages`.

Every default is the reference code's (docs/reference-code.md §2, §4-§7); a budget left at
``None`` is the problem's (``ProblemDefaults.adam_steps`` for Adam, ``second_steps`` for a
later stage). A stage's key in results and records is its ``name`` (``"adam"``, ``"lbfgs"``,
``"bfgs"``, ``"ssbfgs"``, ``"ssbroyden"``, ``"gauss_newton"``), so a run holds each at most once.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, Mapping, NamedTuple, Optional

from .._options import GN_FORMS, _Checks

__all__ = [
    "StageOptions",
    "Adam",
    "LBFGS",
    "BFGS",
    "SSBFGS",
    "SSBroyden",
    "GaussNewton",
    "StopRule",
    "STAGES",
    "stage_from_dict",
]


class StopRule(NamedTuple):
    """The tolerances a stage after Adam stops by, resolved for one precision
    (``stage.stop_rule(dtype)`` builds it).

    Attributes:
        gtol: gradient tolerance: the stage stops with ``GRAD_TOL`` when
            ``max|g| <= gtol * max(1, |objective|)`` (0 turns the test off).
        ftol: the relative improvement of the best unweighted loss (PDE + IC + BC) that counts
            as progress and resets the stall count.
        patience: the stage stops with ``LOSS_TOL`` after this many iterations without such an
            improvement.

    Examples:
        >>> StopRule(gtol=1e-7, ftol=1e-3, patience=1000).patience
        1000
    """

    gtol: float
    ftol: float
    patience: int


@dataclasses.dataclass(frozen=True, kw_only=True)
class StageOptions(_Checks):
    """What every stage has: its budget and its own wall-clock limit. Subclasses add their
    solver's options; ``name`` is the stage's key in results and records, ``label`` how
    progress lines and summaries name it."""

    name: ClassVar[str] = ""
    label: ClassVar[str] = ""
    unit: ClassVar[str] = "iterations"

    steps: Optional[int] = None
    time_limit: Optional[float] = None

    def __post_init__(self):
        self._int("steps", 0, none=True)
        self._real("time_limit", positive=True, none=True)

    def to_dict(self) -> dict:
        """The stage as a dict of plain values with its ``name`` first (``time_limit`` only when
        set); [`stage_from_dict`][cgmpinn_jax.stages.stage_from_dict] reads it back."""
        d = {"name": self.name, **dataclasses.asdict(self)}
        if d["time_limit"] is None:
            del d["time_limit"]
        return d

    def replace(self, **changes: Any) -> "StageOptions":
        """This stage with ``changes`` (validated again)."""
        return dataclasses.replace(self, **changes)

    def solver(
        self, obj_fn, *, n_steps: int, n_params: int, dtype: str, divergence_ratio: float, lsq=None
    ):
        """The solver that runs this stage on the objective ``obj_fn(params, w, lam, batch) ->
        (value, terms)``, with its stop rule for ``dtype`` and the run's guards (a
        [`Stage`][cgmpinn_jax.stages.Stage]).

        Args:
            obj_fn: the objective (see [`Stage`][cgmpinn_jax.stages.Stage]).
            n_steps: the stage's resolved budget.
            n_params: the number of trainable parameters.
            dtype: the stage's floating dtype, ``"float32"`` or ``"float64"``.
            divergence_ratio: the guard's ratio (``TrainConfig.divergence_ratio``).
            lsq: the objective's least-squares view (its residual rows and their Jacobian);
                read by [`GaussNewton`][cgmpinn_jax.stages.GaussNewton] only.
        """
        raise NotImplementedError


@dataclasses.dataclass(frozen=True, kw_only=True)
class Adam(StageOptions):
    """The Adam stage: optax Adam with the reference's torch defaults (betas 0.9, 0.999,
    epsilon 1e-8, no weight decay, a constant learning rate), one step per outer step, and a
    refresh of the per-point weights every ``cgm.k_upd`` steps. Only a run's first stage.

    Args:
        steps: the stage's budget, in Adam steps (paper: 5000; Fisher-KPP 8000); ``0`` skips
            the stage. ``None``: the problem's default.
        time_limit: wall-clock seconds for the stage (``None``: no limit). A stage that
            reaches it stops at the next call boundary with status ``TIME_LIMIT``, keeps its
            best point, and the run goes on with the next stage. It changes no step: a run
            that does not reach it is the same run.
        lr: the learning rate, the size of every Adam step (1e-3). Swept inside one compiled
            call by [`sweep`][cgmpinn_jax.sweep] as ``adam_lr``.

    Examples:
        >>> Adam(steps=2000).lr
        0.001
        >>> Adam(lr=-1.0)
        Traceback (most recent call last):
        ...
        ValueError: Adam.lr must be > 0, got -1.0
    """

    name: ClassVar[str] = "adam"
    label: ClassVar[str] = "Adam"
    unit: ClassVar[str] = "steps"

    lr: float = 1e-3

    def __post_init__(self):
        super().__post_init__()
        self._real("lr", positive=True)

    def solver(self, obj_fn, *, n_steps, n_params, dtype, divergence_ratio, lsq=None):
        """Adam's solver (its learning rate, the guards; no tolerances).

        Examples:
            >>> solver = Adam().solver(
            ...     None, n_steps=10, n_params=2, dtype="float32", divergence_ratio=1e6
            ... )
            >>> type(solver).__name__
            'AdamSolver'
        """
        from ._adam import AdamSolver

        return AdamSolver(self.lr, divergence_ratio=divergence_ratio)


@dataclasses.dataclass(frozen=True, kw_only=True)
class _Iterative(StageOptions):
    """A stage after Adam: one iteration per outer step, and a stop rule whose tolerances left
    at ``None`` take the solver's defaults for the stage's precision."""

    #: the defaults of (gtol, ftol, patience) per floating dtype of the stage
    STOP_DEFAULTS: ClassVar[dict] = {
        # float32 stops after 1000 iterations without a 0.1% gain (the values every table run
        # used), float64 only at a true stall. Why these values: docs/decisions.md.
        "float32": StopRule(gtol=1e-7, ftol=1e-3, patience=1000),
        "float64": StopRule(gtol=1e-12, ftol=1e-9, patience=2000),
    }

    gtol: Optional[float] = None
    ftol: Optional[float] = None
    patience: Optional[int] = None

    def __post_init__(self):
        super().__post_init__()
        self._real("gtol", at_least=0.0, none=True)
        self._real("ftol", at_least=0.0, none=True)
        self._int("patience", 1, none=True)

    def stop_rule(self, dtype: str) -> StopRule:
        """The tolerances this stage stops by in ``dtype`` (``"float32"`` or ``"float64"``):
        each one set here, else the solver's default for that dtype.

        Examples:
            >>> LBFGS().stop_rule("float64")
            StopRule(gtol=1e-12, ftol=1e-09, patience=2000)
            >>> GaussNewton(patience=50).stop_rule("float32")
            StopRule(gtol=0.0, ftol=1e-06, patience=50)
        """
        d = self.STOP_DEFAULTS[dtype]
        return StopRule(
            gtol=d.gtol if self.gtol is None else float(self.gtol),
            ftol=d.ftol if self.ftol is None else float(self.ftol),
            patience=d.patience if self.patience is None else int(self.patience),
        )

    def solver(self, obj_fn, *, n_steps, n_params, dtype, divergence_ratio, lsq=None):
        from ._stopping import Stopping

        return self._member(obj_fn, n_steps=n_steps, n_params=n_params, lsq=lsq).with_stopping(
            Stopping(divergence_ratio, self.stop_rule(dtype))
        )

    def _member(self, obj_fn, *, n_steps, n_params, lsq):
        raise NotImplementedError


@dataclasses.dataclass(frozen=True, kw_only=True)
class LBFGS(_Iterative):
    """L-BFGS with a line search: optax's ``lbfgs`` with its zoom (strong-Wolfe) search
    (``backend="optax"``, the default) or ``jaxopt.LBFGS`` (``backend="jaxopt"``). Stop rule
    defaults: float32 ``gtol=1e-7, ftol=1e-3, patience=1000``; float64 ``1e-12, 1e-9, 2000``.

    Args:
        steps: the stage's budget, in iterations (paper: 10000 L-BFGS; Fisher-KPP 12000); ``0``
            skips the stage. ``None``: the problem's default for a stage after Adam.
        time_limit: wall-clock seconds for the stage (``None``: no limit), as for
            [`Adam`][cgmpinn_jax.stages.Adam]: the stage stops with ``TIME_LIMIT`` and keeps its
            best point.
        gtol: the gradient tolerance: the stage stops with ``GRAD_TOL`` when
            ``max|g| <= gtol * max(1, |objective|)``, ``g`` the objective's gradient; ``0``
            turns the test off. ``None``: the solver's default for the stage's precision.
        ftol: the relative improvement of the best unweighted loss (PDE + IC + BC) that counts
            as progress and resets the stall count (``None``: the solver's default).
        patience: the stage stops with ``LOSS_TOL`` after this many iterations in a row without
            such an improvement (``None``: the solver's default).
        backend: ``"optax"`` or ``"jaxopt"``.
        lr: the line search's first trial step, as a multiple of the L-BFGS direction (1.0;
            jaxopt also caps every step at it).
        history: the curvature memory: how many of the latest ``(s, y)`` pairs (parameter and
            gradient changes) build the inverse-Hessian approximation (100, as the reference).
        max_linesearch: at most this many loss+gradient evaluations in one iteration's line
            search (10).
        linesearch: jaxopt only: ``"zoom"`` (strong Wolfe, the default), ``"hager-zhang"`` or
            ``"backtracking"`` (Armijo).
        linesearch_init: jaxopt only: the first trial step of each line search:
            ``"increase"`` (the previous accepted step, increased, capped at ``lr``; the
            default), ``"max"`` (``lr`` every time) or ``"current"`` (the previous accepted
            step).
        reset_on_failure: jaxopt only: empty the curvature memory after a line search that
            found no acceptable step (False).

    A jaxopt-only option set with ``backend="optax"`` is an error: it would have no effect.

    Examples:
        >>> LBFGS(steps=500).history
        100
        >>> LBFGS(linesearch="backtracking")  # doctest: +NORMALIZE_WHITESPACE
        Traceback (most recent call last):
        ...
        ValueError: LBFGS.linesearch is a jaxopt option; it has no effect with backend='optax'
        (use backend='jaxopt')
    """

    name: ClassVar[str] = "lbfgs"
    label: ClassVar[str] = "L-BFGS"
    #: the options only the jaxopt backend reads
    JAXOPT_ONLY: ClassVar[tuple] = ("linesearch", "linesearch_init", "reset_on_failure")

    backend: str = "optax"
    lr: float = 1.0
    history: int = 100
    max_linesearch: int = 10
    linesearch: str = "zoom"
    linesearch_init: str = "increase"
    reset_on_failure: bool = False

    def __post_init__(self):
        super().__post_init__()
        self._choice("backend", ("optax", "jaxopt"))
        self._real("lr", positive=True)
        self._int("history", 1)
        self._int("max_linesearch", 1)
        self._choice("linesearch", ("zoom", "hager-zhang", "backtracking"))
        self._choice("linesearch_init", ("increase", "max", "current"))
        self._bool("reset_on_failure")
        if self.backend == "optax":
            for f in self.JAXOPT_ONLY:
                if getattr(self, f) != LBFGS.__dataclass_fields__[f].default:
                    raise ValueError(
                        f"LBFGS.{f} is a jaxopt option; it has no effect with backend='optax' "
                        f"(use backend='jaxopt')"
                    )

    def _member(self, obj_fn, *, n_steps, n_params, lsq):
        from ._second_stage import JaxoptLBFGS, OptaxLBFGS

        if self.backend == "optax":
            return OptaxLBFGS(
                obj_fn, lr=self.lr, history=self.history, max_linesearch=self.max_linesearch
            )
        return JaxoptLBFGS(
            obj_fn,
            lr=self.lr,
            history=self.history,
            max_linesearch=self.max_linesearch,
            maxiter=max(1, n_steps),
            linesearch=self.linesearch,
            linesearch_init=self.linesearch_init,
            reset_on_failure=self.reset_on_failure,
        )

    def to_dict(self) -> dict:
        d = super().to_dict()
        if self.backend == "optax":
            for f in self.JAXOPT_ONLY:
                del d[f]
        return d


@dataclasses.dataclass(frozen=True, kw_only=True)
class _Dense(_Iterative):
    """A dense inverse-Hessian quasi-Newton stage over the raveled parameters."""

    max_params: int = 20_000
    max_linesearch: int = 10

    def __post_init__(self):
        super().__post_init__()
        self._int("max_params", 1)
        self._int("max_linesearch", 1)

    def _member(self, obj_fn, *, n_steps, n_params, lsq):
        from ._second_stage import DenseQuasiNewton

        if n_params > self.max_params:
            raise ValueError(
                f"the {self.name!r} stage stores a dense {n_params} x {n_params} inverse "
                f"Hessian; the network has {n_params} parameters > "
                f"{type(self).__name__}.max_params={self.max_params}. "
                f"Use LBFGS() or raise max_params."
            )
        return DenseQuasiNewton(
            obj_fn, method=self.name, max_params=self.max_params, max_linesearch=self.max_linesearch
        )


@dataclasses.dataclass(frozen=True, kw_only=True)
class BFGS(_Dense):
    """BFGS: a full n x n inverse-Hessian approximation over the raveled parameters with a
    strong-Wolfe line search, for small networks. Stop rule defaults as for
    [`LBFGS`][cgmpinn_jax.stages.LBFGS].

    Args:
        steps: the stage's budget, in iterations (paper: 10000 L-BFGS; Fisher-KPP 12000); ``0``
            skips the stage. ``None``: the problem's default for a stage after Adam.
        time_limit: wall-clock seconds for the stage (``None``: no limit), as for
            [`Adam`][cgmpinn_jax.stages.Adam]: the stage stops with ``TIME_LIMIT`` and keeps its
            best point.
        gtol: the gradient tolerance: the stage stops with ``GRAD_TOL`` when
            ``max|g| <= gtol * max(1, |objective|)``, ``g`` the objective's gradient; ``0``
            turns the test off. ``None``: the solver's default for the stage's precision.
        ftol: the relative improvement of the best unweighted loss (PDE + IC + BC) that counts
            as progress and resets the stall count (``None``: the solver's default).
        patience: the stage stops with ``LOSS_TOL`` after this many iterations in a row without
            such an improvement (``None``: the solver's default).
        max_params: the largest network, in parameters, the stage accepts (20000: an n x n
            matrix of 4e8 entries); a larger one is refused before anything is compiled.
        max_linesearch: at most this many loss+gradient evaluations in one iteration's line
            search (10).

    Examples:
        >>> BFGS(steps=100).max_params
        20000
    """

    name: ClassVar[str] = "bfgs"
    label: ClassVar[str] = "dense bfgs"


@dataclasses.dataclass(frozen=True, kw_only=True)
class SSBFGS(_Dense):
    """Self-scaled BFGS: a full n x n inverse-Hessian approximation over the raveled parameters
    with a strong-Wolfe line search, for small networks. Stop rule defaults as for
    [`LBFGS`][cgmpinn_jax.stages.LBFGS].

    Args:
        steps: the stage's budget, in iterations (paper: 10000 L-BFGS; Fisher-KPP 12000); ``0``
            skips the stage. ``None``: the problem's default for a stage after Adam.
        time_limit: wall-clock seconds for the stage (``None``: no limit), as for
            [`Adam`][cgmpinn_jax.stages.Adam]: the stage stops with ``TIME_LIMIT`` and keeps its
            best point.
        gtol: the gradient tolerance: the stage stops with ``GRAD_TOL`` when
            ``max|g| <= gtol * max(1, |objective|)``, ``g`` the objective's gradient; ``0``
            turns the test off. ``None``: the solver's default for the stage's precision.
        ftol: the relative improvement of the best unweighted loss (PDE + IC + BC) that counts
            as progress and resets the stall count (``None``: the solver's default).
        patience: the stage stops with ``LOSS_TOL`` after this many iterations in a row without
            such an improvement (``None``: the solver's default).
        max_params: the largest network, in parameters, the stage accepts (20000: an n x n
            matrix of 4e8 entries); a larger one is refused before anything is compiled.
        max_linesearch: at most this many loss+gradient evaluations in one iteration's line
            search (10).

    Examples:
        >>> SSBFGS(steps=100).max_params
        20000
    """

    name: ClassVar[str] = "ssbfgs"
    label: ClassVar[str] = "dense ssbfgs"


@dataclasses.dataclass(frozen=True, kw_only=True)
class SSBroyden(_Dense):
    """Self-scaled Broyden: a full n x n inverse-Hessian approximation over the raveled
    parameters with a strong-Wolfe line search, for small networks. Stop rule defaults as for
    [`LBFGS`][cgmpinn_jax.stages.LBFGS].

    Args:
        steps: the stage's budget, in iterations (paper: 10000 L-BFGS; Fisher-KPP 12000); ``0``
            skips the stage. ``None``: the problem's default for a stage after Adam.
        time_limit: wall-clock seconds for the stage (``None``: no limit), as for
            [`Adam`][cgmpinn_jax.stages.Adam]: the stage stops with ``TIME_LIMIT`` and keeps its
            best point.
        gtol: the gradient tolerance: the stage stops with ``GRAD_TOL`` when
            ``max|g| <= gtol * max(1, |objective|)``, ``g`` the objective's gradient; ``0``
            turns the test off. ``None``: the solver's default for the stage's precision.
        ftol: the relative improvement of the best unweighted loss (PDE + IC + BC) that counts
            as progress and resets the stall count (``None``: the solver's default).
        patience: the stage stops with ``LOSS_TOL`` after this many iterations in a row without
            such an improvement (``None``: the solver's default).
        max_params: the largest network, in parameters, the stage accepts (20000: an n x n
            matrix of 4e8 entries); a larger one is refused before anything is compiled.
        max_linesearch: at most this many loss+gradient evaluations in one iteration's line
            search (10).

    Examples:
        >>> SSBroyden(steps=100).max_params
        20000
    """

    name: ClassVar[str] = "ssbroyden"
    label: ClassVar[str] = "dense ssbroyden"


@dataclasses.dataclass(frozen=True, kw_only=True)
class GaussNewton(_Iterative):
    """Gauss-Newton (Levenberg-Marquardt) on the objective's residual rows.

    An iteration forms the residuals ``r`` (M rows) and their Jacobian ``J`` (M x P), solves
    the damped system ``(J^T J + mu I) d = -J^T r`` for the step ``d``, and accepts ``x + d``
    when the objective falls. The damping ``mu`` interpolates between a Gauss-Newton step
    (small ``mu``) and a short gradient step (large ``mu``); it shrinks after an accepted trial
    and grows after a rejected one (Nielsen's rule), and carries over to the next iteration.
    Every ``mu`` is relative to the Jacobian's scale, the mean diagonal of ``J^T J``. Stop rule
    defaults: float32 ``gtol=0, ftol=1e-6, patience=100``; float64 ``0, 1e-10, 200`` (an
    iteration costs about a hundred L-BFGS iterations; the gradient test is off).

    Args:
        steps: the stage's budget, in iterations (paper: 10000 L-BFGS; Fisher-KPP 12000); ``0``
            skips the stage. ``None``: the problem's default for a stage after Adam.
        time_limit: wall-clock seconds for the stage (``None``: no limit), as for
            [`Adam`][cgmpinn_jax.stages.Adam]: the stage stops with ``TIME_LIMIT`` and keeps its
            best point.
        gtol: the gradient tolerance: the stage stops with ``GRAD_TOL`` when
            ``max|g| <= gtol * max(1, |objective|)``, ``g`` the objective's gradient; ``0``
            turns the test off. ``None``: the solver's default for the stage's precision.
        ftol: the relative improvement of the best unweighted loss (PDE + IC + BC) that counts
            as progress and resets the stall count (``None``: the solver's default).
        patience: the stage stops with ``LOSS_TOL`` after this many iterations in a row without
            such an improvement (``None``: the solver's default).
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

    Examples:
        >>> GaussNewton(steps=300, mu_init=1e-2).form
        'auto'
    """

    name: ClassVar[str] = "gauss_newton"
    label: ClassVar[str] = "Gauss-Newton"
    STOP_DEFAULTS: ClassVar[dict] = {  # a plateau is a few hundred iterations (docs/decisions.md)
        "float32": StopRule(gtol=0.0, ftol=1e-6, patience=100),
        "float64": StopRule(gtol=0.0, ftol=1e-10, patience=200),
    }

    form: str = "auto"
    mu_init: float = 1e-3
    mu_min: float = 1e-15
    mu_max: float = 1e8
    max_trials: int = 12
    memory_limit_gb: float = 16.0

    def __post_init__(self):
        super().__post_init__()
        self._choice("form", GN_FORMS)
        for name in ("mu_init", "mu_min", "mu_max", "memory_limit_gb"):
            self._real(name, positive=True)
        self._int("max_trials", 1)
        if not self.mu_min <= self.mu_init <= self.mu_max:
            raise ValueError(
                f"GaussNewton: need mu_min <= mu_init <= mu_max, got {self.mu_min}, "
                f"{self.mu_init}, {self.mu_max}"
            )

    def form_for(self, rows: int, n_params: int, itemsize: int) -> str:
        """The linear-system form this stage uses on a ``rows x n_params`` Jacobian of
        ``itemsize``-byte floats (``form``, or what ``"auto"`` chooses there).

        Examples:
            >>> (
            ...     GaussNewton().form_for(1000, 5000, 8),
            ...     GaussNewton(form="gramian").form_for(1000, 5000, 8),
            ... )
            ('kernel', 'gramian')
        """
        from ._gauss_newton import lm_solve_form

        return lm_solve_form(rows, n_params, self.form, self.memory_limit_gb * 2**30, itemsize)

    def memory_bytes(self, rows: int, n_params: int, itemsize: int) -> int:
        """An estimate of the bytes one iteration holds at its peak in the form it uses there."""
        from ._gauss_newton import memory_bytes

        return memory_bytes(rows, n_params, itemsize, self.form_for(rows, n_params, itemsize))

    def _member(self, obj_fn, *, n_steps, n_params, lsq):
        from ._gauss_newton import GaussNewtonSolver

        if lsq is None:
            raise ValueError(
                "the Gauss-Newton stage needs the objective's least-squares view (lsq)"
            )
        return GaussNewtonSolver(
            obj_fn,
            lsq,
            form=self.form,
            mu_init=self.mu_init,
            mu_min=self.mu_min,
            mu_max=self.mu_max,
            max_trials=self.max_trials,
            limit_bytes=self.memory_limit_gb * 2**30,
        )


STAGES: dict[str, type[StageOptions]] = {
    c.name: c for c in (Adam, LBFGS, BFGS, SSBFGS, SSBroyden, GaussNewton)
}
"""Every stage class by its name (the key in results and records)."""


def stage_from_dict(d: Mapping[str, Any]) -> StageOptions:
    """A stage from its [`to_dict`][cgmpinn_jax.stages.StageOptions.to_dict] dict.

    Args:
        d: the stage's ``name`` and its options.

    Raises:
        ValueError: no or an unknown ``name``, or an option the stage does not have (the
            message lists the ones it has).

    Examples:
        >>> stage_from_dict({"name": "gauss_newton", "steps": 20})  # doctest: +NORMALIZE_WHITESPACE
        GaussNewton(steps=20, time_limit=None, gtol=None, ftol=None, patience=None, form='auto',
                    mu_init=0.001, mu_min=1e-15, mu_max=100000000.0, max_trials=12,
                    memory_limit_gb=16.0)
    """
    if not isinstance(d, Mapping) or d.get("name") not in STAGES:
        raise ValueError(f"a stage dict needs a 'name', one of {tuple(STAGES)}, got {d!r}")
    cls = STAGES[d["name"]]
    opts = {k: v for k, v in d.items() if k != "name"}
    fields = [f.name for f in dataclasses.fields(cls)]
    unknown = sorted(set(opts) - set(fields))
    if unknown:
        raise ValueError(
            f"{cls.__name__} has no option {', '.join(map(repr, unknown))}; "
            f"its options: {', '.join(fields)}"
        )
    return cls(**opts)
