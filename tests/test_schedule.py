"""The refresh schedule (cgmpinn_jax/training/_schedule.py): the reference's refit counts, a
step-by-step replay of the reference loop, and the chunks of any sequence of stages."""

import pytest

from cgmpinn_jax import refresh_schedule
from cgmpinn_jax.training._schedule import stage_schedule
from helpers import reference_refreshes


def test_refresh_schedule_reference_counts():
    # docs/reference-code.md §6: 25 + 1 + 50 = 76 GMM fits for 5000 Adam + 10000 L-BFGS, k_upd 200
    s = refresh_schedule(5000, 10000, 200)
    assert len(s) == 76
    assert sum(c.n_steps for c in s) == 15000
    adam = [c.tau_k for c in s if c.stage == "adam"]
    assert adam == [e + 1 for e in range(0, 5000, 200)]
    lb = [c.tau_k for c in s if c.stage == "lbfgs"]
    # start refit with Adam's last tau, then after L-BFGS iteration i % 200 == 0 at
    # tau(5000 + i + 1)
    assert lb == [5000] + [5000 + i + 1 for i in range(0, 10000, 200)][:50]
    # Fisher-KPP: refit before the step, 8000 + 12000 with k_upd 100 (the reference's
    # redundant start refit is skipped)
    f = refresh_schedule(8000, 12000, 100, refit_before_step=True)
    assert len(f) == 80 + 120 and sum(c.n_steps for c in f) == 20000
    assert [c.tau_k for c in f if c.stage == "lbfgs"][:2] == [8001, 8101]


@pytest.mark.parametrize(
    "adam,lbfgs,k_upd",
    [(50, 30, 20), (40, 20, 20), (45, 1, 20), (7, 0, 3), (0, 5, 2), (3, 4, 10), (5000, 10000, 200)],
)
@pytest.mark.parametrize("before", [False, True])
def test_refresh_schedule_replays_the_reference_loop(adam, lbfgs, k_upd, before):
    chunks = refresh_schedule(adam, lbfgs, k_upd, refit_before_step=before)
    refits, uses = reference_refreshes(adam, lbfgs, k_upd, before)
    assert [c.tau_k for c in chunks] == refits
    got = {}
    for c in chunks:
        assert 1 <= c.n_steps <= k_upd
        for k in range(c.first_k, c.first_k + c.n_steps):
            assert k not in got
            got[k] = c.tau_k
            assert (c.stage == "adam") == (k <= adam)
    assert got == uses and sorted(got) == list(range(1, adam + lbfgs + 1))


def test_stage_schedule_covers_every_step_once():
    for plan in (
        (("adam", 7), ("lbfgs", 5), ("gauss_newton", 4)),
        (("adam", 0), ("lbfgs", 3), ("bfgs", 1)),
        (("lbfgs", 6),),
        (("adam", 5),),
    ):
        for k_upd in (1, 2, 3, 10):
            for before in (False, True):
                chunks = stage_schedule(plan, k_upd, refit_before_step=before)
                steps = [c.first_k + i for c in chunks for i in range(c.n_steps)]
                assert steps == list(range(1, sum(n for _, n in plan) + 1))
                assert all(c.n_steps <= k_upd for c in chunks)
                base = 0
                for (
                    name,
                    n,
                ) in plan:  # a later stage opens with a refresh at the previous stage's last tau
                    mine = [c for c in chunks if c.stage == name]
                    assert sum(c.n_steps for c in mine) == n
                    if mine and name != "adam" and not before:
                        assert mine[0].tau_k == base and mine[0].n_steps == 1
                    base += n
