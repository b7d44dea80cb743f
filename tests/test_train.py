"""End-to-end tests of the training engine at tiny budgets (each test states its budget)."""

import dataclasses
import json
import re
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import cgmpinn_jax as cj
from helpers import tiny_budget
from cgmpinn_jax.derivatives import partial
from cgmpinn_jax.problems import Poisson1D
from cgmpinn_jax import StageStatus, TrainConfig, refresh_schedule
from helpers import initial_rel_e2


@pytest.mark.slow  # CI time: heavy compile; run with -m slow
def test_recorded_refreshes_follow_schedule():
    # budget: 20 Adam steps + 21 L-BFGS iterations, k_upd = 10, CGMPINN on heat
    cfg = TrainConfig(
        stages=(cj.stages.Adam(steps=20), cj.stages.LBFGS(steps=21)), cgm={"k_upd": 10}
    )
    res = cj.train("heat", "cgmpinn", cfg, key=0, quiet=True)
    assert (
        res.statuses["adam"] == StageStatus.COMPLETED
        and res.statuses["lbfgs"] == StageStatus.COMPLETED
    )
    h = res.history
    # Adam: before epochs 0 and 10; L-BFGS: start refit with Adam's last tau (k=20), then
    # after iterations i=0 and i=10 (k = 20 + i + 1). The reference's refit after the last
    # iteration (i=20) changes nothing that is used, so it is not done.
    assert h.refresh_k.tolist() == [1, 11, 20, 21, 31]
    k_max = 41
    np.testing.assert_allclose(
        h.refresh_tau, np.minimum(h.refresh_k / (0.8 * k_max), 1.0), rtol=1e-6
    )
    assert h.k.tolist() == list(range(1, 42))
    assert h.loss.shape == (41,) and h.lambdas.shape == (41, 3)
    assert np.all(h.evals[20:] >= 1)
    # lambdas are ReLoBRaLo's: they sum to the number of terms
    np.testing.assert_allclose(h.lambdas.sum(1), 3.0, rtol=1e-5)


@pytest.mark.slow  # CI time: heavy compile; run with -m slow
def test_determinism():
    cfg = TrainConfig(
        stages=(cj.stages.Adam(steps=30), cj.stages.LBFGS(steps=10)), cgm={"k_upd": 10}
    )
    a = cj.train("heat", "cgmpinn", cfg, key=3, quiet=True)
    b = cj.train("heat", "cgmpinn", cfg, key=3, quiet=True)
    for x, y in zip(jax.tree_util.tree_leaves(a.model), jax.tree_util.tree_leaves(b.model)):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    np.testing.assert_array_equal(a.history.loss, b.history.loss)


@dataclasses.dataclass(frozen=True)
class _NaNPoisson(Poisson1D):
    """1D Poisson whose residual turns NaN once |u| exceeds 0.6 anywhere (mid-run)."""

    name = "nan_poisson"

    def operator(self, u, z):
        return partial(u, 0, 0)(z) + 0.0 * jnp.sqrt(0.36 - u(z) ** 2)


def test_nonfinite_residual_stops_with_best_params():
    p = _NaNPoisson(n_pde=200)
    # the exact solution reaches |u| ~ 2, so training must cross |u| = 0.6
    cfg = TrainConfig(
        stages=(cj.stages.Adam(steps=600), cj.stages.LBFGS(steps=50)), cgm={"k_upd": 50}
    )
    res = cj.train(p, "cgmpinn", cfg, key=0, quiet=True)
    assert StageStatus.NONFINITE in (res.statuses["adam"], res.statuses["lbfgs"])
    leaves = jax.tree_util.tree_leaves(res.model)
    assert all(bool(jnp.all(jnp.isfinite(x))) for x in leaves)
    assert np.isfinite(res.metrics.rel_e2)
    # the weights never turned NaN
    assert all(np.all(np.isfinite(w)) for w in res.history.snapshots.values())


@pytest.mark.slow  # CI time: heavy compile; run with -m slow
def test_save_load_round_trip(tmp_path):
    res = cj.train(
        "damped_wave",
        "pinn",
        TrainConfig(stages=(cj.stages.Adam(steps=10), cj.stages.LBFGS(steps=3))),
        key=1,
        quiet=True,
    )
    cj.save_result(res, tmp_path / "run")
    model, info = cj.load_model(tmp_path / "run")
    pts = res.problem.test_grid().points
    np.testing.assert_array_equal(
        res.predict(pts), np.asarray(jax.vmap(model)(jnp.asarray(pts, jnp.float32)))
    )
    assert info["method"] == "pinn" and info["summary"]["rel_e2"] == pytest.approx(
        res.metrics.rel_e2
    )


