"""Error metrics on a problem's test grid (docs/reference-code.md §9).

* ``e2`` = RMS error ``sqrt(mean((u_hat - u)^2))``: what the reference code (and so every
  table of the paper) calls the "L2 error"; the paper's text writes the plain 2-norm.
* ``rel_e2`` = RMS(err) / RMS(u) (= ||err||_2 / ||u||_2), ``inf`` when RMS(u) <= 1e-10.
* ``e_inf`` = max |u_hat - u|.
* ``l2`` = the plain vector 2-norm ||u_hat - u||_2 (= e2 * sqrt(M) for M test points), the
  "L2 error" as the paper's text writes it.

Example:
    >>> import numpy as np
    >>> m = error_metrics(np.array([1.0, 2.0]), np.array([1.0, 1.0]))
    >>> round(m.e2, 6), round(m.e_inf, 6)
    (0.707107, 1.0)
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import numpy as np

__all__ = ["Metrics", "error_metrics", "evaluate"]


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

    def as_dict(self) -> dict[str, float]:
        """``{"e2": ..., "rel_e2": ..., "e_inf": ..., "l2": ...}`` as plain floats."""
        return {k: float(v) for k, v in self._asdict().items()}


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


def evaluate(problem, model, *, points: Any = None) -> Metrics:
    """Metrics of ``model`` (a function of one point) on ``problem``'s ``test_grid()`` (or
    ``points`` (M, d)). The exact solution is evaluated in the model's dtype, like the reference."""
    pts = problem.test_grid().points if points is None else points
    pts = jax.numpy.asarray(pts, dtype=jax.numpy.zeros(()).dtype)
    pred = jax.vmap(model)(pts)
    exact = problem.exact_on(pts)
    return error_metrics(pred, exact)
