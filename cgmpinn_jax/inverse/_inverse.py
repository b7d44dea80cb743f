"""Inverse problems: unknown coefficients, ``InverseProblem`` and the ready-made inverse
benchmarks (the public face is `cgmpinn_jax.inverse`)."""

from __future__ import annotations

import copy
import dataclasses
import math
from typing import Iterable, Optional, Sequence, cast

import jax
import jax.numpy as jnp
import numpy as np

from ._observations import Observations, synthetic_observations
from ..problems import Dirichlet, Problem, get_problem, validate_problem
from ..problems.base import ForwardWrapper
from ..problems.unknowns import TRANSFORMS, Unknown

__all__ = [
    "Unknown",
    "TRANSFORMS",
    "Observations",
    "synthetic_observations",
    "InverseProblem",
    "UnknownsResult",
    "inverse_problem",
    "declared_unknowns",
    "INVERSE_BENCHMARKS",
]

INVERSE_BENCHMARKS = ("fisher_kpp", "heat", "advection_diffusion")
"""The benchmarks that declare unknown coefficients, so that
[`inverse_problem`][cgmpinn_jax.inverse.inverse_problem] makes a ready-made inverse version of
them: Fisher-KPP (``D``, ``r``), heat (``kappa``) and advection-diffusion (``a``, ``nu``)."""
OBS_TERM = "obs"


# --------------------------------------------------------------------------------------
# the inverse problem


def declared_unknowns(problem: Problem) -> tuple[Unknown, ...]:
    """The unknown coefficients a problem declares: its class attribute ``unknowns``.

    Args:
        problem: a [`Problem`][cgmpinn_jax.Problem].

    Returns:
        A tuple of [`Unknown`][cgmpinn_jax.inverse.Unknown] records, ``()`` if it declares none.

    Raises:
        ValueError: ``unknowns`` is not a tuple (or list) of ``Unknown`` records.

    Examples:
        >>> from cgmpinn_jax import get_problem
        >>> [u.name for u in declared_unknowns(get_problem("fisher_kpp"))]
        ['D', 'r']
    """
    decl = getattr(type(problem), "unknowns", ())
    if not isinstance(decl, (tuple, list)) or not all(isinstance(u, Unknown) for u in decl):
        raise ValueError(
            f"{type(problem).__name__}.unknowns must be a tuple of "
            f"Unknown(name, init, transform), got {decl!r}"
        )
    return tuple(decl)


def _float_fields(problem: Problem) -> list[str]:
    return [
        f.name
        for f in dataclasses.fields(problem)
        if isinstance(getattr(problem, f.name), float)
        and not isinstance(getattr(problem, f.name), bool)
    ]


def _with_values(problem: Problem, values: dict) -> Problem:
    """A copy of ``problem`` whose fields ``values`` hold (possibly traced) values; no
    ``__init__``/``__post_init__`` runs, so tracers are fine."""
    out = copy.copy(problem)
    for name, v in values.items():
        object.__setattr__(out, name, v)
    return out


def _probe_field(z):
    return jnp.sin(jnp.sum(z) + 0.3) + 0.5 * jnp.cos(1.7 * z[0])


def _operator_reads(problem: Problem, name: str) -> bool:
    """Whether ``problem.operator`` depends on the field ``name`` (d N / d coefficient != 0 at
    a few interior points, for a smooth probe field)."""
    lo, hi = np.asarray(problem.lower, np.float64), np.asarray(problem.upper, np.float64)
    fr = np.array([[0.31, 0.57, 0.23], [0.72, 0.41, 0.66], [0.48, 0.83, 0.12]])[:, : problem.dim]
    if fr.shape[1] < problem.dim:
        fr = np.concatenate([fr, np.full((3, problem.dim - fr.shape[1]), 0.37)], axis=1)
    pts = jnp.asarray(lo + (hi - lo) * fr, jnp.zeros(()).dtype)
    c0 = jnp.asarray(float(getattr(problem, name)), pts.dtype)

    def op(c, z):
        return _with_values(problem, {name: c}).operator(_probe_field, z)

    g = jax.jit(jax.vmap(jax.grad(op), in_axes=(None, 0)))(
        c0, pts
    )  # one compile, not many eager ops
    return bool(np.any(np.abs(np.asarray(g)) > 0))


