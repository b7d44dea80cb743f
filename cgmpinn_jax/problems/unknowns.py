"""Unknown coefficients of a PDE: a name, an initial guess and a parameterisation.

A problem declares the coefficients that can be identified from data as a class attribute
``unknowns = (Unknown("D", 0.5, "log"), ...)``: each names a float dataclass field the
operator reads, with an initial guess for inverse training. In an inverse run
([`InverseProblem`][cgmpinn_jax.inverse.InverseProblem]) each becomes one trainable scalar ``theta``
beside the network's parameters, and the operator sees ``value(theta)``:

* ``"log"``: ``value = exp(theta)`` (positive; multiplicative steps: the default of the
  benchmarks' declarations),
* ``"softplus"``: ``value = log(1 + exp(theta))`` (positive; additive steps for values >> 1),
* ``"identity"``: ``value = theta`` (any sign, e.g. a velocity).

This module imports nothing from the rest of the package, so a problem file can import it.

Examples:
    >>> u = Unknown("D", 0.5, "log")
    >>> round(float(u.value(u.to_raw(0.5))), 6)
    0.5
"""

from __future__ import annotations

import dataclasses
import math
from typing import Literal

import jax
import jax.numpy as jnp

__all__ = ["Unknown", "TRANSFORMS"]

Transform = Literal["softplus", "log", "identity"]
TRANSFORMS: tuple[str, ...] = ("softplus", "log", "identity")
"""The parameterisations of an [`Unknown`][cgmpinn_jax.inverse.Unknown], how its trainable raw
parameter ``theta`` maps to the coefficient: ``"softplus"`` (``log(1 + exp(theta))``,
positive), ``"log"`` (``exp(theta)``, positive, multiplicative steps) and ``"identity"``
(``theta``, any sign)."""


@dataclasses.dataclass(frozen=True)
class Unknown:
    """One unknown coefficient of a PDE: its name, initial guess and parameterisation.

    A problem declares the coefficients it can identify from data as the class attribute
    ``unknowns = (Unknown("D", 0.5, "log"), ...)``.  In an inverse run
    ([`InverseProblem`][cgmpinn_jax.inverse.InverseProblem]) each becomes one trainable scalar
    ``theta`` beside the network's parameters, and the operator sees ``value(theta)``.

    Args:
        name: the problem's dataclass field (a float) that the operator reads (e.g. ``"D"``).
        init: the initial guess of the coefficient (> 0 for the positive parameterisations).
        transform: how the raw parameter ``theta`` maps to the coefficient, one of
            [`TRANSFORMS`][cgmpinn_jax.inverse.TRANSFORMS]: ``"softplus"`` (default;
            ``log(1 + exp(theta))``, positive, additive steps for values well above 1),
            ``"log"`` (``exp(theta)``, positive, multiplicative steps: the benchmarks'
            choice) or ``"identity"`` (``theta``, any sign, e.g. a velocity).

    Raises:
        ValueError: a name that is not an identifier, a non-finite ``init``, an unknown
            ``transform``, or ``init <= 0`` with a positive parameterisation.

    Examples:
        >>> u = Unknown("D", 0.5, "log")
        >>> theta = u.to_raw(0.5)
        >>> round(theta, 4), round(float(u.value(theta)), 6)
        (-0.6931, 0.5)
    """

    name: str
    init: float
    transform: Transform = "softplus"

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise ValueError(
                f"Unknown.name must be a field name (an identifier), got {self.name!r}"
            )
        if (
            isinstance(self.init, bool)
            or not isinstance(self.init, (int, float))
            or not math.isfinite(float(self.init))
        ):
            raise ValueError(
                f"Unknown({self.name!r}).init must be a finite number, got {self.init!r}"
            )
        object.__setattr__(self, "init", float(self.init))
        if self.transform not in TRANSFORMS:
            raise ValueError(
                f"Unknown({self.name!r}).transform must be one of {TRANSFORMS}, "
                f"got {self.transform!r}"
            )
        if self.transform != "identity" and not self.init > 0:
            raise ValueError(
                f"Unknown({self.name!r}).init must be > 0 with transform={self.transform!r} "
                f"(a positive coefficient), got {self.init!r}; use transform='identity' for any "
                f"sign"
            )

    def to_raw(self, value: float) -> float:
        """The raw parameter ``theta`` at which the coefficient equals ``value``: the inverse of
        [`value`][cgmpinn_jax.inverse.Unknown.value].

        Args:
            value: a coefficient value (> 0 for the positive parameterisations).

        Returns:
            ``theta``, a Python float.
        """
        v = float(value)
        if self.transform == "log":
            return math.log(v)
        if self.transform == "softplus":
            return v + math.log(-math.expm1(-v))  # inverse softplus, stable for small and large v
        return v

    def value(self, raw: jax.Array) -> jax.Array:
        """The coefficient at the raw parameter (traceable).

        Args:
            raw: the raw parameter ``theta``, an array of any shape.

        Returns:
            The coefficient, an array of the same shape.
        """
        if self.transform == "log":
            return jnp.exp(raw)
        if self.transform == "softplus":
            return jax.nn.softplus(raw)
        return raw
