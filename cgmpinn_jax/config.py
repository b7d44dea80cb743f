"""Training options: [`TrainConfig`][cgmpinn_jax.TrainConfig], the option groups it composes
(one per part of a run: [`AdamOptions`][cgmpinn_jax.AdamOptions] ...
[`ReLoBRaLoOptions`][cgmpinn_jax.ReLoBRaLoOptions]), its named presets, the second stage's
stop rules and the traceable `Hyper`.

Every option has the reference code's default (docs/reference-code.md §2, §4-§7, §8.7);
``None`` means "the problem's or the method's own default". A user changes settings here,
never by editing code; every class is frozen (hashable: a config keys the compile cache) and
validated on construction, so a mistake fails before anything is compiled. The flat names of
0.2 (``lbfgs_steps``, ``gn_mu_init``, ...) still work for one release, with a
``DeprecationWarning`` naming the new spelling (`flat_dict` gives a config in that form).
"""
from __future__ import annotations

import dataclasses
import json
from typing import Any, Literal, Mapping, NamedTuple, Optional, get_args

import jax
import jax.numpy as jnp
import numpy as np

from . import _config_flat as _flat
from ._config_flat import CONFIG_DEFAULTS as CONFIG_DEFAULTS
from ._config_flat import flat_dict as flat_dict
from ._config_flat import legacy_config as legacy_config
from ._config_flat import record_config as record_config
from ._options import (GROUPS, AdamOptions, CGMOptions, DenseOptions, GaussNewtonOptions, LBFGSOptions,
                       NetworkOptions, ReLoBRaLoOptions, SecondStageOptions, _is_int, _is_real)

__all__ = ["TrainConfig", "Hyper", "Precision", "SecondStage", "StopRule", "PRESETS", "stop_rule", "flat_dict", "stored_config",
           "CONFIG_DEFAULTS", "legacy_config", "record_config",
           "AdamOptions", "SecondStageOptions", "LBFGSOptions", "DenseOptions", "GaussNewtonOptions", "CGMOptions",
           "ReLoBRaLoOptions", "NetworkOptions", "HYPER_OPTIONS"]

Precision = Literal["float32", "float64", "mixed"]
"""The values of [`TrainConfig.precision`][cgmpinn_jax.TrainConfig]: ``"float32"`` (the whole run in
float32, as the reference), ``"float64"`` (the whole run in float64) or ``"mixed"`` (Adam in float32,
every later stage in float64)."""
SecondStage = Literal["optax", "jaxopt", "bfgs", "ssbfgs", "ssbroyden", "gauss_newton"]
"""The values of [`TrainConfig.second_stage`][cgmpinn_jax.TrainConfig], the solver that runs the stage
after Adam: ``"optax"`` (optax L-BFGS, the default), ``"jaxopt"`` (jaxopt L-BFGS), ``"bfgs"``,
``"ssbfgs"``, ``"ssbroyden"`` (dense quasi-Newton: BFGS, self-scaled BFGS, self-scaled Broyden) or
``"gauss_newton"`` (Levenberg-Marquardt on the residuals)."""


