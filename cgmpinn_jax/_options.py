"""The options of the parts of a run other than its stages (the per-point weights, the loss
balancing, the network), one frozen dataclass per part, composed by
[`TrainConfig`][cgmpinn_jax.TrainConfig]; each is importable from ``cgmpinn_jax`` and
``cgmpinn_jax.config``. The stages' options live in the stage objects (`cgmpinn_jax.stages`).

Each class holds only the options its part reads and checks them on construction; an error
names the class and the option (``CGMOptions.beta must be >= 0, got -1.0``). Every
default is the reference code's (docs/reference-code.md §2, §4-§7, §8.7); ``None`` means "the
problem's or the method's own default".
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Optional

import numpy as np

__all__ = ["CGMOptions", "ReLoBRaLoOptions", "NetworkOptions", "GN_FORMS", "GROUPS"]

GN_FORMS = ("auto", "kernel", "gramian", "pcg", "matfree", "svd")
"""The Gauss-Newton member's linear-system forms, the values of ``GaussNewton.form``
(`cgmpinn_jax.stages`)."""


def _is_int(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _is_real(v) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(
        v, (bool, np.bool_)
    )


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
            raise ValueError(
                f"{self._name(name)} must be {'None or ' if none else ''}{what}, got {v!r}"
            )

    def _real(
        self,
        name: str,
        *,
        positive: bool = False,
        at_least: Optional[float] = None,
        none: bool = False,
    ) -> None:
        v = getattr(self, name)
        if v is None and none:
            return
        if not _is_real(v) or not math.isfinite(float(v)):
            raise ValueError(
                f"{self._name(name)} must be {'None or ' if none else ''}a finite number, got {v!r}"
            )
        if positive and not v > 0:
            raise ValueError(f"{self._name(name)} must be > 0, got {v!r}")
        if at_least is not None and v < at_least:
            raise ValueError(f"{self._name(name)} must be >= {at_least:g}, got {v!r}")

    def _within(self, name: str, lo: float, hi: float, *, open_lo: bool = False) -> None:
        self._real(name)
        v = getattr(self, name)
        if not ((lo < v) if open_lo else (lo <= v)) or not v <= hi:
            raise ValueError(
                f"{self._name(name)} must be in {'(' if open_lo else '['}{lo:g}, {hi:g}], got {v!r}"
            )

    def _choice(self, name: str, allowed: tuple) -> None:
        v = getattr(self, name)
        if not isinstance(v, str) or v not in allowed:
            raise ValueError(f"{self._name(name)} must be one of {allowed}, got {v!r}")

    def _bool(self, name: str) -> None:
        if not isinstance(getattr(self, name), (bool, np.bool_)):
            raise ValueError(
                f"{self._name(name)} must be True or False, got {getattr(self, name)!r}"
            )


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
            mixture on the norm of each point's residual vector, one weight per point);
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
            raise ValueError(
                "CGMOptions.n_components must be a positive int or 'bic', "
                f"got {self.n_components!r}"
            )
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
            raise ValueError(
                "ReLoBRaLoOptions.stages must be None, a bool, 'both', 'adam' or 'none', "
                f"got {self.stages!r}"
            )
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
            raise ValueError(
                f"NetworkOptions.options must be a dict of keyword arguments, got {self.options!r}"
            ) from None
        if bad:
            raise ValueError(f"NetworkOptions.options: {bad[0]!r} is not a keyword argument name")
        object.__setattr__(self, "options", pairs)
        if self.name is None:
            if pairs:
                raise ValueError(
                    "NetworkOptions.options are set but no network name is given "
                    "(name=None keeps the method's network)"
                )
        elif not isinstance(self.name, str) or not self.name.strip() or self.name.count(":") > 1:
            raise ValueError(
                f"NetworkOptions.name must be None, a built-in network's name or "
                f"'package.module:factory', got {self.name!r}"
            )

    @property
    def kwargs(self) -> dict:
        """The factory's keyword arguments, as a dict."""
        return dict(self.options)


#: TrainConfig's option groups: field name -> class
GROUPS = {"cgm": CGMOptions, "balancing": ReLoBRaLoOptions, "network": NetworkOptions}
