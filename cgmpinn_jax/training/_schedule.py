"""A run's resolved settings (:class:`Setup`) and its refresh schedule (:func:`refresh_schedule`).

``train(problem, method, config)`` runs what the reference scripts run
(docs/reference-code.md §4-§7): Adam for ``adam_steps`` steps, then one second-stage
iteration per outer step for ``lbfgs_steps`` steps, with the curriculum parameter tau(k) on
one global 1-based step counter k (k_max = adam_steps + lbfgs_steps) and a refresh of the
per-point PDE weights every k_upd steps. Refresh schedule (docs/reference-code.md §6):

* Adam: refresh before the step when ``e % k_upd == 0`` (e the 0-based epoch), at tau(e + 1).
* L-BFGS: one refresh at the stage start with Adam's last tau (tau(adam_steps)), then after
  iteration i when ``i % k_upd == 0``, at tau(adam_steps + i + 1). For Fisher-KPP's CGMPINN
  the refresh comes *before* the step when ``i % k_upd == 0`` (the reference's start refit is
  then immediately redone, so we skip it).

Each stage is a host loop over *chunks*; a chunk is one jitted call that refreshes the weights
and runs up to k_upd steps.
"""

from __future__ import annotations

import dataclasses
from typing import Literal, NamedTuple

from ..config import TrainConfig
from ..methods import Method
from ..problems import Problem

__all__ = ["Setup", "resolve", "Chunk", "refresh_schedule"]


@dataclasses.dataclass(frozen=True)
class Setup:
    """Everything static about a run: the problem, the method and the resolved settings
    (hashable: it keys the compile cache)."""

    problem: Problem
    method: Method
    config: TrainConfig
    adam_steps: int
    lbfgs_steps: int
    k_upd: int
    width: int
    depth: int
    relobralo_stages: Literal["both", "adam", "none"]
    refit_before_step: bool

    @property
    def k_max(self) -> int:
        return self.adam_steps + self.lbfgs_steps

    @property
    def n_terms(self) -> int:
        return len(self.problem.loss_terms)

    def uses_relobralo(self, stage: str) -> bool:
        """Whether ``stage`` ("adam" or "lbfgs") balances its terms with ReLoBRaLo."""
        return self.relobralo_stages == "both" or (self.relobralo_stages == "adam" and stage == "adam")

    def schedule(self) -> list["Chunk"]:
        return refresh_schedule(self.adam_steps, self.lbfgs_steps, self.k_upd, refit_before_step=self.refit_before_step)


def resolve(problem: Problem, method: Method, cfg: TrainConfig) -> Setup:
    """The :class:`Setup` of ``method`` on ``problem`` under ``cfg`` (``None`` fields filled in
    from the problem's defaults and the method's settings there)."""
    d, s = problem.defaults, method.settings(problem)
    relo = {None: s.relobralo, True: "both", False: "none"}.get(cfg.relobralo, cfg.relobralo)
    return Setup(
        problem=problem,
        method=method,
        config=cfg,
        adam_steps=d.adam_steps if cfg.adam_steps is None else int(cfg.adam_steps),
        lbfgs_steps=d.lbfgs_steps if cfg.lbfgs_steps is None else int(cfg.lbfgs_steps),
        k_upd=int(cfg.k_upd if cfg.k_upd is not None else (s.k_upd if s.k_upd is not None else d.k_upd)),
        width=d.width if cfg.width is None else cfg.width,
        depth=d.depth if cfg.depth is None else cfg.depth,
        relobralo_stages=relo,
        refit_before_step=s.refit_before_lbfgs_step,
    )


class Chunk(NamedTuple):
    """One jitted call: refresh the weights at tau(``tau_k``), then run ``n_steps`` steps."""

    stage: Literal["adam", "lbfgs"]
    tau_k: int  # global step whose tau is used at the refresh
    first_k: int  # global step k of the chunk's first step
    n_steps: int


def refresh_schedule(adam_steps: int, lbfgs_steps: int, k_upd: int, *, refit_before_step: bool = False) -> list[Chunk]:
    """The chunks of a run, i.e. where the weights are refreshed (docs/reference-code.md §6).

    >>> [c.tau_k for c in refresh_schedule(400, 401, 200)]
    [1, 201, 400, 401, 601]
    """
    chunks = [Chunk("adam", e + 1, e + 1, min(k_upd, adam_steps - e)) for e in range(0, adam_steps, k_upd)]
    if lbfgs_steps > 0:
        base = adam_steps
        if refit_before_step:
            for i in range(0, lbfgs_steps, k_upd):
                chunks.append(Chunk("lbfgs", base + i + 1, base + i + 1, min(k_upd, lbfgs_steps - i)))
        else:
            # start refit with Adam's last tau, then a refit after every i % k_upd == 0
            chunks.append(Chunk("lbfgs", base, base + 1, 1))
            for i in range(0, lbfgs_steps - 1, k_upd):
                chunks.append(Chunk("lbfgs", base + i + 1, base + i + 2, min(k_upd, lbfgs_steps - 1 - i)))
    return chunks