class StopRule(NamedTuple):
    """The tolerances of a stage after Adam, resolved for one member and one precision
    ([`stop_rule`][cgmpinn_jax.config.stop_rule] builds it from a config).

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


#: Default tolerances per second-stage precision: float32 stops after 1000 iterations without a
#: 0.1% gain (the values every table run used), float64 only at a true stall (no relative gain
#: of 1e-9 in 2000 iterations). Why these values: docs/decisions.md.
_STOP_DEFAULTS = {
    "float32": StopRule(gtol=1e-7, ftol=1e-3, patience=1000),
    "float64": StopRule(gtol=1e-12, ftol=1e-9, patience=2000),
}
#: Gauss-Newton (Levenberg-Marquardt): a plateau is a few hundred iterations, the gradient
#: rule off (it would test a gradient one iteration old). Why: docs/decisions.md.
_GN_STOP_DEFAULTS = {
    "float32": StopRule(gtol=0.0, ftol=1e-6, patience=100),
    "float64": StopRule(gtol=0.0, ftol=1e-10, patience=200),
}


def _group(name: str, value: Any):
    """An option group from its object or a dict of its options (a JSON round trip)."""
    cls = GROUPS[name]
    if isinstance(value, cls):
        return value
    if isinstance(value, Mapping):
        unknown = sorted(set(value) - {f.name for f in dataclasses.fields(cls)})
        if unknown:
            raise ValueError(f"TrainConfig.{name}: {cls.__name__} has no option {', '.join(map(repr, unknown))}; "
                             f"its options: {', '.join(f.name for f in dataclasses.fields(cls))}")
        return cls(**value)
    raise TypeError(f"TrainConfig.{name} must be a {cls.__name__} (or a dict of its options), got {value!r}")


@dataclasses.dataclass(frozen=True, init=False)
class TrainConfig:
    """Training options: the run's shape at the top, each part's options in its own group.

    Every argument is keyword-only. A group is given as its options object or as a dict of
    the options that differ from the defaults (``second={"steps": 1500}``); ``None`` means the
    problem's or the method's default. The flat names of 0.2 (``lbfgs_steps=...``,
    ``gn_mu_init=...``; docs/getting-started.md has the table) are still accepted, as keyword
    arguments and as attributes, for one release, each with a ``DeprecationWarning`` naming its
    new spelling. Every argument is also an attribute of the same name.

    Args:
        precision: ``"float32"`` (default: the faithful setting), ``"float64"`` (the whole
            run), or ``"mixed"`` (Adam in float32; parameters, points, targets and optimizer
            states cast to float64 at the hand-off, the second stage in float64). jax's global
            configuration is untouched: the run scopes ``jax_enable_x64`` and restores it.
        second_stage: the member after Adam: ``"optax"`` (optax L-BFGS with its zoom line
            search; the default), ``"jaxopt"`` (jaxopt.LBFGS), ``"gauss_newton"``
            (Levenberg-Marquardt on the residuals), or a dense inverse-Hessian quasi-Newton
            method for small networks: ``"bfgs"``, ``"ssbfgs"`` (self-scaled BFGS),
            ``"ssbroyden"`` (self-scaled Broyden); see `cgmpinn_jax.solvers`.
        stages: the run's stages in order (``None``: ``("adam", "lbfgs")``). ``"adam"`` comes
            first if at all; a later stage is ``"lbfgs"`` (the member ``second_stage`` names:
            the historic name of the second stage, whichever member) or a member's own name,
            each at most once: ``stages=("adam", "lbfgs", "gauss_newton")`` runs Adam, L-BFGS,
            then Gauss-Newton from where L-BFGS stopped. Every stage after Adam starts with a
            weight refresh at the previous stage's last tau, and the curriculum spans ``c_sat``
            of all stages' steps together.
        stage_steps: each stage's budget, in the order of ``stages`` (``None``, or ``None``
            entries: ``adam.steps`` for Adam and ``second.steps`` for every later stage).
        width: hidden width (reference 50). ``None``: the problem's.
        depth: number of hidden layers (reference 4). ``None``: the problem's.
        divergence_ratio: a stage stops (DIVERGED, best parameters restored) when the
            unweighted loss exceeds this multiple of the best seen in the stage (1e6).
        time_limit: wall-clock seconds for the whole run, compilation included (``None``: none):
            at the next call boundary after it, a checkpoint (a resume with a larger limit goes
            on bit for bit), then ``TIME_LIMIT`` for the stage (best point kept) and the later
            ones. Per stage: ``adam.time_limit``, ``second.time_limit``. Not part of a run's identity.
        adam: the Adam stage: `steps`, `lr`, `time_limit`
            ([`AdamOptions`][cgmpinn_jax.AdamOptions]).
        second: every stage after Adam, whichever member: its budget `steps`, the stop
            rule's `gtol`, `ftol`, `patience`, and `time_limit`
            ([`SecondStageOptions`][cgmpinn_jax.SecondStageOptions]).
        lbfgs: the L-BFGS members (optax, jaxopt): `lr`, `history`, `max_linesearch` and
            jaxopt's line-search options ([`LBFGSOptions`][cgmpinn_jax.LBFGSOptions]).
        dense: the dense members (bfgs, ssbfgs, ssbroyden): `max_params`, `max_linesearch`
            ([`DenseOptions`][cgmpinn_jax.DenseOptions]).
        gauss_newton: the Gauss-Newton member: `form`, the damping's `mu_init`, `mu_min`,
            `mu_max`, `max_trials`, `memory_limit_gb`
            ([`GaussNewtonOptions`][cgmpinn_jax.GaussNewtonOptions]).
        cgm: the per-point weights: `k_upd`, `n_components`, `beta`, `eps`, `c_sat`,
            `variance_factor`, `system_weighting` ([`CGMOptions`][cgmpinn_jax.CGMOptions]).
        balancing: ReLoBRaLo, the balancing of the loss terms: `stages`, `alpha`, `rho`,
            `temperature`, `variant`, `second_stage_apply`
            ([`ReLoBRaLoOptions`][cgmpinn_jax.ReLoBRaLoOptions]).
        network: the network, when not the method's own: a built-in choice or a user's
            factory, with its options ([`NetworkOptions`][cgmpinn_jax.NetworkOptions]); saved
            with the model. ``network`` appears in `to_dict` only when set.
        **flat: the flat option names of 0.2 (``lbfgs_steps=...``, ``gn_mu_init=...``),
            deprecated: each sets its option in its group, with a ``DeprecationWarning``.

    Raises:
        ValueError: an option out of range (the message names it), or a member's options
            set while no stage runs that member.

    Examples:
        >>> cfg = TrainConfig(adam=AdamOptions(steps=100), second={"steps": 50}, precision="float64")
        >>> cfg.adam.steps, cfg.second.steps, cfg.precision
        (100, 50, 'float64')
        >>> TrainConfig.preset("accurate").second_stage
        'gauss_newton'
    """

    precision: Precision = "float32"
    second_stage: SecondStage = "optax"
    stages: Optional[tuple] = None
    stage_steps: Optional[tuple] = None
    width: Optional[int] = None
    depth: Optional[int] = None
    divergence_ratio: float = 1e6
    time_limit: Optional[float] = None
    adam: AdamOptions = AdamOptions()
    second: SecondStageOptions = SecondStageOptions()
    lbfgs: LBFGSOptions = LBFGSOptions()
    dense: DenseOptions = DenseOptions()
    gauss_newton: GaussNewtonOptions = GaussNewtonOptions()
    cgm: CGMOptions = CGMOptions()
    balancing: ReLoBRaLoOptions = ReLoBRaLoOptions()
    network: NetworkOptions = NetworkOptions()

    def __init__(self, *, precision: Precision = "float32", second_stage: SecondStage = "optax",
                 stages: Optional[tuple] = None, stage_steps: Optional[tuple] = None, width: Optional[int] = None,
                 depth: Optional[int] = None, divergence_ratio: float = 1e6, time_limit: Optional[float] = None,
                 adam: AdamOptions = AdamOptions(),
                 second: SecondStageOptions = SecondStageOptions(), lbfgs: LBFGSOptions = LBFGSOptions(),
                 dense: DenseOptions = DenseOptions(), gauss_newton: GaussNewtonOptions = GaussNewtonOptions(),
                 cgm: CGMOptions = CGMOptions(), balancing: ReLoBRaLoOptions = ReLoBRaLoOptions(),
                 network: NetworkOptions = NetworkOptions(), **flat: Any):
        groups = {name: _group(name, value) for name, value in (
            ("adam", adam), ("second", second), ("lbfgs", lbfgs), ("dense", dense), ("gauss_newton", gauss_newton),
            ("cgm", cgm), ("balancing", balancing), ("network", network))}
        if flat:  # the 0.2 flat names, on top of the groups (as dataclasses.replace passes them)
            groups = _flat.apply_flat(groups, flat, warn=True)
        top = dict(precision=precision, second_stage=second_stage, stages=stages, stage_steps=stage_steps, width=width,
                   depth=depth, divergence_ratio=divergence_ratio, time_limit=time_limit)
        for name in ("stages", "stage_steps"):  # a JSON round trip gives lists
            if isinstance(top[name], list):
                top[name] = tuple(top[name])
        for name, value in {**top, **groups}.items():
            object.__setattr__(self, name, value)
        self._check()

    def __getattr__(self, name: str):
        # only reached when normal lookup fails: the 0.2 flat names, read with a warning
        if name in _flat.MOVED:
            group, option = _flat.MOVED[name]
            _flat.warn_read(name)
            return getattr(object.__getattribute__(self, group), option)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def _check(self) -> None:
        self._check_stages()
        for name in ("width", "depth"):
            v = getattr(self, name)
            if v is not None and (not _is_int(v) or v < 1):
                raise ValueError(f"TrainConfig.{name} must be None or a positive int, got {v!r}")
        v = self.divergence_ratio
        if not _is_real(v) or not np.isfinite(float(v)) or not v > 0:
            raise ValueError(f"TrainConfig.divergence_ratio must be a finite number > 0, got {v!r}")
        v = self.time_limit
        if v is not None and (not _is_real(v) or not np.isfinite(float(v)) or not v > 0):
            raise ValueError(f"TrainConfig.time_limit must be None or a number of seconds > 0, got {v!r}")
        for name, allowed in (("precision", get_args(Precision)), ("second_stage", get_args(SecondStage))):
            if getattr(self, name) not in allowed:
                raise ValueError(f"TrainConfig.{name} must be one of {allowed}, got {getattr(self, name)!r}")
        members = self.members
        if "jaxopt" not in members:
            for name in LBFGSOptions.JAXOPT_ONLY:
                if getattr(self.lbfgs, name) != getattr(LBFGSOptions(), name):
                    raise ValueError(f"TrainConfig.lbfgs.{name} is a jaxopt L-BFGS option; it has no effect with "
                                     f"second_stage={self.second_stage!r} (use second_stage='jaxopt')")
        if "gauss_newton" not in members and self.gauss_newton != GaussNewtonOptions():
            changed = [f.name for f in dataclasses.fields(GaussNewtonOptions)
                       if getattr(self.gauss_newton, f.name) != f.default]
            raise ValueError(f"TrainConfig.gauss_newton sets {', '.join(changed)}: Gauss-Newton options; they have no "
                             f"effect with second_stage={self.second_stage!r} (use second_stage='gauss_newton')")

    def _check_stages(self) -> None:
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
                if v is not None and (not _is_int(v) or v < 0):
                    raise ValueError(f"TrainConfig.stage_steps[{i}] must be None or a non-negative int, got {v!r}")

    @property
    def stage_names(self) -> tuple:
        """The run's stages, in order (``stages``, or ``("adam", "lbfgs")``)."""
        return ("adam", "lbfgs") if self.stages is None else self.stages

    @property
    def members(self) -> tuple:
        """The second-stage member of each stage after Adam (``"lbfgs"`` resolved to ``second_stage``)."""
        return tuple(self.second_stage if st == "lbfgs" else st for st in self.stage_names if st != "adam")

    @property
    def second_stage_dtype(self) -> str:
        """The floating dtype of the stages after Adam: ``"float32"`` for ``precision="float32"``,
        else ``"float64"``."""
        return "float32" if self.precision == "float32" else "float64"

    def replace(self, **changes: Any) -> "TrainConfig":
        """This config with ``changes``: a field's new value; a group's dict changes only the
        options it names (``cfg.replace(second={"steps": 10})`` keeps the stop rule's).

        Args:
            **changes: field name -> new value: a top-level option (``precision="float64"``),
                an option group as its object, or as a dict of the options to change in it.

        Returns:
            A new, validated [`TrainConfig`][cgmpinn_jax.TrainConfig]; ``self`` is unchanged.

        Examples:
            >>> TrainConfig.preset("accurate").replace(second={"steps": 10}).second.steps
            10
        """
        kw = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        for name, value in changes.items():
            if name in GROUPS and isinstance(value, Mapping):
                value = _group(name, {**dataclasses.asdict(kw[name]), **value})
            kw[name] = value
        return type(self)(**kw)

    def to_dict(self) -> dict:
        """The options as a dict of plain values, each group a dict of its options (JSON-able;
        [`from_dict`][cgmpinn_jax.TrainConfig.from_dict] reads it back).

        ``stages`` and ``stage_steps`` appear only when set, and ``cgm.system_weighting`` only
        when not at its default, ``"per_equation"`` (a dict stored before
        [`CONFIG_DEFAULTS`][cgmpinn_jax.config.CONFIG_DEFAULTS] 2, when the default was
        ``"norm"``, reads back with [`legacy_config`][cgmpinn_jax.config.legacy_config]). The
        time limits appear only when set.

        Examples:
            >>> TrainConfig(adam={"steps": 10}).to_dict()["adam"]
            {'steps': 10, 'lr': 0.001}
        """
        d = dataclasses.asdict(self)
        for name in ("stages", "stage_steps", "time_limit"):
            if d[name] is None:
                del d[name]
        for group in TIME_LIMIT_GROUPS:
            if d[group]["time_limit"] is None:
                del d[group]["time_limit"]
        if d["cgm"]["system_weighting"] == "per_equation":
            del d["cgm"]["system_weighting"]
        if self.network.name is None:
            del d["network"]
        else:
            d["network"] = {"name": self.network.name, "options": self.network.kwargs}
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "TrainConfig":
        """A config from [`to_dict`][cgmpinn_jax.TrainConfig.to_dict]'s dict, or from the flat dict
        of 0.2 (records, saved models and checkpoints written before the options moved into
        groups; read without a warning).

        Args:
            d: option name -> value; a group's value is a dict of its options.

        Returns:
            The validated [`TrainConfig`][cgmpinn_jax.TrainConfig].

        Raises:
            TypeError: an unknown top-level name.
            ValueError: an unknown option inside a group, or a value out of range.

        Examples:
            >>> TrainConfig.from_dict({"lbfgs_steps": 10, "gn_mu_init": 1e-2, "second_stage": "gauss_newton"}).second.steps
            10
        """
        old = {k: v for k, v in d.items() if k in _flat.MOVED}
        new = {k: v for k, v in d.items() if k not in _flat.MOVED}
        cfg = cls(**new)
        if not old:
            return cfg
        kw = {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg)}
        kw.update(_flat.apply_flat({name: kw[name] for name in GROUPS}, old, warn=False))
        return cls(**kw)

    @classmethod
    def preset(cls, name: str, **overrides: Any) -> "TrainConfig":
        """A named setting from [`PRESETS`][cgmpinn_jax.PRESETS], with ``overrides`` on top (as
        [`replace`][cgmpinn_jax.TrainConfig.replace]: a group's dict changes only the options
        it names).

        ``"faithful"`` is the default (the reference's float32 run); ``"accurate"`` is the
        best measured setting for accuracy (float64 Gauss-Newton,
        ``benchmarks/results/accuracy.md``; why: docs/decisions.md); ``"accurate_lbfgs"`` the
        float64 L-BFGS setting (``benchmarks/results/precision.md``).

        Args:
            name: a key of [`PRESETS`][cgmpinn_jax.PRESETS]: ``"faithful"``, ``"accurate"`` or
                ``"accurate_lbfgs"``.
            **overrides: options on top of the preset, as for
                [`replace`][cgmpinn_jax.TrainConfig.replace].

        Raises:
            ValueError: an unknown preset name.

        Examples:
            >>> TrainConfig.preset("accurate", second={"steps": 200}).second.steps
            200
        """
        if name not in PRESETS:
            raise ValueError(f"unknown preset {name!r}; valid names: {', '.join(PRESETS)}")
        return cls(**PRESETS[name]).replace(**overrides)


