"""Error metrics on a problem's test grid (docs/reference-code.md §9).

* ``e2`` = RMS error ``sqrt(mean((u_hat - u)^2))``: what the reference code (and so every
  table of the paper) calls the "L2 error"; the paper's text writes the plain 2-norm.
* ``rel_e2`` = RMS(err) / RMS(u) (= ||err||_2 / ||u||_2), ``inf`` when RMS(u) <= 1e-10.
* ``e_inf`` = max |u_hat - u|.
* ``l2`` = the plain vector 2-norm ||u_hat - u||_2 (= e2 * sqrt(M) for M test points), the
  "L2 error" as the paper's text writes it.

``u`` is the problem's exact solution on its test grid, else its reference data at the
reference's points (``against`` says which); a problem with neither gets `no_metrics`
(NaN values, ``against="none"``), never a comparison with a stand-in. On a system the four
numbers pool every field and point together (PINNacle's L2RE: ``||U_hat - U||_2 / ||U||_2``
over the stacked fields) and ``per_field`` holds each field's own.

Examples:
    >>> import numpy as np
    >>> m = error_metrics(np.array([1.0, 2.0]), np.array([1.0, 1.0]))
    >>> round(m.e2, 6), round(m.e_inf, 6)
    (0.707107, 1.0)
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import numpy as np

__all__ = ["Metrics", "error_metrics", "evaluate", "compare", "no_metrics", "ERRORS"]

ERRORS = ("e2", "rel_e2", "e_inf", "l2")
"""The names of the four error fields of [`Metrics`][cgmpinn_jax.Metrics], in order: the keys
of ``Metrics.as_dict()`` and the metrics a sweep reports per run."""


class Metrics(NamedTuple):
    """Errors of a prediction ``u_hat`` against the exact solution ``u`` on ``M`` test points.

    A named tuple of floats computed in float64; on a system of ``F`` fields the four errors
    pool all ``M * F`` values (``u`` and ``u_hat`` flattened) and ``per_field`` holds each
    field's own.

    Attributes:
        e2: RMS error ``sqrt(mean((u_hat - u)^2))``, what the reference code and every table
            of the paper call the "L2 error".
        rel_e2: relative error ``RMS(u_hat - u) / RMS(u)`` (= ``||u_hat - u||_2 / ||u||_2``);
            ``inf`` when ``RMS(u) <= 1e-10``.
        e_inf: max error ``max |u_hat - u|``.
        l2: the plain vector 2-norm ``||u_hat - u||_2`` (= ``e2 * sqrt(M)``), as the paper's
            text writes the L2 error; it grows with the number of test points, so compare it
            only between runs on the same test grid.
        against: what ``u`` is: ``"exact"`` (the exact solution), ``"reference <source>"`` (a
            problem's reference data) or ``"none"`` (nothing to compare with: the errors are
            NaN, see [`no_metrics`][cgmpinn_jax.metrics.no_metrics]).
        per_field: on a system, ``((field, Metrics), ...)`` with each field's errors, in the
            order of the problem's fields; ``()`` for a single field.

    Examples:
        >>> m = error_metrics([1.0, 2.0, 3.0], [1.0, 2.0, 2.0])
        >>> m.describe()
        'rel_e2=3.333e-01 e2=5.774e-01 e_inf=1.000e+00 (against exact)'
    """

    e2: float
    rel_e2: float
    e_inf: float
    l2: float
    against: str = "exact"  # "exact", "reference <source>" or "none"
    per_field: tuple = ()  # ((field, Metrics), ...) on a system

    def as_dict(self) -> dict:
        """The errors as a plain dict, as ``metrics.json`` stores them.

        Returns:
            ``{"e2": ..., "rel_e2": ..., "e_inf": ..., "l2": ...}`` as Python floats (None when
                there was nothing to compare with), with ``"against"`` when it is not the exact
                solution and ``"fields"`` (``{name: {...}}``) on a system.

        Examples:
            >>> error_metrics([1.0, 2.0], [1.0, 1.0]).as_dict()
            {'e2': 0.7071067811865476, 'rel_e2': 0.7071067811865476, 'e_inf': 1.0, 'l2': 1.0}
        """
        out: dict = {
            k: (None if self.against == "none" else float(getattr(self, k))) for k in ERRORS
        }
        if self.against != "exact":
            out["against"] = self.against
        if self.per_field:
            out["fields"] = {name: m.as_dict() for name, m in self.per_field}
        return out

    def describe(self) -> str:
        """One line for a report: the relative error (per field on a system), ``e2``, ``e_inf``
        and what they were measured against.

        Returns:
            A string, e.g. ``"rel_e2=3.333e-01 e2=5.774e-01 e_inf=1.000e+00 (against exact)"``.
        """
        if self.against == "none":
            return "no error metrics: the problem states no exact solution and no reference data"
        fields = "".join(f" rel_e2[{n}]={m.rel_e2:.3e}" for n, m in self.per_field)
        return (
            f"rel_e2={self.rel_e2:.3e}{fields} e2={self.e2:.3e} e_inf={self.e_inf:.3e} "
            f"(against {self.against})"
        )


def error_metrics(pred: Any, exact: Any) -> Metrics:
    """The errors of predictions against exact values, computed in float64.

    With ``err = pred - exact`` over all ``M`` values (both flattened):
    ``e2 = sqrt(mean(err**2))``, ``rel_e2 = e2 / sqrt(mean(exact**2))`` (``inf`` when the
    denominator is ``<= 1e-10``), ``e_inf = max(abs(err))`` and ``l2 = sqrt(sum(err**2))``.

    Args:
        pred: the predictions, array-like of any shape.
        exact: the exact values, array-like with as many values as ``pred``.

    Returns:
        A [`Metrics`][cgmpinn_jax.Metrics] with ``against="exact"`` and no ``per_field``.

    Raises:
        ValueError: the sizes differ, or ``pred`` is empty.

    Examples:
        >>> m = error_metrics([1.0, 2.0], [1.0, 1.0])
        >>> m.e2, m.e_inf, m.l2
        (0.7071067811865476, 1.0, 1.0)
    """
    pred = np.asarray(pred, dtype=np.float64).reshape(-1)
    exact = np.asarray(exact, dtype=np.float64).reshape(-1)
    if pred.shape != exact.shape:
        raise ValueError(
            f"pred and exact must have the same number of values, got {pred.size} and {exact.size}"
        )
    if pred.size == 0:
        raise ValueError("pred is empty")
    err = pred - exact
    rms_err = float(np.sqrt(np.mean(err**2)))
    rms_u = float(np.sqrt(np.mean(exact**2)))
    rel = rms_err / rms_u if rms_u > 1e-10 else float("inf")
    return Metrics(
        e2=rms_err, rel_e2=rel, e_inf=float(np.max(np.abs(err))), l2=float(np.linalg.norm(err))
    )


def no_metrics() -> Metrics:
    """The metrics of a problem with nothing to compare with (no exact solution, no reference).

    Returns:
        A [`Metrics`][cgmpinn_jax.Metrics] of NaN errors with ``against="none"``; its
            ``as_dict()`` gives None for each error.

    Examples:
        >>> no_metrics().as_dict()
        {'e2': None, 'rel_e2': None, 'e_inf': None, 'l2': None, 'against': 'none'}
    """
    nan = float("nan")
    return Metrics(nan, nan, nan, nan, against="none")


def compare(pred: Any, values: Any, *, fields: tuple = ("u",), against: str = "exact") -> Metrics:
    """The errors of predictions against given values, per field on a system.

    The pooled errors are those of [`error_metrics`][cgmpinn_jax.error_metrics] over all
    values; for ``(M, F)`` values each field's column is compared as well (``per_field``).

    Args:
        pred: the predictions, array-like with as many values as ``values`` (``(M,)`` or
            ``(M, F)``).
        values: the exact or reference values, shape ``(M,)`` for one field or ``(M, F)`` for
            a system of ``F`` fields.
        fields: the names of the ``F`` fields, for ``per_field`` (ignored for ``(M,)``).
        against: what ``values`` are, stored in the result: ``"exact"`` or
            ``"reference <source>"``.

    Returns:
        A [`Metrics`][cgmpinn_jax.Metrics]; on a system, ``per_field`` holds
            ``((field, Metrics), ...)``.

    Examples:
        >>> m = compare([[1.0, 0.0], [2.0, 1.0]], [[1.0, 0.0], [1.0, 1.0]], fields=("u", "v"))
        >>> m.e2, [(f, fm.e_inf) for f, fm in m.per_field]
        (0.5, [('u', 1.0), ('v', 0.0)])
    """
    values = np.asarray(values, dtype=np.float64)
    pooled = error_metrics(pred, values)._replace(against=against)
    if values.ndim == 1:
        return pooled
    pred = np.asarray(pred, dtype=np.float64).reshape(values.shape)
    per = tuple(
        (f, error_metrics(pred[:, i], values[:, i])._replace(against=against))
        for i, f in enumerate(fields)
    )
    return pooled._replace(per_field=per)


def evaluate(problem, model, *, points: Any = None) -> Metrics:
    """The errors of a model on a problem, as [`train`][cgmpinn_jax.train] reports them.

    The model is evaluated in jnp's current float dtype (as the reference code does) and
    compared, in float64, with what the problem's
    [`truth`][cgmpinn_jax.Problem.truth] gives: its exact solution on its ``test_grid()``,
    else its reference data at the reference's points; a problem with neither gets
    [`no_metrics`][cgmpinn_jax.metrics.no_metrics].

    Args:
        problem: the [`Problem`][cgmpinn_jax.Problem].
        model: a function of one point ``(d,)`` returning a scalar (``(F,)`` on a system), such
            as a trained network or ``problem.exact``.
        points: optional test points, array-like of shape ``(M, d)``, instead of the test grid;
            only for a problem with an exact solution.

    Returns:
        A [`Metrics`][cgmpinn_jax.Metrics].

    Raises:
        ValueError: ``points`` is given for a problem without an exact solution.

    Examples:
        >>> import cgmpinn_jax as cj
        >>> problem = cj.get_problem("poisson1d")
        >>> evaluate(problem, problem.exact).e2
        0.0
    """
    dtype = jax.numpy.zeros(()).dtype
    if points is not None:
        if not problem.has_exact:
            raise ValueError(
                f"evaluate(points=...) needs an exact solution; {type(problem).__name__} has none "
                "(its errors are measured at its reference's points: leave points out)"
            )
        pts = jax.numpy.asarray(points, dtype=dtype)
        return compare(jax.vmap(model)(pts), problem.exact_on(pts), fields=problem.fields)
    truth = problem.truth(dtype)
    if truth is None:
        return no_metrics()
    pred = jax.vmap(model)(jax.numpy.asarray(truth.points, dtype=dtype))
    return compare(pred, truth.values, fields=truth.fields, against=truth.against)
