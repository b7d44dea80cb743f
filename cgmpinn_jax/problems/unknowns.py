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


@dataclasses.dataclass(frozen=True)
class Unknown:
    """One unknown coefficient.

    Args:
        name: the problem's dataclass field the operator reads (e.g. ``"D"``).
        init: the initial guess (must be > 0 for the positive parameterisations).
        transform: ``"softplus"`` (default), ``"log"`` or ``"identity"``: how the trainable
            raw parameter ``theta`` maps to the coefficient.
    """

    name: str
    init: float
    transform: Transform = "softplus"

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise ValueError(f"Unknown.name must be a field name (an identifier), got {self.name!r}")
        if isinstance(self.init, bool) or not isinstance(self.init, (int, float)) or not math.isfinite(float(self.init)):
            raise ValueError(f"Unknown({self.name!r}).init must be a finite number, got {self.init!r}")
        object.__setattr__(self, "init", float(self.init))
        if self.transform not in TRANSFORMS:
            raise ValueError(f"Unknown({self.name!r}).transform must be one of {TRANSFORMS}, got {self.transform!r}")
        if self.transform != "identity" and not self.init > 0:
            raise ValueError(f"Unknown({self.name!r}).init must be > 0 with transform={self.transform!r} "
                             f"(a positive coefficient), got {self.init!r}; use transform='identity' for any sign")

    def to_raw(self, value: float) -> float:
        """The raw parameter ``theta`` with ``value(theta) = value`` (a Python float)."""
        v = float(value)
        if self.transform == "log":
            return math.log(v)
        if self.transform == "softplus":
            return v + math.log(-math.expm1(-v))  # inverse softplus, stable for small and large v
        return v

    def value(self, raw: jax.Array) -> jax.Array:
        """The coefficient at the raw parameter ``raw`` (traceable)."""
        if self.transform == "log":
            return jnp.exp(raw)
        if self.transform == "softplus":
            return jax.nn.softplus(raw)
        return raw