PRESETS: dict[str, dict] = {
    "faithful": {},
    "accurate": {"precision": "float64", "second_stage": "gauss_newton", "second": {"steps": 1500},
                 "balancing": {"second_stage_apply": "refresh"}},
    "accurate_lbfgs": {"precision": "float64", "second_stage": "optax", "balancing": {"second_stage_apply": "refresh"}},
}
"""Named settings for [`TrainConfig.preset`][cgmpinn_jax.TrainConfig.preset]: preset name -> the
options that differ from the defaults (as ``TrainConfig`` keyword arguments).

* ``"faithful"``: the defaults, the reference's float32 Adam + L-BFGS run.
* ``"accurate"``: float64, the Gauss-Newton (Levenberg-Marquardt) second stage for 1500
  iterations, and ReLoBRaLo's lambdas moved into the second-stage objective once per weight
  refresh. The measured numbers behind it are in ``benchmarks/results/accuracy.md``.
* ``"accurate_lbfgs"``: float64 optax L-BFGS for the problem's budget
  (``benchmarks/results/precision.md``).

Why ``"accurate"`` is Gauss-Newton and not float64 L-BFGS: docs/decisions.md.
"""


def stop_rule(config: TrainConfig, member: Optional[str] = None) -> StopRule:
    """The tolerances a stage after Adam stops by: each one ``config.second`` sets, else the
    member's default for the stages' precision.

    The defaults: L-BFGS and the dense members in float32 ``gtol=1e-7, ftol=1e-3,
    patience=1000`` (the values every table run used), in float64 ``1e-12, 1e-9, 2000`` (only a
    true stall stops the stage); Gauss-Newton in float32 ``0, 1e-6, 100``, in float64 ``0,
    1e-10, 200`` (an iteration costs about a hundred L-BFGS iterations, and its gradient test
    is off).

    Args:
        config: the run's options.
        member: a second-stage member's name (a value of
            [`SecondStage`][cgmpinn_jax.config.SecondStage]); ``None``: ``config.second_stage``.

    Returns:
        The resolved [`StopRule`][cgmpinn_jax.config.StopRule].

    Examples:
        >>> stop_rule(TrainConfig(precision="float64"))
        StopRule(gtol=1e-12, ftol=1e-09, patience=2000)
        >>> stop_rule(TrainConfig(second={"patience": 50}), "gauss_newton").patience
        50
    """
    member = config.second_stage if member is None else member
    table = _GN_STOP_DEFAULTS if member == "gauss_newton" else _STOP_DEFAULTS
    d, s = table[config.second_stage_dtype], config.second
    return StopRule(
        gtol=d.gtol if s.gtol is None else float(s.gtol),
        ftol=d.ftol if s.ftol is None else float(s.ftol),
        patience=d.patience if s.patience is None else int(s.patience),
    )


