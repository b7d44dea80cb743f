"""benchmarks/precision.py: run keys and the table of runs with a longer second stage."""

import pytest

from benchmarks import precision as pb


def _run(e2, **kw):
    return dict(problem="heat", method="cgmpinn", variant="f64-lbfgs-refresh", seed=0, metrics={"rel_e2": e2},
                evals_per_iteration=1.06, statuses={"second": "COMPLETED"}, wall_seconds=900.0, **kw)


def test_longer_runs_have_their_own_keys_and_rows():
    base = pb.run_key("heat", "cgmpinn", "f64-lbfgs-refresh", 0)
    long = pb.run_key("heat", "cgmpinn", "f64-lbfgs-refresh", 0, 20000)
    assert long != base and long.startswith(base)
    assert pb.longer_table({base: _run(1.3e-4)}) == ""  # nothing longer recorded: no table
    table = pb.longer_table({base: _run(1.3e-4), long: _run(8.95e-5, adam_steps=5000, lbfgs_steps=20000,
                                                           loss_fall_last_1000=1.08)})
    row = table.strip().splitlines()[-1]
    assert "5000 + 20000" in row and "1.30e-04" in row and "8.95e-05" in row and "1.08x" in row


def test_longer_budget_needs_seeds_and_a_trained_variant():
    with pytest.raises(SystemExit):
        pb.main(["--lbfgs-steps", "100"])
    with pytest.raises(SystemExit):
        pb.main(["--lbfgs-steps", "100", "--seeds", "0", "--variants", "f32-lbfgs"])