@dataclasses.dataclass(frozen=True)
class WeightedObservation(Dirichlet):
    """The observation piece with a fixed weight: residual ``sqrt(weight) (u(z) - y)``, so
    the term is ``weight * mean((u - y)^2)``."""

    weight: float = 1.0

    def residual(self, u, points, target):
        return math.sqrt(self.weight) * (self.value(u, points) - target)


def _resolve_unknowns(forward: Problem, unknowns) -> tuple[Unknown, ...]:
    cls = type(forward).__name__
    declared = {u.name: u for u in declared_unknowns(forward)}
    floats = _float_fields(forward)
    if unknowns is None:
        if not declared:
            raise ValueError(
                f"{cls} declares no unknown coefficients (class attribute unknowns); pass unknowns="
                f"(Unknown(name, init), ...) naming its float fields "
                f"({', '.join(floats) or 'none'})"
            )
        return tuple(declared.values())
    if isinstance(unknowns, (str, Unknown)):
        unknowns = (unknowns,)
    out = []
    for u in unknowns:
        if isinstance(u, str):
            if u not in declared:
                known = ", ".join(declared) or "none"
                extra = (
                    f"; {u!r} is a field: pass Unknown({u!r}, init) to give an initial guess"
                    if u in floats
                    else ""
                )
                raise ValueError(
                    f"unknown coefficient {u!r} for {cls}: its declared unknowns are {known}{extra}"
                )
            u = declared[u]
        elif not isinstance(u, Unknown):
            raise ValueError(f"unknowns must be names or Unknown(name, init, transform), got {u!r}")
        if u.name not in floats:
            raise ValueError(
                f"unknown coefficient {u.name!r} for {cls}: not a float field of the problem "
                f"(its float fields: {', '.join(floats) or 'none'})"
            )
        out.append(u)
    names = [u.name for u in out]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"unknown coefficient(s) named twice: {', '.join(dup)}")
    if not out:
        raise ValueError(f"no unknown coefficients given for {cls}")
    return tuple(out)


