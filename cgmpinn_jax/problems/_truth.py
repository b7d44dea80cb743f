"""What a problem's errors are measured against: its exact solution on its test grid, else its
reference data at the reference's own points, else nothing (`truth_of`)."""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import jax.numpy as jnp
import numpy as np

__all__ = ["Truth", "truth_of", "reference_of"]


class Truth(NamedTuple):
    """The values a prediction is compared with, from [`Problem.truth`][cgmpinn_jax.Problem.truth]:
    the exact solution on the problem's test grid, else its reference data at the reference's
    own points.

    Attributes:
        points: ``(M, d)`` array of the points where the values are known.
        values: ``(M,)`` array for one field, ``(M, F)`` for a system (columns in ``fields`` order).
        against: what the values are: ``"exact"`` or ``"reference <source>"`` (said in every
            report).
        fields: the field names of the columns, ``F`` strings.

    Examples:
        >>> from cgmpinn_jax import get_problem
        >>> truth = get_problem("poisson1d").truth()
        >>> truth.against, truth.points.shape, truth.values.shape
        ('exact', (200, 1), (200,))
    """

    points: Any
    values: Any
    against: str
    fields: tuple[str, ...]


@functools.lru_cache(maxsize=32)
def reference_of(problem: Any) -> Any:
    """``problem.reference()``, read once per (hashable) problem instance."""
    return problem.reference()


def _reference_values(problem: Any, ref: Any) -> np.ndarray:
    """The reference's columns in the problem's field order ((M,) for one field)."""
    names = tuple(ref.fields)
    missing = [f for f in problem.fields if f not in names]
    if missing:
        raise ValueError(
            f"{type(problem).__name__}.reference(): the reference {ref.source!r} has the fields "
            f"{names!r}, not {tuple(missing)!r} of the problem's fields {tuple(problem.fields)!r}"
        )
    cols = np.stack([np.asarray(ref.values)[:, names.index(f)] for f in problem.fields], axis=-1)
    return cols[:, 0] if cols.shape[1] == 1 else cols


def truth_of(problem: Any, dtype=None) -> Truth | None:
    """The exact solution on ``problem.test_grid()`` (evaluated in ``dtype``, default the
    current default float), else the reference data, else None."""
    fields = tuple(problem.fields)
    if problem.has_exact:
        pts = problem.test_grid().points
        values = problem.exact_on(jnp.asarray(pts, dtype or jnp.zeros(()).dtype))
        return Truth(pts, values, "exact", fields)
    ref = problem.reference_data()
    if ref is None:
        return None
    return Truth(
        np.asarray(ref.points), _reference_values(problem, ref), f"reference {ref.source}", fields
    )