@pytest.mark.slow  # CI time: heavy compile; run with -m slow
def test_cli_run_writes_files(tmp_path, capsys):
    from cgmpinn_jax.cli import main

    out = tmp_path / "cli"
    rc = main(
        [
            "run",
            "poisson1d",
            "--adam-steps",
            "20",
            "--second-steps",
            "5",
            "--out",
            str(out),
            "--quiet",
        ]
    )
    assert rc == 0
    for name in (
        "metrics.json",
        "history.json",
        "model.eqx",
        "model.json",
        "solution.png",
        "error.png",
        "loss.png",
        "weights.png",
    ):
        assert (out / name).exists(), name
    text = capsys.readouterr().out
    assert "relative e2" in text and "1.810e-04" in text  # the paper's CGMPINN value beside ours
    m = json.loads((out / "metrics.json").read_text())
    assert m["adam_budget"] == 20 and m["lbfgs_budget"] == 5


def test_cli_list_and_bad_names(capsys):
    from cgmpinn_jax.cli import main

    assert main(["list"]) == 0
    text = capsys.readouterr().out
    for name in cj.METHODS:
        assert name in text
    assert main(["run", "nope", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "poisson1d" in err and "fisher_kpp" in err


def test_config_validation():
    with pytest.raises(ValueError, match=r"Adam\.steps"):
        TrainConfig(stages=(cj.stages.Adam(steps=-1), cj.stages.LBFGS()))
    with pytest.raises(ValueError, match=r"CGMOptions\.c_sat"):
        TrainConfig(cgm={"c_sat": 0.0})
    with pytest.raises(ValueError, match=r"stages\[1\]"):
        TrainConfig(stages=(cj.stages.Adam(), "scipy"))
    with pytest.raises(
        ValueError, match=r"LBFGS\.linesearch.*jaxopt"
    ):  # a jaxopt option with the optax backend
        TrainConfig(stages=(cj.stages.Adam(), cj.stages.LBFGS(linesearch="backtracking")))
    TrainConfig(
        stages=(cj.stages.Adam(), cj.stages.LBFGS(backend="jaxopt", linesearch="backtracking"))
    )  # fine there
    stage = {"adam": cj.stages.Adam, "lbfgs": cj.stages.LBFGS}
    for group, name, where in (
        ("cgm", "beta", "CGMOptions.beta"),
        ("cgm", "eps", "CGMOptions.eps"),
        ("adam", "lr", "Adam.lr"),
        ("cgm", "c_sat", "CGMOptions.c_sat"),
        ("lbfgs", "lr", "LBFGS.lr"),
        (None, "divergence_ratio", "TrainConfig.divergence_ratio"),
        ("balancing", "alpha", "ReLoBRaLoOptions.alpha"),
        ("lbfgs", "gtol", "LBFGS.gtol"),
    ):
        for bad in (float("nan"), float("inf")):
            with pytest.raises(ValueError, match=where.replace(".", r"\.")):
                if group in stage:
                    TrainConfig(stages=(stage[group](**{name: bad}),))
                else:
                    TrainConfig(**({name: bad} if group is None else {group: {name: bad}}))
    with pytest.raises(ValueError, match="precision"):
        TrainConfig(precision="float16")
    with pytest.raises(ValueError, match=r"CGMOptions\.beta must be >= 0"):
        TrainConfig(cgm={"beta": -1.0})


@pytest.mark.slow  # CI time: heavy compile; run with -m slow
def test_readme_example_runs():
    text = (Path(__file__).parents[1] / "README.md").read_text()
    block = re.search(r"## The library in ten lines\s+```python\n(.*?)```", text, re.S).group(1)
    ns: dict = {}
    exec(compile(block, "README.md", "exec"), ns)
    assert ns["result"].metrics.rel_e2 > 0
    assert ns["u"].shape == (200,)


# Tiny-budget end-to-end runs (budget: 300 Adam steps + 300 L-BFGS iterations, k_upd 100,
# the problems' own points; 1D Poisson, whose loss is still ~1e3-1e4 after 300-2000 Adam
# steps, so that L-BFGS diverges from there (the guard then restores the Adam result), gets
# the paper's 5000 Adam steps + 2000 L-BFGS iterations, k_upd 200). Each
# compiles its own engine (~10-20 s), so all but heat are marked slow and run outside CI:
# `python -m pytest -m slow tests/test_train.py`.


@pytest.mark.parametrize(
    "name",
    ["heat"]
    + [
        pytest.param(n, marks=pytest.mark.slow)
        for n in ("poisson1d", "poisson2d", "damped_wave", "advection_diffusion", "fisher_kpp")
    ],
)
def test_tiny_run_cuts_error(name):
    p = cj.get_problem(name)
    before = initial_rel_e2(p, "cgmpinn", 0)
    res = cj.train(p, "cgmpinn", TrainConfig(**tiny_budget(name)), key=0, quiet=True)
    assert res.metrics.rel_e2 < before / 5, (before, res.metrics.rel_e2)


@pytest.mark.parametrize("apply", ["iteration", "refresh"])
@pytest.mark.slow  # CI time: heavy compile; run with -m slow
def test_relobralo_lbfgs_apply(apply):
    """'refresh': the L-BFGS objective's lambdas are constant within a chunk of k_upd
    iterations and move between chunks; 'iteration': they move within a chunk."""
    cfg = TrainConfig(
        stages=(cj.stages.Adam(steps=20), cj.stages.LBFGS(steps=30, gtol=0.0)),
        cgm={"k_upd": 10},  # every chunk runs
        balancing={"stages": "both", "second_stage_apply": apply},
    )
    res = cj.train(cj.get_problem("poisson1d", n_pde=64), "cgmpinn", cfg, key=0, quiet=True)
    k = np.asarray(res.history.k)
    lam = np.asarray(res.history.lambdas)
    assert res.statuses["lbfgs"] == StageStatus.COMPLETED
    spans = [
        (c.first_k, c.first_k + c.n_steps)
        for c in refresh_schedule(20, 30, 10)
        if c.stage == "lbfgs"
    ]
    chunks = [lam[(k >= a) & (k < b)] for a, b in spans]
    chunks = [c for c in chunks if len(c) > 1]
    assert len(chunks) >= 2
    within = max(float(np.ptp(c, axis=0).max()) for c in chunks)
    if apply == "refresh":
        assert within == 0.0
        assert not np.allclose(chunks[0][0], chunks[1][0])
    else:
        assert within > 0.0


def test_relobralo_lbfgs_apply_validated():
    with pytest.raises(ValueError, match=r"ReLoBRaLoOptions\.second_stage_apply"):
        TrainConfig(balancing={"second_stage_apply": "sometimes"})


def _prefetch_pair(method, precision):
    cfg = TrainConfig(
        stages=(cj.stages.Adam(steps=30), cj.stages.LBFGS(steps=20)),
        cgm={"k_upd": 10},
        precision=precision,
    )
    lines = []
    a = cj.train(
        "poisson1d", method, cfg, key=0, quiet=True, cache=cj.CompileCache(), prefetch_compile=False
    )
    b = cj.train(
        "poisson1d",
        method,
        cfg,
        key=0,
        print_fn=lines.append,
        cache=cj.CompileCache(),
        prefetch_compile=True,
    )
    return a, b, lines


@pytest.mark.parametrize(
    "method,precision",
    [
        pytest.param(
            "pinn", "float32", marks=pytest.mark.slow
        ),  # opt-in feature; CI time (599 s with it)
        pytest.param("cgmpinn", "mixed", marks=pytest.mark.slow),
        pytest.param("cgmpinn", "float64", marks=pytest.mark.slow),
    ],
)
def test_background_compile_of_the_second_stage_gives_identical_results(method, precision):
    """The L-BFGS chunk compiled in a thread while Adam runs is the program the main thread
    would have compiled: same jax precision settings (thread-local), same fast-path switches."""
    before = (jax.config.jax_enable_x64, jax.config.jax_default_matmul_precision)
    a, b, lines = _prefetch_pair(method, precision)
    assert any("compiled the lbfgs chunk in the background" in ln for ln in lines), lines
    for x, y in zip(jax.tree_util.tree_leaves(a.model), jax.tree_util.tree_leaves(b.model)):
        if isinstance(x, jax.Array):
            assert x.dtype == y.dtype
            np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    np.testing.assert_array_equal(a.history.loss, b.history.loss)
    assert a.metrics.rel_e2 == b.metrics.rel_e2 and a.statuses["lbfgs"] == b.statuses["lbfgs"]
    assert (jax.config.jax_enable_x64, jax.config.jax_default_matmul_precision) == before