@dataclasses.dataclass(frozen=True)
class InverseProblem(ForwardWrapper):
    """A forward problem whose coefficients ``unknowns`` are identified from ``observations``: a
    [`Problem`][cgmpinn_jax.Problem] that [`train`][cgmpinn_jax.train] trains like any other.

    The loss terms are the forward problem's plus ``"obs"`` (the mean squared misfit at the
    observations, balanced by ReLoBRaLo like the others); the operator reads the trainable
    coefficients (see [`bind`][cgmpinn_jax.inverse.InverseProblem.bind]), while the exact
    solution, the source term and every
    constraint target stay the forward problem's (its field values are the true
    coefficients). Name, coordinates, domain and defaults are the forward problem's, so every
    method's per-problem settings (e.g. CGMPINN's Fisher-KPP input map) apply unchanged.

    Equality and hashing (the compile-cache key) cover ``forward`` and ``unknowns``, not the
    observations: they are data, carried in the training batch, so runs on other
    observations of the same shape reuse the compilation.

    The raw parameters of the unknowns are leaves of the trainable pytree, updated by Adam and
    the second stage alike; the run reports the estimates in ``TrainResult.unknowns`` (an
    [`UnknownsResult`][cgmpinn_jax.inverse.UnknownsResult]).

    Args:
        forward: the forward problem (an instance or a registry name).
        observations: [`Observations`][cgmpinn_jax.inverse.Observations] inside the forward
            problem's domain.
        unknowns: names of the coefficients the forward problem declares, or
            `Unknown` records naming any of its float fields; ``None`` = all it
            declares.
        obs_weight: a fixed factor on the observation term, ``obs_weight * mean((u - y)^2)``
            (ReLoBRaLo's lambdas are scale-free, so the factor survives the balancing).
            Below 1 the PDE residual counts for more against noisy data: the network fits
            the noise less and the estimate moves toward the least-squares fit of the PDE's
            own solutions (``benchmarks/results/inverse_oracle.md``). 1 (the default) is the
            plain term, bit for bit.

    Raises:
        ValueError: naming the culprit: an unknown coefficient name (or one the operator does
            not read), observations of the wrong dimension or outside the domain.
    """

    forward: Problem
    observations: Observations = dataclasses.field(compare=False, repr=False)
    # names or Unknown records; after __post_init__ always the resolved tuple of Unknown
    unknowns: Optional[tuple[str | Unknown, ...]] = None
    obs_weight: float = 1.0

    _bound_forward = None  # set on a bound copy (see bind); not a field

    def __post_init__(self):
        fwd = get_problem(self.forward) if isinstance(self.forward, str) else self.forward
        if isinstance(fwd, InverseProblem):
            raise ValueError(
                "InverseProblem: forward must be a forward problem, got an InverseProblem"
            )
        if not isinstance(fwd, Problem):
            raise TypeError(
                "InverseProblem: forward must be a Problem or a registry name, "
                f"got {type(fwd).__name__}"
            )
        validate_problem(fwd)
        if OBS_TERM in fwd.terms:
            raise ValueError(
                f"InverseProblem: {type(fwd).__name__} already has a term named {OBS_TERM!r}"
            )
        object.__setattr__(self, "forward", fwd)
        unknowns = _resolve_unknowns(fwd, self.unknowns)
        for u in unknowns:
            if not _operator_reads(fwd, u.name):
                raise ValueError(
                    f"unknown coefficient {u.name!r} for {type(fwd).__name__}: "
                    "its operator does not read it "
                    f"(d N[u] / d {u.name} = 0), so the PDE residual cannot identify it"
                )
        object.__setattr__(self, "unknowns", unknowns)
        w = self.obs_weight
        if (
            isinstance(w, bool)
            or not isinstance(w, (int, float, np.floating, np.integer))
            or not np.isfinite(float(w))
            or not float(w) > 0
        ):
            raise ValueError(f"InverseProblem: obs_weight must be a finite number > 0, got {w!r}")
        object.__setattr__(self, "obs_weight", float(w))
        if not isinstance(self.observations, Observations):
            raise TypeError(
                f"InverseProblem: observations must be Observations(points, values), "
                f"got {type(self.observations).__name__}"
            )
        self.observations.check(fwd)

    # ---- what differs from the forward problem (the rest: ForwardWrapper) -----------
    @property
    def terms(self):
        return tuple(self.forward.terms) + (OBS_TERM,)

    # ---- the Problem interface -------------------------------------------------------
    def operator(self, u, z):
        """The forward problem's operator ``N[u](z)`` with the bound (trainable) coefficients,
        or with the true ones when unbound.

        Args:
            u: the field, a function of one point.
            z: ``(d,)`` array, one point.

        Returns:
            The operator's value at ``z``.
        """
        return (self._bound_forward or self.forward).operator(u, z)

    def source(self, z):
        """The source term ``f = N[u*]`` with the true coefficients (data, not the unknowns).

        Args:
            z: ``(d,)`` array, one point.

        Returns:
            The forward problem's source at ``z``.
        """
        return self.forward.source(z)

    def pieces(self):
        # the observed values are the targets (``sample``); a forward problem without an exact
        # solution gets a placeholder target so that nothing asks it for one
        g = {} if self.forward.has_exact else {"g": 0.0}
        obs = (
            Dirichlet(**g)
            if self.obs_weight == 1.0
            else WeightedObservation(weight=self.obs_weight, **g)
        )
        return {**self.forward.pieces(), OBS_TERM: (obs,)}

    def sample_points(self, key):
        return {
            **self.forward.sample_points(key),
            OBS_TERM: (jnp.asarray(self.observations.points),),
        }

    def sample(self, key):
        """The forward problem's training batch plus the observations,
        ``"obs": ((points, measured values),)``.

        Args:
            key: PRNG key of the collocation points.

        Returns:
            ``{term: ((points, targets), ...)}``, one entry per loss term.
        """
        batch = super().sample(key)
        pts = batch[OBS_TERM][0][0]
        batch[OBS_TERM] = ((pts, jnp.asarray(self.observations.values, pts.dtype)),)
        return batch

    # ---- the unknowns ----------------------------------------------------------------
    @property
    def unknown_names(self) -> tuple[str, ...]:
        """The names of the unknowns, in order."""
        return tuple(u.name for u in cast(tuple[Unknown, ...], self.unknowns))

    def true_values(self) -> np.ndarray:
        """The forward problem's values of the ``U`` unknowns (the truth for synthetic data),
        a ``(U,)`` float64 array."""
        return np.array([float(getattr(self.forward, n)) for n in self.unknown_names])

    def init_coeffs(self, dtype=None) -> dict:
        """The raw trainable parameters at the initial guesses.

        Args:
            dtype: their float dtype (default: JAX's default float).

        Returns:
            ``{name: () array}``.
        """
        dtype = dtype or jnp.zeros(()).dtype
        unknowns = cast(tuple[Unknown, ...], self.unknowns)
        return {u.name: jnp.asarray(u.to_raw(u.init), dtype) for u in unknowns}

    def coefficient_values(self, raw: dict) -> dict:
        """The coefficients at the raw parameters (traceable).

        Args:
            raw: ``{name: array}`` of raw parameters, of any shape (e.g. a sweep's leading
                axis).

        Returns:
            ``{name: value}``, arrays of the same shapes.
        """
        unknowns = cast(tuple[Unknown, ...], self.unknowns)
        return {u.name: u.value(raw[u.name]) for u in unknowns}

    def coefficient_array(self, raw: dict) -> jax.Array:
        """The coefficients at the raw parameters as one array, in the order of ``unknowns``.

        Args:
            raw: ``{name: array}`` of raw parameters with common leading axes ``(...)``.

        Returns:
            ``(..., U)`` array of coefficient values.
        """
        vals = self.coefficient_values(raw)
        return jnp.stack([jnp.asarray(vals[n]) for n in self.unknown_names], axis=-1)

    def bind(self, raw: dict) -> "InverseProblem":
        """This problem with its operator reading the coefficients at the raw parameters ``raw``
        (traced inside the objective).  The forward problem's fields are replaced on a copy, so
        its operator code is reused unchanged; the source and targets are not affected.

        Args:
            raw: ``{name: () array}`` of raw parameters (may be traced).

        Returns:
            A bound copy of this problem.
        """
        out = copy.copy(self)
        object.__setattr__(
            out, "_bound_forward", _with_values(self.forward, self.coefficient_values(raw))
        )
        return out


