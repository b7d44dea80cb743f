"""Training options: [`TrainConfig`][cgmpinn_jax.TrainConfig], the run's stages
([`cgmpinn_jax.stages`][cgmpinn_jax.stages]) and the option groups of its other parts
([`CGMOptions`][cgmpinn_jax.CGMOptions], [`ReLoBRaLoOptions`][cgmpinn_jax.ReLoBRaLoOptions],
[`NetworkOptions`][cgmpinn_jax.NetworkOptions]), its named presets and the traceable `Hyper`.

Every option has the reference code's default (docs/reference-code.md §2, §4-§7, §8.7);
``None`` means "the problem's or the method's own default". A user changes settings here,
never by editing code; every class is frozen (hashable: a config keys the compile cache) and
validated on construction, so a mistake fails before anything is compiled.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Literal, Mapping, NamedTuple, Optional, get_args

import jax
import jax.numpy as jnp
import numpy as np

from ._options import GROUPS, CGMOptions, NetworkOptions, ReLoBRaLoOptions, _is_int, _is_real
from .stages import LBFGS, STAGES, Adam, GaussNewton, StageOptions, StopRule, stage_from_dict

__all__ = [
    "TrainConfig",
    "Hyper",
    "Precision",
    "StopRule",
    "PRESETS",
    "stored_config",
    "CGMOptions",
    "ReLoBRaLoOptions",
    "NetworkOptions",
    "HYPER_OPTIONS",
    "without_time_limits",
]

Precision = Literal["float32", "float64", "mixed"]
"""The values of [`TrainConfig.precision`][cgmpinn_jax.TrainConfig]: ``"float32"`` (the whole
run in float32, as the reference), ``"float64"`` (the whole run in float64) or ``"mixed"`` (Adam
in float32, every later stage in float64)."""


def _group(name: str, value: Any):
    """An option group from its object or a dict of its options (a JSON round trip)."""
    cls = GROUPS[name]
    if isinstance(value, cls):
        return value
    if isinstance(value, Mapping):
        unknown = sorted(set(value) - {f.name for f in dataclasses.fields(cls)})
        if unknown:
            raise ValueError(
                f"TrainConfig.{name}: {cls.__name__} has no option "
                f"{', '.join(map(repr, unknown))}; "
                f"its options: {', '.join(f.name for f in dataclasses.fields(cls))}"
            )
        return cls(**value)
    raise TypeError(
        f"TrainConfig.{name} must be a {cls.__name__} (or a dict of its options), got {value!r}"
    )


def _stages(value: Any) -> tuple:
    """The ``stages`` argument as a tuple of stage objects (a JSON round trip gives dicts)."""
    if isinstance(value, StageOptions):
        value = (value,)
    if not isinstance(value, (tuple, list)) or not value:
        raise ValueError(
            f"TrainConfig.stages must be a non-empty tuple of stages (cgmpinn_jax.stages: "
            f"{', '.join(c.__name__ for c in STAGES.values())}), got {value!r}"
        )
    out = []
    for i, st in enumerate(value):
        if isinstance(st, Mapping):
            st = stage_from_dict(st)
        if not isinstance(st, StageOptions) or type(st) not in STAGES.values():
            raise ValueError(
                f"TrainConfig.stages[{i}] must be a stage of cgmpinn_jax.stages "
                f"({', '.join(c.__name__ for c in STAGES.values())}), got {st!r}"
            )
        if isinstance(st, Adam) and i > 0:
            raise ValueError(f"TrainConfig.stages[{i}]: Adam can only be the first stage")
        out.append(st)
    names = [st.name for st in out]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(
            f"TrainConfig.stages runs {', '.join(map(repr, twice))} twice; a stage is keyed by its "
            f"solver's name in results, so each solver runs at most once"
        )
    return tuple(out)


_TOP = (
    "precision",
    "stages",
    "width",
    "depth",
    "divergence_ratio",
    "time_limit",
    "cgm",
    "balancing",
    "network",
)


@dataclasses.dataclass(frozen=True, init=False)
class TrainConfig:
    """Training options: the run's stages in order, the shape of the run, and each other part's
    options in its own group.

    Every argument is keyword-only; every argument is also an attribute of the same name. A
    group is given as its options object or as a dict of the options that differ from its
    defaults (``cgm={"k_upd": 100}``); ``None`` means the problem's or the method's default.

    Args:
        stages: the run's stages in order, each an object of
            [`cgmpinn_jax.stages`][cgmpinn_jax.stages] holding its solver's options, budget and
            stop rule (default ``(Adam(), LBFGS())``, the reference's Adam + L-BFGS run at the
            problem's budgets). [`Adam`][cgmpinn_jax.stages.Adam] comes first if at all; each
            solver runs at most once. ``stages=(Adam(), LBFGS(), GaussNewton())`` runs Adam,
            L-BFGS, then Gauss-Newton from where L-BFGS stopped. Every stage after Adam starts
            with a weight refresh at the previous stage's last tau, and the curriculum spans
            ``c_sat`` of all stages' steps together.
        precision: ``"float32"`` (default: the faithful setting), ``"float64"`` (the whole
            run), or ``"mixed"`` (Adam in float32; parameters, points, targets and optimizer
            states cast to float64 at the hand-off, the later stages in float64). jax's global
            configuration is untouched: the run scopes ``jax_enable_x64`` and restores it.
        width: hidden width (reference 50). ``None``: the problem's.
        depth: number of hidden layers (reference 4). ``None``: the problem's.
        divergence_ratio: a stage stops (DIVERGED, best parameters restored) when the
            unweighted loss exceeds this multiple of the best seen in the stage (1e6).
        time_limit: wall-clock seconds for the whole run, compilation included (``None``: none):
            at the next call boundary after it, a checkpoint (a resume with a larger limit goes
            on bit for bit), then ``TIME_LIMIT`` for the stage (best point kept) and the later
            ones. Per stage: each stage's ``time_limit``. Not part of a run's identity.
        cgm: the per-point weights: `k_upd`, `n_components`, `beta`, `eps`, `c_sat`,
            `variance_factor`, `system_weighting` ([`CGMOptions`][cgmpinn_jax.CGMOptions]).
        balancing: ReLoBRaLo, the balancing of the loss terms: `stages`, `alpha`, `rho`,
            `temperature`, `variant`, `second_stage_apply`
            ([`ReLoBRaLoOptions`][cgmpinn_jax.ReLoBRaLoOptions]).
        network: the network, when not the method's own: a built-in choice or a user's
            factory, with its options ([`NetworkOptions`][cgmpinn_jax.NetworkOptions]); saved
            with the model. ``network`` appears in `to_dict` only when set.

    Raises:
        TypeError: an argument that is not an option (the message lists those that are).
        ValueError: an option out of range (the message names it).

    Examples:
        >>> from cgmpinn_jax.stages import Adam, GaussNewton
        >>> cfg = TrainConfig(stages=(Adam(steps=100), GaussNewton(steps=50)), precision="float64")
        >>> cfg.stage_names, cfg.stages[1].steps
        (('adam', 'gauss_newton'), 50)
        >>> TrainConfig(lbfgs_steps=5)  # doctest: +NORMALIZE_WHITESPACE
        Traceback (most recent call last):
        ...
        TypeError: TrainConfig has no option 'lbfgs_steps'; its options: precision, stages, width,
        depth, divergence_ratio, time_limit, cgm, balancing, network (a stage's budget and solver
        options live in its stage object: stages=(Adam(steps=...), LBFGS(steps=...)))
    """

    precision: Precision = "float32"
    stages: tuple = (Adam(), LBFGS())
    width: Optional[int] = None
    depth: Optional[int] = None
    divergence_ratio: float = 1e6
    time_limit: Optional[float] = None
    cgm: CGMOptions = CGMOptions()
    balancing: ReLoBRaLoOptions = ReLoBRaLoOptions()
    network: NetworkOptions = NetworkOptions()

    def __init__(self, **options: Any):
        unknown = [k for k in options if k not in _TOP]
        if unknown:
            raise TypeError(
                f"TrainConfig has no option {', '.join(map(repr, unknown))}; its options: "
                f"{', '.join(_TOP)} (a stage's budget and solver options live in its stage object: "
                f"stages=(Adam(steps=...), LBFGS(steps=...)))"
            )
        kw = {f.name: f.default for f in dataclasses.fields(self)}
        kw.update(options)
        kw["stages"] = _stages(kw["stages"])
        for name in GROUPS:
            kw[name] = _group(name, kw[name])
        for name, value in kw.items():
            object.__setattr__(self, name, value)
        self._check()

    def _check(self) -> None:
        for name in ("width", "depth"):
            v = getattr(self, name)
            if v is not None and (not _is_int(v) or v < 1):
                raise ValueError(f"TrainConfig.{name} must be None or a positive int, got {v!r}")
        v = self.divergence_ratio
        if not _is_real(v) or not np.isfinite(float(v)) or not v > 0:
            raise ValueError(f"TrainConfig.divergence_ratio must be a finite number > 0, got {v!r}")
        v = self.time_limit
        if v is not None and (not _is_real(v) or not np.isfinite(float(v)) or not v > 0):
            raise ValueError(
                f"TrainConfig.time_limit must be None or a number of seconds > 0, got {v!r}"
            )
        if self.precision not in get_args(Precision):
            raise ValueError(
                f"TrainConfig.precision must be one of {get_args(Precision)}, "
                f"got {self.precision!r}"
            )

    @property
    def stage_names(self) -> tuple:
        """The run's stages' names, in order (``("adam", "lbfgs")`` by default)."""
        return tuple(st.name for st in self.stages)

    def stage(self, name: str) -> StageOptions:
        """The stage called ``name`` (``KeyError`` when the run has none)."""
        for st in self.stages:
            if st.name == name:
                return st
        raise KeyError(f"the run has no stage {name!r}; its stages: {', '.join(self.stage_names)}")

    @property
    def second_stage_dtype(self) -> str:
        """The floating dtype of the stages after Adam: ``"float32"`` for ``precision="float32"``,
        else ``"float64"``."""
        return "float32" if self.precision == "float32" else "float64"

    def replace(self, **changes: Any) -> "TrainConfig":
        """This config with ``changes``: a field's new value; a group's dict changes only the
        options it names (``cfg.replace(cgm={"k_upd": 10})`` keeps the other CGM options).

        Args:
            **changes: field name -> new value: a top-level option (``precision="float64"``),
                ``stages``, an option group as its object, or as a dict of the options to
                change in it.

        Returns:
            A new, validated [`TrainConfig`][cgmpinn_jax.TrainConfig]; ``self`` is unchanged.

        Examples:
            >>> TrainConfig().replace(cgm={"k_upd": 10}).cgm.k_upd
            10
        """
        kw = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        for name, value in changes.items():
            if name in GROUPS and isinstance(value, Mapping) and name in kw:
                value = _group(name, {**dataclasses.asdict(kw[name]), **value})
            kw[name] = value
        return type(self)(**kw)

    def with_steps(self, *steps: "int | None") -> "TrainConfig":
        """This config with each stage's budget replaced, in the order of ``stages``
        (``None`` keeps a stage's own).

        Examples:
            >>> TrainConfig().with_steps(200, 40).stages  # doctest: +NORMALIZE_WHITESPACE
            (Adam(steps=200, time_limit=None, lr=0.001), LBFGS(steps=40, time_limit=None,
            gtol=None, ftol=None, patience=None, backend='optax', lr=1.0, history=100,
            max_linesearch=10, linesearch='zoom', linesearch_init='increase',
            reset_on_failure=False))
        """
        if len(steps) != len(self.stages):
            raise ValueError(
                f"with_steps takes one budget per stage ({', '.join(self.stage_names)}), "
                f"got {len(steps)}"
            )
        return self.replace(
            stages=tuple(
                st if n is None else st.replace(steps=n) for st, n in zip(self.stages, steps)
            )
        )

    def to_dict(self) -> dict:
        """The options as a dict of plain values: ``stages`` a list of each stage's dict (its
        ``name`` first), each group a dict of its options (JSON-able;
        [`from_dict`][cgmpinn_jax.TrainConfig.from_dict] reads it back). The time limits appear
        only when set.

        Examples:
            >>> TrainConfig().to_dict()["stages"][0]
            {'name': 'adam', 'steps': None, 'lr': 0.001}
        """
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        d["stages"] = [st.to_dict() for st in self.stages]
        for name in GROUPS:
            d[name] = dataclasses.asdict(d[name])
        if d["time_limit"] is None:
            del d["time_limit"]
        if self.network.name is None:
            del d["network"]
        else:
            d["network"] = {"name": self.network.name, "options": self.network.kwargs}
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "TrainConfig":
        """A config from [`to_dict`][cgmpinn_jax.TrainConfig.to_dict]'s dict.

        Args:
            d: option name -> value; ``stages`` a list of stage dicts, a group's value a dict
                of its options.

        Returns:
            The validated [`TrainConfig`][cgmpinn_jax.TrainConfig].

        Raises:
            TypeError: an unknown top-level name.
            ValueError: an unknown option inside a stage or group, or a value out of range.

        Examples:
            >>> TrainConfig.from_dict(
            ...     {"stages": [{"name": "adam", "steps": 10}, {"name": "gauss_newton"}]}
            ... ).stage_names
            ('adam', 'gauss_newton')
        """
        return cls(**d)

    @classmethod
    def preset(cls, name: str, **overrides: Any) -> "TrainConfig":
        """A named setting from [`PRESETS`][cgmpinn_jax.PRESETS], with ``overrides`` on top (as
        [`replace`][cgmpinn_jax.TrainConfig.replace]: a group's dict changes only the options
        it names).

        ``"faithful"`` is the default (the reference's float32 run); ``"accurate"`` is the
        most accurate measured setting (float64 Gauss-Newton; docs/accuracy.md);
        ``"accurate_lbfgs"`` the float64 L-BFGS setting.

        Args:
            name: a key of [`PRESETS`][cgmpinn_jax.PRESETS]: ``"faithful"``, ``"accurate"`` or
                ``"accurate_lbfgs"``.
            **overrides: options on top of the preset, as for
                [`replace`][cgmpinn_jax.TrainConfig.replace].

        Raises:
            ValueError: an unknown preset name.

        Examples:
            >>> TrainConfig.preset("accurate").stage_names
            ('adam', 'gauss_newton')
            >>> TrainConfig.preset("accurate").with_steps(None, 200).stages[1].steps
            200
        """
        if name not in PRESETS:
            raise ValueError(f"unknown preset {name!r}; valid names: {', '.join(PRESETS)}")
        return cls(**PRESETS[name]).replace(**overrides)


PRESETS: dict[str, dict] = {
    "faithful": {},
    "accurate": {
        "precision": "float64",
        "stages": (Adam(), GaussNewton(steps=1500)),
        "balancing": {"second_stage_apply": "refresh"},
    },
    "accurate_lbfgs": {
        "precision": "float64",
        "stages": (Adam(), LBFGS()),
        "balancing": {"second_stage_apply": "refresh"},
    },
}
"""Named settings for [`TrainConfig.preset`][cgmpinn_jax.TrainConfig.preset]: preset name -> the
options that differ from the defaults (as ``TrainConfig`` keyword arguments).

* ``"faithful"``: the defaults, the reference's float32 Adam + L-BFGS run.
* ``"accurate"``: float64, a Gauss-Newton (Levenberg-Marquardt) stage of 1500 iterations after
  Adam, and ReLoBRaLo's lambdas moved into that stage's objective once per weight refresh
  (docs/accuracy.md).
* ``"accurate_lbfgs"``: float64 optax L-BFGS for the problem's budget (docs/decisions.md).
"""


def stored_config(d: Any) -> Any:
    """A stored config dict, normalised: as [`TrainConfig.to_dict`][cgmpinn_jax.TrainConfig.to_dict]
    writes it after a JSON round trip, so that two records of the same settings compare equal;
    ``d`` itself when it is not a config this version reads.

    Args:
        d: a config dict (or anything else, returned as it is).

    Examples:
        >>> stored_config({"stages": [{"name": "adam", "steps": 10}]})["stages"]
        [{'name': 'adam', 'steps': 10, 'lr': 0.001}]
    """
    try:
        cfg = TrainConfig.from_dict(d)
    except (TypeError, ValueError, AttributeError):
        return d
    return json.loads(
        json.dumps(cfg.to_dict(), default=lambda x: x.item() if hasattr(x, "item") else str(x))
    )


def without_time_limits(d: Any) -> Any:
    """A config dict without its time limits (the run's and each stage's): what a run's
    identity compares.

    Args:
        d: a config dict as [`TrainConfig.to_dict`][cgmpinn_jax.TrainConfig.to_dict] writes it
            (anything else is returned as it is).

    Examples:
        >>> without_time_limits(
        ...     {"time_limit": 60.0, "stages": [{"name": "adam", "time_limit": 5.0}]}
        ... )
        {'stages': [{'name': 'adam'}]}
    """
    if not isinstance(d, Mapping):
        return d
    out = {k: v for k, v in d.items() if k != "time_limit"}
    if isinstance(out.get("stages"), list):
        out["stages"] = [
            {k: v for k, v in st.items() if k != "time_limit"} if isinstance(st, Mapping) else st
            for st in out["stages"]
        ]
    return out


HYPER_OPTIONS = {
    "beta": ("cgm", "beta"),
    "eps": ("cgm", "eps"),
    "c_sat": ("cgm", "c_sat"),
    "adam_lr": ("adam", "lr"),
}
"""The hyperparameters a sweep can vary inside one compiled call (the fields of
[`Hyper`][cgmpinn_jax.config.Hyper]) -> where each lives in a
[`TrainConfig`][cgmpinn_jax.TrainConfig], as ``(group, option)``: ``beta``, ``eps`` and ``c_sat``
in ``cgm``, ``adam_lr`` is the [`Adam`][cgmpinn_jax.stages.Adam] stage's ``lr``."""


class Hyper(NamedTuple):
    """Array-valued hyperparameters: the compiled chunk functions take them as (traceable)
    inputs, so that [`sweep`][cgmpinn_jax.sweep] can vmap over them. Each is a ``()`` array
    (one run) or ``(B,)`` (a sweep's B members) of the run's floating dtype.

    Attributes:
        beta: the CGM difficulty exponent, ``cgm.beta``.
        eps: the epsilon of the CGM min-max normalisations, ``cgm.eps``.
        c_sat: the curriculum's saturation fraction, ``cgm.c_sat``.
        adam_lr: Adam's learning rate, the Adam stage's ``lr``.

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
        return cls(*(jnp.asarray(_hyper_value(cfg, f), dtype) for f in cls._fields))

    @staticmethod
    def option(cfg: TrainConfig, name: str, value: float) -> TrainConfig:
        """``cfg`` with the hyperparameter ``name`` set to ``value`` (validated as any option).

        Args:
            cfg: the config to change.
            name: a field of `Hyper` (a key of [`HYPER_OPTIONS`][cgmpinn_jax.config.HYPER_OPTIONS]).
            value: its new value.

        Examples:
            >>> Hyper.option(TrainConfig(), "adam_lr", 1e-2).stages[0].lr
            0.01
        """
        group, option = HYPER_OPTIONS[name]
        if group == "adam":
            if "adam" not in cfg.stage_names:
                raise ValueError(
                    f"{name} is the Adam stage's {option}, and the run has no Adam stage"
                )
            return cfg.replace(
                stages=tuple(
                    st.replace(**{option: value}) if st.name == "adam" else st for st in cfg.stages
                )
            )
        return cfg.replace(**{group: {option: value}})


def _hyper_value(cfg: TrainConfig, field: str) -> float:
    group, option = HYPER_OPTIONS[field]
    if group == "adam":  # a run without Adam still carries Adam's default (unused)
        return getattr(cfg.stage("adam") if "adam" in cfg.stage_names else Adam(), option)
    return getattr(getattr(cfg, group), option)
