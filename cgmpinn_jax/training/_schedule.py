"""A run's resolved settings (`Setup`) and its refresh schedule (`refresh_schedule`).

``train(problem, method, config)`` runs what the reference scripts run
(docs/reference-code.md §4-§7): Adam for ``adam_steps`` steps, then one iteration of the next
stage per outer step for ``second_steps`` steps, with the curriculum parameter tau(k) on
one global 1-based step counter k (k_max = adam_steps + second_steps) and a refresh of the
per-point PDE weights every k_upd steps. Refresh schedule (docs/reference-code.md §6):

* Adam: refresh before the step when ``e % k_upd == 0`` (e the 0-based epoch), at tau(e + 1).
* L-BFGS: one refresh at the stage start with Adam's last tau (tau(adam_steps)), then after
  iteration i when ``i % k_upd == 0``, at tau(adam_steps + i + 1). For Fisher-KPP's CGMPINN
  the refresh comes *before* the step when ``i % k_upd == 0`` (the reference's start refit is
  then immediately redone, so we skip it).

A run with more stages (``TrainConfig.stages``) schedules every stage after Adam as the
second stage: its first chunk refreshes at the previous stage's last tau. k_max is the sum of
all stages' budgets.

Each stage is a host loop over *chunks*; a chunk is one jitted call that refreshes the weights
and runs up to k_upd steps.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal, NamedTuple, Sequence

from ..config import TrainConfig
from ..methods import Method
from ..problems import Problem

__all__ = ["Setup", "resolve", "Chunk", "refresh_schedule", "stage_schedule"]


@dataclasses.dataclass(frozen=True)
class Setup:
    """Everything static about a run: the problem, the method and the resolved settings
    (hashable: it keys the compile cache)."""

    problem: Problem
    method: Method
    config: TrainConfig
    plan: tuple  # ((stage object, resolved budget), ...) in order
    k_upd: int
    width: int
    depth: int
    relobralo_stages: Literal["both", "adam", "none"]
    refit_before_step: bool
    # train(network=...)'s factory or module (a FixedNetwork), not in the config
    network_object: Any = None

    @property
    def network(self) -> Any:
        """The network to build: ``train``'s ``network`` object, else ``config.network``
        (``None`` when that is the method's own)."""
        if self.network_object is not None:
            return self.network_object
        return self.config.network if self.config.network.name is not None else None

    @property
    def stages(self) -> tuple:
        """``((name, budget), ...)``: the run's stages in order."""
        return tuple((st.name, n) for st, n in self.plan)

    @property
    def stage_names(self) -> tuple:
        return tuple(st.name for st, _ in self.plan)

    def spec(self, stage: str):
        """The stage object (`cgmpinn_jax.stages`) of the stage called ``stage``."""
        return next(st for st, _ in self.plan if st.name == stage)

    @property
    def adam_steps(self) -> int:
        """The Adam stage's budget (0 without one)."""
        return dict(self.stages).get("adam", 0)

    @property
    def second_steps(self) -> int:
        """The budget of the first stage after Adam (0 without one)."""
        return next((n for name, n in self.stages if name != "adam"), 0)

    def precision_part(self, stage: str, handed: bool = True) -> str:
        """The part of a mixed run the arrays of ``stage`` are in: ``"adam"`` (float32) up to
        the first later stage's hand-off, ``"second"`` from then on."""
        names = self.stage_names
        i = names.index(stage)
        first_later = next((j for j, n in enumerate(names) if n != "adam"), len(names))
        return "second" if i > first_later or (i == first_later and handed) else "adam"

    @property
    def k_max(self) -> int:
        return sum(n for _, n in self.stages)

    @property
    def n_terms(self) -> int:
        return len(self.problem.loss_terms)

    def uses_relobralo(self, stage: str) -> bool:
        """Whether ``stage`` ("adam", or any later stage's name) balances its terms with
        ReLoBRaLo."""
        return self.relobralo_stages == "both" or (
            self.relobralo_stages == "adam" and stage == "adam"
        )

    def schedule(self) -> list["Chunk"]:
        return stage_schedule(self.stages, self.k_upd, refit_before_step=self.refit_before_step)


def resolve(
    problem: Problem, method: Method, cfg: TrainConfig, network_object: Any = None
) -> Setup:
    """The `Setup` of ``method`` on ``problem`` under ``cfg`` (``None`` fields filled in
    from the problem's defaults and the method's settings there: a stage's budget left at
    ``None`` is the problem's ``adam_steps`` for Adam, its ``second_steps`` for a later stage);
    ``network_object``: ``train``'s network when it is not in ``cfg`` (a factory or a module)."""
    d, s = problem.defaults, method.settings(problem)
    stages = cfg.balancing.stages
    relo = {None: s.relobralo, True: "both", False: "none"}.get(stages, stages)
    plan = tuple(
        (
            st,
            int(st.steps)
            if st.steps is not None
            else (d.adam_steps if st.name == "adam" else d.second_steps),
        )
        for st in cfg.stages
    )
    return Setup(
        problem=problem,
        method=method,
        config=cfg,
        plan=plan,
        k_upd=int(
            cfg.cgm.k_upd
            if cfg.cgm.k_upd is not None
            else (s.k_upd if s.k_upd is not None else d.k_upd)
        ),
        width=d.width if cfg.width is None else cfg.width,
        depth=d.depth if cfg.depth is None else cfg.depth,
        relobralo_stages=relo,
        refit_before_step=s.refit_before_second_step,
        network_object=network_object,
    )


class Chunk(NamedTuple):
    """One jitted call: refresh the weights at tau(``tau_k``), then run ``n_steps`` steps."""

    stage: str  # the stage's name ("adam", "lbfgs", "gauss_newton", ...)
    tau_k: int  # global step whose tau is used at the refresh
    first_k: int  # global step k of the chunk's first step
    n_steps: int


def refresh_schedule(
    adam_steps: int, second_steps: int, k_upd: int, *, refit_before_step: bool = False
) -> list[Chunk]:
    """The chunks of an Adam + second-stage run, i.e. where the per-point weights are
    refreshed and at which tau (docs/reference-code.md §6).

    The global step ``k`` is 1-based and runs on across the stages. Adam refreshes before the
    step when ``e % k_upd == 0`` (``e`` the 0-based epoch), at tau(e + 1). The second stage
    refreshes once at its start with Adam's last tau, then after iteration ``i`` when
    ``i % k_upd == 0``, at tau(adam_steps + i + 1) (before the step with ``refit_before_step``).

    Args:
        adam_steps: the Adam stage's budget, in steps.
        second_steps: the second stage's budget, in iterations.
        k_upd: the steps between two refreshes.
        refit_before_step: refresh the second stage's weights before the step rather than
            after it (the reference's Fisher-KPP CGMPINN), without the start refresh.

    Returns:
        One record per chunk (one compiled call: a refresh, then up to ``k_upd`` steps), in
            order, each a named tuple ``(stage, tau_k, first_k, n_steps)``: the stage's name,
            the global step whose tau the refresh uses, the global step of the chunk's first
            step, and the number of steps.

    Examples:
        >>> [c.tau_k for c in refresh_schedule(400, 401, 200)]
        [1, 201, 400, 401, 601]
    """
    return stage_schedule(
        (("adam", adam_steps), ("lbfgs", second_steps)), k_upd, refit_before_step=refit_before_step
    )


def stage_schedule(
    stages: Sequence[tuple[str, int]], k_upd: int, *, refit_before_step: bool = False
) -> list[Chunk]:
    """The chunks of the stages ``((name, budget), ...)``: Adam's by the Adam rule, every later
    stage's by the second stage's rule, each on the global step counter.

    Examples:
        >>> chunks = stage_schedule((("adam", 4), ("lbfgs", 3), ("gauss_newton", 2)), 2)
        >>> [(c.stage, c.tau_k, c.n_steps) for c in chunks]  # doctest: +NORMALIZE_WHITESPACE
        [('adam', 1, 2), ('adam', 3, 2), ('lbfgs', 4, 1), ('lbfgs', 5, 2), ('gauss_newton', 7, 1),
         ('gauss_newton', 8, 1)]
    """
    chunks, base = [], 0
    for name, steps in stages:
        if name == "adam":
            chunks += [
                Chunk("adam", base + e + 1, base + e + 1, min(k_upd, steps - e))
                for e in range(0, steps, k_upd)
            ]
        elif steps > 0 and refit_before_step:
            chunks += [
                Chunk(name, base + i + 1, base + i + 1, min(k_upd, steps - i))
                for i in range(0, steps, k_upd)
            ]
        elif steps > 0:
            # start refit with the previous stage's last tau, then a refit after every
            # i % k_upd == 0
            chunks.append(Chunk(name, base, base + 1, 1))
            chunks += [
                Chunk(name, base + i + 1, base + i + 2, min(k_upd, steps - 1 - i))
                for i in range(0, steps - 1, k_upd)
            ]
        base += steps
    return chunks
