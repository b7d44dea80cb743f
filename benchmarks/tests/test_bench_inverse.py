"""benchmarks/inverse.py: run keys and rows of the observation weight, its arguments and budget.

The least-squares oracle (benchmarks/inverse_oracle.py) is retired with its tests
(benchmarks/retired.py names the commit that holds both)."""

import pytest

from benchmarks import inverse as ib


def _rec(seed, d_err, **kw):
    return dict(
        problem="fisher_kpp",
        method="pinn",
        kind="inverse",
        noise=0.01,
        n_obs=200,
        seed=seed,
        adam_steps=3000,
        lbfgs_steps=3000,
        preset="faithful",
        rel_e2=6e-4,
        wall_s=300.0,
        unknowns={"D": {"rel_error": d_err}, "r": {"rel_error": 1e-3}},
        **kw,
    )


def test_observation_weight_has_its_own_keys_and_rows():
    base = ib.run_key("fisher_kpp", "pinn", 0.01, 3000, 3000, 0)
    assert (
        base == "fisher_kpp-pinn-noise0.01-A3000-L3000-seed0"
    )  # unchanged: the record's existing keys
    weighted = ib.run_key("fisher_kpp", "pinn", 0.01, 3000, 3000, 0, "faithful", 0.1)
    assert weighted == base + "-obsw0.1"
    lines = "\n".join(ib.render([_rec(0, 0.03), _rec(0, 0.004, obs_weight=0.1)]))
    assert "| 3000 + 3000 | PINN | 0.01 | 0 | 3.00e-02 |" in lines
    assert "| 3000 + 3000, obs weight 0.1 | PINN | 0.01 | 0 | 4.00e-03 |" in lines
    goal_rows = [ln for ln in lines.splitlines() if ln.startswith("| fisher_kpp | PINN |")]
    assert len(goal_rows) == 2 and any(
        "obs weight 0.1" in ln and "D 4.00e-03" in ln for ln in goal_rows
    )


@pytest.mark.parametrize(
    "argv, msg",
    [
        (["--obs-weight", "0"], "finite number > 0"),
        (["--forward", "--obs-weight", "0.1"], "no observation term"),
    ],
)
def test_observation_weight_arguments(argv, msg, capsys):
    with pytest.raises(SystemExit):
        ib.main(argv + ["--list"])
    assert msg in capsys.readouterr().err


def test_budget_takes_the_presets_second_stage():
    """``--preset accurate`` without ``--second-steps`` runs the preset's 1500 Gauss-Newton
    iterations, not the problem's L-BFGS budget; given steps win over both."""
    assert ib.budget("fisher_kpp", None, None) == (8000, 12000)
    assert ib.budget("fisher_kpp", None, None, "accurate") == (8000, 1500)
    assert ib.budget("fisher_kpp", 3000, 3000, "accurate") == (3000, 3000)
