"""Baselines and ablations through the same engine (docs/reference-code.md §10, §11)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import equinox as eqx

import cgmpinn_jax as cj
from cgmpinn_jax.nn import _nets as nets
from cgmpinn_jax.config import TrainConfig
from cgmpinn_jax.methods import build_model
from cgmpinn_jax.training._objective import Trainable, make_term_fn


def _term_fn(problem, method, x64=False):
    problem = cj.get_problem(problem) if isinstance(problem, str) else problem
    method = cj.get_method(method)
    dtype = jnp.float64 if x64 else jnp.float32
    model = build_model(problem, method, jax.random.key(0), width=8, depth=2)
    if x64:
        model = jax.tree_util.tree_map(lambda x: x.astype(dtype) if eqx.is_array(x) else x, model)
    log_vars = (
        jnp.array([0.3, -0.2, 0.1][: len(problem.loss_terms)], dtype)
        if method.loss.learnable_balance
        else None
    )
    params, static = eqx.partition(Trainable(model, log_vars), eqx.is_array)
    return problem, model, params, make_term_fn(problem, method, static)


def test_lbpinn_loss_by_hand():
    p = cj.get_problem("heat", n_pde=50, n_ic=10, n_bc=12)
    problem, model, params, term_fn = _term_fn(p, "lbpinn")
    batch = problem.sample(jax.random.key(1))
    tv = term_fn(params, batch, jnp.ones(50))
    u = jax.vmap(model)
    pts, src = batch["pde"]
    r = problem.pde_residuals(model, pts, src)
    ((ic_pts, ic_t),) = batch["ic"]
    (l_pts, l_t), (r_pts, r_t) = batch["bc"]
    mse = np.array(
        [
            np.mean(np.asarray(r) ** 2),
            np.mean(np.asarray(u(ic_pts) - ic_t) ** 2),
            # concatenated-residual mean: half of the PINN's sum of two per-edge MSEs here
            np.mean(np.concatenate([np.asarray(u(l_pts) - l_t), np.asarray(u(r_pts) - r_t)]) ** 2),
        ]
    )
    s = np.array([0.3, -0.2, 0.1])
    expected = np.sum(0.5 * np.exp(-s) * mse) + 0.5 * np.sum(np.log1p(np.exp(s)))
    total = float(jnp.sum(tv.terms) + tv.extra)
    assert total == pytest.approx(expected, rel=1e-5)


def test_pinn_bc_is_sum_of_piece_mses():
    problem, model, params, term_fn = _term_fn(cj.get_problem("poisson1d", n_pde=20), "pinn")
    batch = problem.sample(jax.random.key(0))
    tv = term_fn(params, batch, jnp.ones(20))
    u0 = float(model(jnp.array([0.0]))) - float(problem.exact(jnp.array([0.0])))
    u1 = float(model(jnp.array([1.0]))) - float(problem.exact(jnp.array([1.0])))
    assert float(tv.raw[1]) == pytest.approx(u0**2 + u1**2, rel=1e-5)


@pytest.mark.slow  # CI time: heavy compile; run with -m slow
def test_lbpinn_log_vars_move():
    res = cj.train(
        cj.get_problem("heat", n_pde=200),
        "lbpinn",
        TrainConfig(stages=(cj.stages.Adam(steps=100), cj.stages.LBFGS(steps=20))),
        key=0,
        quiet=True,
    )
    assert res.log_vars is not None and res.log_vars.shape == (3,)
    assert np.all(np.abs(res.log_vars) > 1e-3)


def test_gpinn_gradient_term_matches_finite_differences(x64):
    p = cj.get_problem("heat", n_pde=16, n_ic=4, n_bc=4)
    problem, model, params, term_fn = _term_fn(p, "gpinn", x64=True)
    batch = problem.sample(jax.random.key(2))
    batch = jax.tree_util.tree_map(lambda x: x.astype(jnp.float64), batch)
    tv = term_fn(params, batch, jnp.ones(16, jnp.float64))
    pts = np.asarray(batch["pde"][0])

    def res(z):
        return float(problem.residual(model, jnp.asarray(z)))

    h = 1e-5
    g2 = np.zeros(2)
    for z in pts:
        for j in range(2):
            e = np.zeros(2)
            e[j] = h
            g2[j] += ((res(z + e) - res(z - e)) / (2 * h)) ** 2
    expected = 0.01 * np.sum(g2 / len(pts))
    assert float(tv.extra) == pytest.approx(expected, rel=1e-5)


@pytest.mark.parametrize("in_dim", [1, 2])
def test_lnn_star_parameter_counts(in_dim):
    p = cj.get_problem("poisson1d" if in_dim == 1 else "heat")
    lnn = build_model(p, cj.get_method("lnn_pinn"), jax.random.key(0), width=50, depth=4)
    star = build_model(p, cj.get_method("star_pinn"), jax.random.key(0), width=50, depth=4)
    mlp_count = nets.count_params(
        build_model(p, cj.get_method("pinn"), jax.random.key(0), width=50, depth=4)
    )
    assert nets.count_params(lnn) == mlp_count + 6 * 50  # §10.4: + 6H gate parameters
    assert nets.count_params(star) == 3 * ((in_dim + 1) * 50 + 51 * 50 + 51) + 2  # §10.5


def test_fisher_settings_only_for_cgmpinn_and_ablation():
    p = cj.get_problem("fisher_kpp")
    from cgmpinn_jax.training._schedule import resolve

    def k_upd(name, prob):
        return resolve(prob, cj.get_method(name), TrainConfig()).k_upd

    for name in ("pinn", "lbpinn", "gpinn", "lnn_pinn", "star_pinn"):
        s = cj.get_method(name).settings(p)
        assert (
            s.input_map is None
            and s.init == "torch"
            and k_upd(name, p) == 200
            and s.relobralo == "none"
        )
    cg = cj.get_method("cgmpinn").settings(p)
    assert (
        cg.input_map == ((0.2, 1.0), (0.0, -1.0))
        and cg.init == "xavier"
        and k_upd("cgmpinn", p) == 100
    )
    assert cg.refit_before_second_step and cg.relobralo == "both"
    assert (
        k_upd("gmmpinn", p) == 200 and k_upd("cgmpinn", cj.get_problem("heat")) == 200
    )  # the ablation: 200 everywhere
    assert (
        cj.get_method("gmmpinn").settings(p).refit_before_second_step
    )  # the ablation refits before the step too
    # ReLoBRaLo in the ablation (§11.3)
    assert cj.get_method("clpinn").settings(cj.get_problem("poisson1d")).relobralo == "none"
    assert cj.get_method("clpinn").settings(p).relobralo == "adam"
    assert cj.get_method("gmmpinn").settings(cj.get_problem("heat")).relobralo == "both"
    # a run's Setup takes them (the config may override)
    assert resolve(p, cj.get_method("clpinn"), TrainConfig()).relobralo_stages == "adam"
    assert (
        resolve(
            p, cj.get_method("clpinn"), TrainConfig(balancing={"stages": False})
        ).relobralo_stages
        == "none"
    )


def test_unknown_method_lists_names():
    with pytest.raises(ValueError) as e:
        cj.get_method("xpinn")
    for name in cj.METHODS:
        assert name in str(e.value)
    assert len(cj.METHODS) == 8


# Every method at a small budget (heat: 300 Adam + 300 L-BFGS, k_upd 100; 1D Poisson: 5000 Adam
# + 2000 L-BFGS, k_upd 200, see test_train.tiny_budget) must cut the test error 5x. Sixteen
# compilations: marked slow, run with `pytest -m slow`.
_PAPER_FAILURES = {
    # The paper reports GMMPINN failing on 1D Poisson (relative e2 2.01; docs/reference-code.md
    # §11.1 explains why); measured here (5000 Adam + 2000 L-BFGS, seed 0): 0.74 from 1.09 at
    # init. Asserted as measured: it stays finite and lowers the error, but by less than 5x (a
    # change that makes it succeed or diverge fails the test, and this table is updated with
    # the new measurement).
    ("gmmpinn", "poisson1d"): "GMMPINN fails on 1D Poisson in the paper too (rel e2 2.01)",
}
# lbPINN, which the paper reports failing on 1D Poisson (4.22), is held to the 5x cut in a
# process bound to one core with one XLA thread, where it reaches 5.8e-05 from 1.09 at this
# budget. The same run on two cores (XLA's CPU runtime splits its work by the cores it sees, so
# the last bits differ) ends at 1.73, like the paper's failure: its learnable loss weights make
# it sensitive to rounding. Bound to one core, the result does not depend on the machine.
_ONE_THREAD = {("lbpinn", "poisson1d")}


def _rel_e2_with_one_xla_thread(method: str, problem: str) -> tuple[float, float]:
    """``(initial, trained)`` relative e2 of the test's run, in a process bound to one core
    (Linux: ``os.sched_setaffinity``) with one XLA thread."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    if not hasattr(os, "sched_setaffinity"):
        pytest.skip("binding a process to one core needs Linux (os.sched_setaffinity)")
    tests = Path(__file__).resolve().parent
    code = (
        f"import os, sys; sys.path.insert(0, {str(tests)!r})\n"
        # one core for the process (as taskset -c does), before jax sizes its thread pools
        "os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})\n"
        "import cgmpinn_jax as cj\n"
        "from helpers import initial_rel_e2, tiny_budget\n"
        f"p = cj.get_problem({problem!r})\n"
        f"cfg = cj.TrainConfig(**tiny_budget({problem!r}))\n"
        f"res = cj.train(p, {method!r}, cfg, key=0, quiet=True)\n"
        f"print(initial_rel_e2(p, {method!r}, 0), res.metrics.rel_e2)\n"
    )
    one = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
    env = dict(os.environ, XLA_FLAGS=f"{os.environ.get('XLA_FLAGS', '')} {one}".strip())
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tests.parent,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    before, after = (float(v) for v in out.stdout.split()[-2:])
    return before, after


def _method_cases():
    for method in cj.METHODS:
        for problem in ("poisson1d", "heat"):
            yield pytest.param(method, problem, id=f"{method}-{problem}")


@pytest.mark.slow
@pytest.mark.parametrize("method,problem", list(_method_cases()))
def test_each_method_cuts_error(method, problem):
    from helpers import initial_rel_e2 as _initial_rel_e2, tiny_budget

    if (method, problem) in _ONE_THREAD:
        before, after = _rel_e2_with_one_xla_thread(method, problem)
        assert after < before / 5, (before, after)
        return
    p = cj.get_problem(problem)
    before = _initial_rel_e2(p, method, 0)
    res = cj.train(p, method, TrainConfig(**tiny_budget(problem)), key=0, quiet=True)
    if (method, problem) in _PAPER_FAILURES:  # fails as in the paper, without diverging
        assert before / 5 <= res.metrics.rel_e2 < before, (
            _PAPER_FAILURES[method, problem],
            before,
            res.metrics.rel_e2,
        )
    else:
        assert res.metrics.rel_e2 < before / 5, (before, res.metrics.rel_e2)