# --------------------------------------------------------------------------------------
# results


@dataclasses.dataclass
class UnknownsResult:
    """The identified coefficients of an inverse run, ``TrainResult.unknowns``.

    Attributes:
        names: the names of the ``U`` unknowns.
        estimate: ``(U,)`` float array, the final estimates.
        true: ``(U,)`` float array, the forward problem's values (the truth for synthetic
            observations).
        init: ``(U,)`` float array, the initial guesses.
    """

    names: tuple[str, ...]
    estimate: np.ndarray  # (U,) final values
    true: np.ndarray  # (U,) the forward problem's values
    init: np.ndarray  # (U,) initial guesses

    @property
    def rel_error(self) -> np.ndarray:
        """(U,) ``|estimate - true| / |true|``."""
        return np.abs(self.estimate - self.true) / np.maximum(np.abs(self.true), 1e-300)

    def as_dict(self) -> dict:
        """``{name: {"estimate", "true", "rel_error", "init"}}`` as plain floats."""
        return {
            n: {"estimate": float(e), "true": float(t), "rel_error": float(r), "init": float(i)}
            for n, e, t, r, i in zip(
                self.names, self.estimate, self.true, self.rel_error, self.init
            )
        }

    def table(self) -> str:
        """The coefficients as a plain-text table: name, estimate, true value, relative error,
        initial guess."""
        lines = [f"{'coefficient':<12}{'estimate':>14}{'true':>14}{'rel. error':>12}{'init':>12}"]
        for n, d in self.as_dict().items():
            lines.append(
                f"{n:<12}{d['estimate']:>14.6g}{d['true']:>14.6g}{d['rel_error']:>12.3e}{d['init']:>12.4g}"
            )
        return "\n".join(lines)


