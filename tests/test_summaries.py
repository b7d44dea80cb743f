"""What a user reads: stage summaries in words, no curriculum output for unweighted methods,
the problem's own terms in legends, the paper column only where the paper has a number."""

import numpy as np
import pytest

import cgmpinn_jax as cj
from cgmpinn_jax.cli._main import _table
from cgmpinn_jax.training._records import StageStatus

P = cj.get_problem("poisson1d", n_pde=64)


def test_stage_lines_say_what_ran_and_why_it_stopped():
    # a stall rule that fires at once: LOSS_TOL after 3 of 2000 iterations
    cfg = cj.TrainConfig(
        stages=(cj.stages.Adam(steps=20), cj.stages.LBFGS(steps=2000, ftol=0.99, patience=3)),
        cgm={"k_upd": 10},
        width=8,
        depth=2,
    )
    res = cj.train(P, "pinn", cfg, key=0, quiet=True)
    assert res.statuses["lbfgs"] == StageStatus.LOSS_TOL
    ran = int(np.sum(res.history.k > 20))
    assert res.stage_lines() == [
        "Adam: 20 of 20 steps, ran its whole budget (COMPLETED)",
        f"L-BFGS: {ran:,} of 2,000 iterations, stopped: loss stalled (LOSS_TOL)",
    ]
    assert ran < 2000
    # the same as typed stage records
    adam, second = res.stages
    assert (adam.name, adam.status, adam.iterations, adam.budget, adam.evaluations) == (
        "adam",
        StageStatus.COMPLETED,
        20,
        20,
        20,
    )
    assert (second.name, second.label, second.status, second.iterations, second.budget) == (
        "lbfgs",
        "L-BFGS",
        StageStatus.LOSS_TOL,
        ran,
        2000,
    )
    assert second.evaluations == int(np.sum(res.history.evals[res.history.k > 20])) >= ran
    assert adam.seconds > 0 and second.seconds > 0
    assert adam.seconds + second.seconds <= res.run_seconds + 1e-6
    text = _table(res, None)
    assert (
        "paper" not in text.splitlines()[0] and "PyTorch" not in text
    )  # no paper number for this budget
    assert "L-BFGS: 2,000 iterations" not in text


def test_every_status_has_words():
    for s in StageStatus:
        assert s.name in s.describe()


def test_progress_shows_tau_only_for_weighting_methods(tmp_path):
    cfg = cj.TrainConfig(
        stages=(cj.stages.Adam(steps=10), cj.stages.LBFGS(steps=0)),
        cgm={"k_upd": 5},
        width=8,
        depth=2,
    )
    lines = {}
    for m in ("pinn", "cgmpinn"):
        out = []
        cj.train(P, m, cfg, key=0, print_fn=out.append)
        lines[m] = [s for s in out if " k=" in s]
    assert lines["pinn"] and not any("tau=" in s or "w_spread" in s for s in lines["pinn"])
    assert all("tau=" in s and "w_spread" in s for s in lines["cgmpinn"])


def test_pinn_plots_no_weights_and_legends_name_the_terms(tmp_path):
    pytest.importorskip("matplotlib")
    from cgmpinn_jax.plots import plot_result

    res = cj.train(
        cj.get_problem("heat", n_pde=64, n_ic=16, n_bc=16),
        "pinn",
        cj.TrainConfig(
            stages=(cj.stages.Adam(steps=10), cj.stages.LBFGS(steps=2)),
            cgm={"k_upd": 5},
            width=8,
            depth=2,
        ),
        key=0,
        quiet=True,
    )
    names = sorted(p.name for p in plot_result(res, tmp_path))
    assert names == ["error.png", "loss.png", "solution.png"]
    import matplotlib.pyplot as plt

    seen = []
    orig = plt.Axes.legend

    def spy(self, *a, **k):
        seen.extend(t for t in self.get_legend_handles_labels()[1])
        return orig(self, *a, **k)

    plt.Axes.legend = spy
    try:
        plot_result(res, tmp_path / "again")
    finally:
        plt.Axes.legend = orig
    assert "unweighted PDE+IC+BC" in seen and "Adam -> L-BFGS" in seen
    res1d = cj.train(
        P,
        "pinn",
        cj.TrainConfig(
            stages=(cj.stages.Adam(steps=5), cj.stages.LBFGS(steps=0)), width=8, depth=2
        ),
        key=0,
        quiet=True,
    )
    seen.clear()
    plt.Axes.legend = spy
    try:
        plot_result(res1d, tmp_path / "p1")
    finally:
        plt.Axes.legend = orig
    assert "unweighted PDE+BC" in seen  # 1D Poisson has no initial condition


def test_progress_lines_have_totals_and_time_left():
    out = []
    cj.train(
        P,
        "pinn",
        cj.TrainConfig(
            stages=(cj.stages.Adam(steps=20), cj.stages.LBFGS(steps=4)),
            cgm={"k_upd": 10},
            width=8,
            depth=2,
        ),
        key=0,
        print_fn=out.append,
    )
    steps = [s for s in out if " k=" in s]
    assert "[adam 10/20, " in steps[0] and steps[0].endswith(" left]")
    assert any("[lbfgs 4/4, " in s for s in steps)


def test_progress_lines_name_the_second_stage_by_its_solver():
    """A stage's progress lines carry its own name: a Gauss-Newton run prints no "lbfgs"."""
    out = []
    cj.train(
        P,
        "pinn",
        cj.TrainConfig(
            stages=(cj.stages.Adam(steps=10), cj.stages.GaussNewton(steps=3)),
            cgm={"k_upd": 10},
            width=8,
            depth=2,
        ),
        key=0,
        print_fn=out.append,
    )
    steps = [s for s in out if " k=" in s]
    assert any(" gauss_newton k=" in s and "[gauss_newton 3/3, " in s for s in steps), steps
    assert not any("lbfgs" in s for s in out), out


def test_command_line_bars_show_totals_loss_and_coefficients(monkeypatch):
    import io

    from cgmpinn_jax.cli._main import _Bars
    from cgmpinn_jax.training import Progress

    buf = io.StringIO()
    monkeypatch.setattr("sys.stderr", buf)
    bars = _Bars(cj.TrainConfig.preset("accurate"))
    bars(Progress("adam", 200, 5000, 1.5e-2, 3.0))
    bars(Progress("gauss_newton", 25, 1500, 2.5e-6, 9.0, {"kappa": 0.99871}))
    bars.close()
    text = buf.getvalue()
    assert "Adam" in text and "200/5000" in text and "loss=1.500e-02" in text
    assert "Gauss-Newton" in text and "25/1500" in text and "kappa=0.99871" in text
    assert "L-BFGS" not in text
