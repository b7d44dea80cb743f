"""The flat option names of [`TrainConfig`][cgmpinn_jax.TrainConfig] before its options moved
into one group per part (``lbfgs_steps`` is now ``second.steps``, ``gn_mu_init``
``gauss_newton.mu_init``, ...).

For one release the old names keep working, each with a ``DeprecationWarning`` that names the
new spelling: as keyword arguments (``TrainConfig(lbfgs_steps=...)``, ``dataclasses.replace``,
``TrainConfig.preset``) and as attributes (``config.lbfgs_steps``). Stored configs in the flat
form (records, saved models and checkpoints written before the move) load without a warning
through ``TrainConfig.from_dict``; ``flat_dict`` gives a config in that form, for keys that
must stay the same (a study's run keys hash it).
"""

from __future__ import annotations

import dataclasses
import sys
import warnings
from typing import Any, Mapping

from ._options import GROUPS

__all__ = ["FLAT", "new_spelling", "apply_flat", "flat_dict", "warn_read", "CONFIG_DEFAULTS", "legacy_config", "record_config"]

#: every old flat name, in the old field order -> ``(group, option)``; group ``None``: a
#: TrainConfig field that kept its name
FLAT: dict[str, tuple] = {
    "adam_steps": ("adam", "steps"), "lbfgs_steps": ("second", "steps"), "stages": (None, "stages"),
    "stage_steps": (None, "stage_steps"), "k_upd": ("cgm", "k_upd"), "width": (None, "width"), "depth": (None, "depth"),
    "adam_lr": ("adam", "lr"), "precision": (None, "precision"), "second_stage": (None, "second_stage"),
    "lbfgs_lr": ("lbfgs", "lr"), "lbfgs_history": ("lbfgs", "history"), "lbfgs_max_linesearch": ("lbfgs", "max_linesearch"),
    "lbfgs_linesearch": ("lbfgs", "linesearch"), "lbfgs_linesearch_init": ("lbfgs", "linesearch_init"),
    "lbfgs_reset_on_failure": ("lbfgs", "reset_on_failure"), "dense_max_params": ("dense", "max_params"),
    "gn_form": ("gauss_newton", "form"), "gn_mu_init": ("gauss_newton", "mu_init"), "gn_mu_min": ("gauss_newton", "mu_min"),
    "gn_mu_max": ("gauss_newton", "mu_max"), "gn_max_trials": ("gauss_newton", "max_trials"),
    "gn_memory_limit_gb": ("gauss_newton", "memory_limit_gb"), "lbfgs_gtol": ("second", "gtol"),
    "lbfgs_ftol": ("second", "ftol"), "lbfgs_tol_patience": ("second", "patience"),
    "divergence_ratio": (None, "divergence_ratio"), "n_components": ("cgm", "n_components"), "beta": ("cgm", "beta"),
    "eps": ("cgm", "eps"), "c_sat": ("cgm", "c_sat"), "variance_factor": ("cgm", "variance_factor"),
    "system_weighting": ("cgm", "system_weighting"), "relobralo": ("balancing", "stages"),
    "relobralo_alpha": ("balancing", "alpha"), "relobralo_rho": ("balancing", "rho"),
    "relobralo_temperature": ("balancing", "temperature"), "relobralo_variant": ("balancing", "variant"),
    "relobralo_lbfgs_apply": ("balancing", "second_stage_apply"),
}
#: the old names that moved into a group (the deprecated ones)
MOVED = {old: where for old, where in FLAT.items() if where[0] is not None}
#: an old name that set the option of more than one member: the dense members' line search
#: was ``lbfgs_max_linesearch`` too
ALSO = {"lbfgs_max_linesearch": (("dense", "max_linesearch"),)}


def new_spelling(old: str) -> str:
    """``"second.steps (TrainConfig(second=SecondStageOptions(steps=...)))"`` for ``"lbfgs_steps"``."""
    group, option = MOVED[old]
    cls = GROUPS[group].__name__
    also = "".join(f" and {g}.{o}" for g, o in ALSO.get(old, ()))
    return f"{group}.{option}{also} (TrainConfig({group}={cls}({option}=...)), read as config.{group}.{option})"


def _message(old: str) -> str:
    return (f"TrainConfig option {old!r} is deprecated and goes in the next release; its new spelling is "
            f"{new_spelling(old)}")


def _caller_level() -> int:
    """The ``stacklevel`` of the first frame outside this module, ``cgmpinn_jax.config`` and
    ``dataclasses`` (the user's call, through ``preset`` / ``replace`` / ``dataclasses.replace``)."""
    frame, level = sys._getframe(1), 1
    inside = (__name__, "cgmpinn_jax.config", "dataclasses")
    while frame is not None and frame.f_globals.get("__name__") in inside:
        frame, level = frame.f_back, level + 1
    return level