def unknowns_result(problem: InverseProblem, raw: dict) -> UnknownsResult:
    """The `UnknownsResult` of a trained run from its final raw parameters."""
    est = np.asarray(problem.coefficient_array(raw), np.float64)
    return UnknownsResult(
        names=problem.unknown_names,
        estimate=est,
        true=problem.true_values(),
        init=np.array([u.init for u in cast(tuple[Unknown, ...], problem.unknowns)]),
    )


# --------------------------------------------------------------------------------------
# ready-made problems and a one-call run


def inverse_problem(
    problem: Problem | str,
    *,
    unknowns: Optional[Sequence[str | Unknown]] = None,
    n_obs: int = 200,
    noise: float = 0.01,
    key: jax.Array | int = 0,
    observations: Optional[Observations] = None,
    obs_weight: float = 1.0,
    **params,
) -> InverseProblem:
    """The inverse version of a problem, with synthetic observations unless some are given.

    The synthetic observations are ``n_obs`` points uniform in the domain with the exact
    solution plus noise of relative level ``noise``, drawn with ``key`` (see
    [`synthetic_observations`][cgmpinn_jax.inverse.synthetic_observations]).

    Args:
        problem: the forward problem, a [`Problem`][cgmpinn_jax.Problem] or a registry name
            (e.g. one of [`INVERSE_BENCHMARKS`][cgmpinn_jax.inverse.INVERSE_BENCHMARKS]).
        unknowns: the coefficients to identify: names the problem declares, or
            [`Unknown`][cgmpinn_jax.inverse.Unknown] records naming any of its float fields,
            or one comma-separated string (``"D,r"``); ``None`` (default): all it declares.
        n_obs: the number of synthetic observations (default 200).
        noise: their relative noise level (default 0.01: a standard deviation of 1% of that
            of the exact values).
        key: PRNG key (or int seed) of the synthetic observations (default 0).
        observations: measured [`Observations`][cgmpinn_jax.inverse.Observations] to use
            instead of synthetic ones.
        obs_weight: the fixed factor on the observation term (default 1), as in
            [`InverseProblem`][cgmpinn_jax.inverse.InverseProblem].
        **params: overrides of the forward problem's fields, e.g.
            ``inverse_problem("fisher_kpp", n_pde=2000)``.

    Returns:
        The [`InverseProblem`][cgmpinn_jax.inverse.InverseProblem].

    Raises:
        ValueError: ``problem`` is already an inverse problem, or as
            [`InverseProblem`][cgmpinn_jax.inverse.InverseProblem].

    Examples:
        >>> p = inverse_problem("fisher_kpp", n_obs=20, key=1)
        >>> p.unknown_names, len(p.observations)
        (('D', 'r'), 20)
    """
    if isinstance(problem, InverseProblem):
        raise ValueError("inverse_problem: already an InverseProblem")
    forward = get_problem(problem, **params)
    obs = (
        observations
        if observations is not None
        else synthetic_observations(forward, key, n_obs, noise)
    )
    if isinstance(unknowns, str):
        unknowns = as_list(unknowns)  # "D,r" or "D"
    return InverseProblem(forward, obs, None if unknowns is None else tuple(unknowns), obs_weight)


def as_list(names: str | Iterable[str] | None) -> Optional[tuple[str, ...]]:
    """``"D,r"`` -> ``("D", "r")`` (None stays None)."""
    if names is None:
        return None
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",")]
    return tuple(n for n in names if n)
