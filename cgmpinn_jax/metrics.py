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

ERRORS = ("e2", "rel_e2", "e_inf", "l2")  # the float fields of Metrics


class Metrics(NamedTuple):
    """Errors of a prediction ``u_hat`` against the exact solution ``u`` on ``M`` test points.

    Attributes:
        e2: RMS error ``sqrt(mean((u_hat - u)^2))``, what the reference code and every table
            of the paper call the "L2 error".
        rel_e2: relative error ``RMS(u_hat - u) / RMS(u)`` (= ``||u_hat - u||_2 / ||u||_2``);
            ``inf`` when ``RMS(u) <= 1e-10``.
        e_inf: max error ``max |u_hat - u|``.
        l2: the plain vector 2-norm ``||u_hat - u||_2`` (= ``e2 * sqrt(M)``), as the paper's
            text writes the L2 error; it grows with the number of test points, so compare it
            only between runs on the same test grid.
    """

    e2: float
    rel_e2: float
    e_inf: float
    l2: float
    against: str = "exact"  # "exact", "reference <source>" or "none"
    per_field: tuple = ()  # ((field, Metrics), ...) on a system

    def as_dict(self) -> dict:
        """``{"e2": ..., "rel_e2": ..., "e_inf": ..., "l2": ...}`` as plain floats (None when
        there was nothing to compare with), with ``"against"`` when it is not the exact
        solution and ``"fields"`` ``{name: {...}}`` on a system."""
        out: dict = {k: (None if self.against == "none" else float(getattr(self, k))) for k in ERRORS}
        if self.against != "exact":
            out["against"] = self.against
        if self.per_field:
            out["fields"] = {name: m.as_dict() for name, m in self.per_field}
        return out

    def describe(self) -> str:
        """One line: the relative error (per field on a system) and what it was measured against."""
        if self.against == "none":
            return "no error metrics: the problem states no exact solution and no reference data"
        fields = "".join(f" rel_e2[{n}]={m.rel_e2:.3e}" for n, m in self.per_field)
        return f"rel_e2={self.rel_e2:.3e}{fields} e2={self.e2:.3e} e_inf={self.e_inf:.3e} (against {self.against})"


def error_metrics(pred: Any, exact: Any) -> Metrics:
    """Metrics of predictions ``pred`` against ``exact`` (same shape, any) computed in float64."""
    pred = np.asarray(pred, dtype=np.float64).reshape(-1)
    exact = np.asarray(exact, dtype=np.float64).reshape(-1)
    if pred.shape != exact.shape:
        raise ValueError(f"pred and exact must have the same number of values, got {pred.size} and {exact.size}")
    if pred.size == 0:
        raise ValueError("pred is empty")
    err = pred - exact
    rms_err = float(np.sqrt(np.mean(err**2)))
    rms_u = float(np.sqrt(np.mean(exact**2)))
    rel = rms_err / rms_u if rms_u > 1e-10 else float("inf")
    return Metrics(e2=rms_err, rel_e2=rel, e_inf=float(np.max(np.abs(err))), l2=float(np.linalg.norm(err)))


def no_metrics() -> Metrics:
    """The metrics of a problem with nothing to compare with: NaN, ``against="none"``."""
    nan = float("nan")
    return Metrics(nan, nan, nan, nan, against="none")


def compare(pred: Any, values: Any, *, fields: tuple = ("u",), against: str = "exact") -> Metrics:
    """Metrics of ``pred`` against ``values``: (M,) for one field, (M, F) for a system (pooled,
    with ``per_field``)."""
    values = np.asarray(values, dtype=np.float64)
    pooled = error_metrics(pred, values)._replace(against=against)
    if values.ndim == 1:
        return pooled
    pred = np.asarray(pred, dtype=np.float64).reshape(values.shape)
    per = tuple((f, error_metrics(pred[:, i], values[:, i])._replace(against=against)) for i, f in enumerate(fields))
    return pooled._replace(per_field=per)


def evaluate(problem, model, *, points: Any = None) -> Metrics:
    """Metrics of ``model`` (a function of one point) on ``problem``'s ``test_grid()`` (or
    ``points`` (M, d), with an exact solution only) against its exact solution, evaluated in
    the model's dtype like the reference; else against its reference data at the reference's
    points; else `no_metrics`."""
    dtype = jax.numpy.zeros(()).dtype
    if points is not None:
        if not problem.has_exact:
            raise ValueError(f"evaluate(points=...) needs an exact solution; {type(problem).__name__} has none "
                             "(its errors are measured at its reference's points: leave points out)")
        pts = jax.numpy.asarray(points, dtype=dtype)
        return compare(jax.vmap(model)(pts), problem.exact_on(pts), fields=problem.fields)
    truth = problem.truth(dtype)
    if truth is None:
        return no_metrics()
    pred = jax.vmap(model)(jax.numpy.asarray(truth.points, dtype=dtype))
    return compare(pred, truth.values, fields=truth.fields, against=truth.against)