def apply_flat(groups: dict, flat: Mapping[str, Any], *, warn: bool) -> dict:
    """``groups`` (name -> options object) with the old flat options ``flat`` set in them
    (each with a DeprecationWarning when ``warn``). An unknown name is a TypeError."""
    changes: dict[str, dict] = {}
    for old, value in flat.items():
        if old not in MOVED:
            raise TypeError(f"TrainConfig got an unexpected keyword argument {old!r}")
        if warn:
            warnings.warn(_message(old), DeprecationWarning, stacklevel=_caller_level())
        for group, option in (MOVED[old],) + ALSO.get(old, ()):
            changes.setdefault(group, {})[option] = value
    return {name: dataclasses.replace(g, **changes[name]) if name in changes else g for name, g in groups.items()}


CONFIG_DEFAULTS = 2
"""The version of the defaults that a stored config dict leaves out (it stores only the options
that differ from them). Version 1: ``cgm.system_weighting`` was ``"norm"``; version 2 (today):
``"per_equation"``, the better of the two on the lid-driven cavity
(docs/problems-from-data.md). Saved models (``model.json``) and checkpoints (``meta.json``)
store it as ``config_defaults``; one without it is of version 1, and
[`legacy_config`][cgmpinn_jax.config.legacy_config] reads it in today's terms."""


def legacy_config(d: Mapping[str, Any], defaults: int = 1) -> dict:
    """A config dict stored under older defaults, written out in today's terms: under version
    1, a dict (today's or 0.2's flat form) without ``system_weighting`` meant ``"norm"``, which
    it then names.

    Args:
        d: a stored config dict ([`TrainConfig.to_dict`][cgmpinn_jax.TrainConfig.to_dict]'s
            form, or the flat form of 0.2).
        defaults: the version of the defaults it was stored under
            ([`CONFIG_DEFAULTS`][cgmpinn_jax.config.CONFIG_DEFAULTS]).

    Returns:
        A new dict that means the same settings under today's defaults (a copy of ``d``
            when ``defaults`` is today's).

    Examples:
        >>> legacy_config({"adam": {"steps": 10}})
        {'adam': {'steps': 10}, 'cgm': {'system_weighting': 'norm'}}
    """
    d = dict(d)
    if defaults >= 2:
        return d
    if "cgm" in d or not any(k in MOVED for k in d):  # today's grouped form
        cgm = dict(d.get("cgm", {}))
        cgm.setdefault("system_weighting", "norm")
        d["cgm"] = cgm
    else:  # the flat form of 0.2
        d.setdefault("system_weighting", "norm")
    return d


def record_config(record: Mapping[str, Any]) -> dict:
    """The ``config`` of a stored record in today's terms, read under the defaults of the
    record's ``config_defaults`` version (1 when absent; see
    [`legacy_config`][cgmpinn_jax.config.legacy_config]).

    Args:
        record: a stored record with a ``"config"`` dict: a saved model's ``model.json``, or a
            checkpoint's identity.

    Returns:
        The config dict, ready for [`TrainConfig.from_dict`][cgmpinn_jax.TrainConfig.from_dict].

    Examples:
        >>> record_config({"config": {"adam": {"steps": 10}}, "config_defaults": 2})
        {'adam': {'steps': 10}}
    """
    return legacy_config(record["config"], record.get("config_defaults", 1))


def warn_read(old: str) -> None:
    """The DeprecationWarning of reading ``config.<old>``."""
    warnings.warn(_message(old), DeprecationWarning, stacklevel=_caller_level())


def flat_dict(config) -> dict:
    """``config`` in the flat form that ``TrainConfig.to_dict`` wrote before the options moved
    into groups: the same dict, hence the same hash, for the same settings (a study's run keys
    hash it).

    ``stages`` and ``stage_steps`` appear only when set, ``system_weighting`` only when not at
    its default, ``"per_equation"`` since [`CONFIG_DEFAULTS`][cgmpinn_jax.config.CONFIG_DEFAULTS]
    2 (for a problem with one equation, the option does nothing).

    Args:
        config: a [`TrainConfig`][cgmpinn_jax.TrainConfig].

    Returns:
        A dict of the old flat option names (``adam_steps``, ``lbfgs_steps``,
            ``gn_mu_init``, ...) to their values.

    Examples:
        >>> from cgmpinn_jax import TrainConfig
        >>> d = flat_dict(TrainConfig(second={"steps": 10}))
        >>> d["lbfgs_steps"], d["adam_lr"]
        (10, 0.001)
    """
    d = {}
    for old, (group, option) in FLAT.items():
        d[old] = getattr(config if group is None else getattr(config, group), option)
    for name in ("stages", "stage_steps"):
        if d[name] is None:
            del d[name]
    if d["system_weighting"] == "per_equation":
        del d["system_weighting"]
    if config.dense.max_linesearch != config.lbfgs.max_linesearch:  # not expressible in the flat form
        d["dense_max_linesearch"] = config.dense.max_linesearch
    return d