def stored_config(d: Any, defaults: int = CONFIG_DEFAULTS) -> Any:
    """A stored config dict, normalised: as today's
    [`TrainConfig.to_dict`][cgmpinn_jax.TrainConfig.to_dict] writes it after a JSON round trip,
    so that two records of the same settings compare equal.

    Args:
        d: a config dict, in the flat form of 0.2 or today's grouped form.
        defaults: the version of the defaults it was stored under
            ([`CONFIG_DEFAULTS`][cgmpinn_jax.config.CONFIG_DEFAULTS]; see
            [`legacy_config`][cgmpinn_jax.config.legacy_config]).

    Returns:
        The normalised dict; ``d`` itself when it is not a config this version reads.

    Examples:
        >>> stored_config({"lbfgs_steps": 10})["second"]["steps"]
        10
    """
    try:
        cfg = TrainConfig.from_dict(legacy_config(d, defaults))
    except (TypeError, ValueError, AttributeError):
        return d
    return json.loads(json.dumps(cfg.to_dict(), default=lambda x: x.item() if hasattr(x, "item") else str(x)))


#: the option groups that hold a stage's own ``time_limit`` (`TrainConfig.time_limit` is the run's)
TIME_LIMIT_GROUPS = ("adam", "second")


def without_time_limits(d: Any) -> Any:
    """A config dict without its time limits: what a run's identity compares."""
    drop = lambda g: {k: v for k, v in g.items() if k != "time_limit"} if isinstance(g, Mapping) else g  # noqa: E731
    return {k: drop(v) if k in TIME_LIMIT_GROUPS else v for k, v in drop(d).items()} if isinstance(d, Mapping) else d


