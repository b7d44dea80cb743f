"""The second stage's stall rule (LOSS_TOL), replayed in NumPy on recorded losses, for tests
that check where the jitted engine stopped."""

from __future__ import annotations

import numpy as np


def loss_tol_fires_at(raw_totals, ftol: float, patience: int) -> int | None:
    """Index of the iteration at which LOSS_TOL fires: the unweighted loss has not improved on
    its best by the relative ``ftol`` for ``patience`` iterations in a row; None if never."""
    best, stall = np.inf, 0
    for i, v in enumerate(raw_totals):
        stall = 0 if v < best * (1 - ftol) else stall + 1
        best = min(best, v)
        if stall >= patience:
            return i
    return None