HYPER_OPTIONS = {"beta": ("cgm", "beta"), "eps": ("cgm", "eps"), "c_sat": ("cgm", "c_sat"), "adam_lr": ("adam", "lr")}
"""The hyperparameters a sweep can vary inside one compiled call (the fields of
[`Hyper`][cgmpinn_jax.config.Hyper]) -> where each lives in a
[`TrainConfig`][cgmpinn_jax.TrainConfig], as ``(group, option)``: ``beta``, ``eps`` and ``c_sat``
in ``cgm``, ``adam_lr`` is ``adam.lr``."""


class Hyper(NamedTuple):
    """Array-valued hyperparameters: the compiled chunk functions take them as (traceable)
    inputs, so that [`sweep`][cgmpinn_jax.sweep] can vmap over them. Each is a ``()`` array
    (one run) or ``(B,)`` (a sweep's B members) of the run's floating dtype.

    Attributes:
        beta: the CGM difficulty exponent, ``cgm.beta``.
        eps: the epsilon of the CGM min-max normalisations, ``cgm.eps``.
        c_sat: the curriculum's saturation fraction, ``cgm.c_sat``.
        adam_lr: Adam's learning rate, ``adam.lr``.

    Examples:
        >>> h = Hyper.from_config(TrainConfig(cgm={"beta": 2.0}))
        >>> h.beta.shape, float(h.beta)
        ((), 2.0)
    """

    beta: jax.Array
    eps: jax.Array
    c_sat: jax.Array
    adam_lr: jax.Array

    @classmethod
    def from_config(cls, cfg: TrainConfig, dtype=None) -> "Hyper":
        """The hyperparameters of ``cfg`` as ``()`` arrays.

        Args:
            cfg: the run's options.
            dtype: their dtype (``None``: jax's default floating dtype in the current scope).
        """
        dtype = dtype or jnp.zeros(()).dtype
        return cls(*(jnp.asarray(getattr(getattr(cfg, HYPER_OPTIONS[f][0]), HYPER_OPTIONS[f][1]), dtype)
                     for f in cls._fields))

    @staticmethod
    def option(cfg: TrainConfig, name: str, value: float) -> TrainConfig:
        """``cfg`` with the hyperparameter ``name`` set to ``value`` (validated as any option).

        Args:
            cfg: the config to change.
            name: a field of `Hyper` (a key of [`HYPER_OPTIONS`][cgmpinn_jax.config.HYPER_OPTIONS]).
            value: its new value.

        Examples:
            >>> Hyper.option(TrainConfig(), "adam_lr", 1e-2).adam.lr
            0.01
        """
        group, option = HYPER_OPTIONS[name]
        return cfg.replace(**{group: {option: value}})
