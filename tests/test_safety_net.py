"""A fast safety net for the CGMPINN training pipeline (default selection, < 90 s on one core).

What each test pins down, with golden values computed independently in NumPy where they can be:

* a sweep member follows ``cj.train`` with the same seed and settings;
* the per-point CGM weights and the ReLoBRaLo lambdas reach the objective and its gradient;
* the refreshes a tiny run records, against a step-by-step replay of the reference loop
  (the schedule itself: ``tests/test_schedule.py``; every second-stage member reaching a
  known minimum through its adapter: ``tests/test_solvers.py``);
* DIVERGED, GRAD_TOL and LOSS_TOL forced through the config, with the parameters each stop
  must return;
* a ``precision="mixed"`` run: Adam in float32, the second stage in float64, the error cut.

Budgets: 1D Poisson with 64 collocation points and (except the objective test) an easy exact
solution ``sin(pi x) cos(pi x) + tanh(x)``, a 1 x 8 tanh network; 390 Adam steps + 200
second-stage iterations, k_upd 20, unless a test says otherwise (the steps take ~0.2 s in
all: compilation is the time), so the float32 CGMPINN run, the sweep and the run the stop tests
read are module fixtures. Measured on the 2-core development machine, pinned to one core with
one XLA thread: ~63 s of CPU for the module.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import cgmpinn_jax as cj
from cgmpinn_jax import StageStatus, TrainConfig, refresh_schedule
from cgmpinn_jax.weighting._balancing import relobralo, relobralo_draws
from cgmpinn_jax.methods import build_model
from cgmpinn_jax.nn._nets import MLP
from cgmpinn_jax.training._objective import Objective, Trainable, make_term_fn
from stop_rules import loss_tol_fires_at
from helpers import reference_refreshes as _reference_refreshes

SEED = 0
NET = dict(width=8, depth=1)
ADAM, LBFGS, K_UPD = 390, 200, 20
BUDGET = dict(
    stages=(cj.stages.Adam(steps=ADAM), cj.stages.LBFGS(steps=LBFGS)), cgm={"k_upd": K_UPD}, **NET
)
EASY = dict(n_pde=64, alpha1=1.0, alpha2=1.0, s=1.0)  # u* = sin(pi x) cos(pi x) + tanh(x)
CACHE = cj.CompileCache()  # this module's compilations, shared by its tests only


def _easy():
    return cj.get_problem("poisson1d", **EASY)


# --- independent NumPy (or plain-jax) versions of what the library computes -----------------
def _exact(xp, p, x):
    a, b = p.alpha1 * np.pi, p.alpha2 * np.pi
    return xp.sin(a * x) * xp.cos(b * x) + xp.tanh(p.s * x)


def _source(xp, p, x):
    """u*'' by hand: sin(ax)cos(bx) = (sin((a+b)x) + sin((a-b)x)) / 2;
    tanh'' = -2 s^2 t (1 - t^2)."""
    a, b = p.alpha1 * np.pi, p.alpha2 * np.pi
    t = xp.tanh(p.s * x)
    return -0.5 * (
        (a + b) ** 2 * xp.sin((a + b) * x) + (a - b) ** 2 * xp.sin((a - b) * x)
    ) - 2 * p.s**2 * t * (1 - t * t)


def _layers(model):
    """The (W, b) of a tanh MLP as float64 NumPy arrays."""
    assert isinstance(model, MLP) and model.input_map is None and model.in_dim == 1
    return [
        (np.asarray(layer.weight, np.float64), np.asarray(layer.bias, np.float64))
        for layer in model.layers
    ]


def _np_mlp(layers, x):
    """(u, u_x, u_xx) of a tanh MLP at points x (N,), in float64 NumPy (forward Taylor by hand)."""
    h, h1, h2 = np.asarray(x, np.float64)[:, None], np.ones((len(x), 1)), np.zeros((len(x), 1))
    for W, b in layers[:-1]:
        a, a1, a2 = h @ W.T + b, h1 @ W.T, h2 @ W.T
        t = np.tanh(a)
        h, h1, h2 = t, (1 - t * t) * a1, (1 - t * t) * (a2 - 2 * t * a1 * a1)
    W, b = layers[-1]
    return (h @ W.T + b)[:, 0], (h1 @ W.T)[:, 0], (h2 @ W.T)[:, 0]


def _np_terms(problem, layers, batch):
    """(PDE residuals (N,), unweighted terms [mean r^2, sum of the BC pieces' MSEs]) in NumPy."""
    x = np.asarray(batch["pde"][0], np.float64)[:, 0]
    r = _np_mlp(layers, x)[2] - _source(np, problem, x)
    bc = 0.0
    for pts, _ in batch["bc"]:
        xb = np.asarray(pts, np.float64)[:, 0]
        bc += np.mean((_np_mlp(layers, xb)[0] - _exact(np, problem, xb)) ** 2)
    return r, np.array([np.mean(r**2), bc])


def _np_objective(problem, batch, w, lam):
    """layers -> lam_0 mean(w r^2) + lam_1 BC, in NumPy."""

    def value(layers):
        r, raw = _np_terms(problem, layers, batch)
        return lam[0] * np.mean(w * r**2) + lam[1] * raw[1]

    return value


def _np_grad(fun, layers, h=1e-6):
    """Central differences of ``fun(layers)`` in every weight and bias: [(dW, db)]."""
    out = []
    for i, (W, b) in enumerate(layers):
        grads = []
        for j, a in enumerate((W, b)):
            g = np.zeros_like(a)
            for idx in np.ndindex(a.shape):
                vals = []
                for step in (h, -h):
                    moved = a.copy()
                    moved[idx] += step
                    trial = [list(layer) for layer in layers]
                    trial[i][j] = moved
                    vals.append(fun(trial))
                g[idx] = (vals[0] - vals[1]) / (2 * h)
            grads.append(g)
        out.append(tuple(grads))
    return out


def _np_rel_e2(problem, model):
    x = np.asarray(problem.test_grid().points, np.float64)[:, 0]
    e = _exact(np, problem, x)
    return float(np.sqrt(np.mean((_np_mlp(_layers(model), x)[0] - e) ** 2) / np.mean(e**2)))


def _grad_layers(grad):
    """The gradient pytree of a Trainable's parameters as [(dW, db)] (NumPy)."""
    return [(np.asarray(layer.weight), np.asarray(layer.bias)) for layer in grad.model.layers]


def _initial_model(problem, method, key):
    """The network train() builds from ``key`` (keys: points, network, ReLoBRaLo)."""
    _, k_net, _ = jax.random.split(jax.random.key(key), 3)
    return build_model(problem, cj.get_method(method), k_net, **NET)


def _leaves(tree):
    return [x for x in jax.tree_util.tree_leaves(tree) if isinstance(x, jax.Array)]


# --- shared tiny runs ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def cgm_run():
    return cj.train(_easy(), "cgmpinn", TrainConfig(**BUDGET), key=SEED, quiet=True, cache=CACHE)


@pytest.fixture(scope="module")
def cgm_sweep():
    beta0 = TrainConfig().cgm.beta
    return cj.sweep(
        _easy(),
        "cgmpinn",
        TrainConfig(**BUDGET),
        seeds=[SEED],
        grid={"beta": [beta0, 2.0 * beta0]},
        quiet=True,
        keep_histories=True,
        shard=False,
        cache=CACHE,
    )


# --- 1. a sweep member is a train() run -------------------------------------------------------
def test_sweep_member_follows_train(cgm_run, cgm_sweep):
    """The member (seed 0, default beta) of a vmapped sweep against train(key=0).

    Not bit for bit: measured on the development CPU, the vmapped programs differ from the
    unbatched ones in the last bit (the GMM fit of the weight refresh from the first refresh
    on, relative 6.5e-7 in w; a PINN sweep's Adam loss from step 4 on, also with one member),
    and the float32 second stage amplifies that to O(1) (here: Adam stage and hand-off within
    1.1e-6, the whole history's loss up to 6.7x apart). So: the same points and network (the
    first row exactly), the same schedule exactly, the Adam stage and the hand-off to 3e-5; and
    the other beta's member measurably different (the grid reaches the weights, member order)."""
    h, (m0, m1) = cgm_run.history, cgm_sweep.histories
    assert (
        list(cgm_sweep.axes) == ["seed", "beta"]
        and cgm_sweep.axes["beta"][0] == TrainConfig().cgm.beta
    )
    assert (
        cgm_sweep.statuses["adam"].shape == (1, 2)
        and int(cgm_sweep.statuses["adam"][0, 0]) == cgm_run.statuses["adam"]
    )
    for f in ("k", "refresh_k", "refresh_tau"):
        np.testing.assert_array_equal(getattr(m0, f), getattr(h, f), err_msg=f)
    np.testing.assert_array_equal(m0.raw[0], h.raw[0])  # same points, same initial network
    np.testing.assert_array_equal(m0.evals[h.k <= ADAM], h.evals[h.k <= ADAM])
    upto = h.k <= ADAM + 1  # the Adam stage and the second stage's first value (the hand-off)
    for f in ("loss", "raw", "terms", "lambdas"):
        np.testing.assert_allclose(
            getattr(m0, f)[upto], getattr(h, f)[upto], rtol=3e-5, err_msg=f
        )  # measured 1.1e-6
    before_second = h.refresh_k <= ADAM + 1
    np.testing.assert_allclose(
        m0.refresh_spread[before_second], h.refresh_spread[before_second], rtol=1e-4
    )
    # the other member: twice beta changes the weights, hence the weighted PDE term
    adam = h.k <= ADAM
    assert np.max(np.abs(m1.terms[adam, 0] / h.terms[adam, 0] - 1)) > 1e-3
    np.testing.assert_array_equal(m1.raw[0], h.raw[0])  # same seed: same points and network


# --- 2. the weights and the lambdas reach the objective ---------------------------------------
def test_cgm_weights_and_relobralo_lambdas_reach_the_objective(x64):
    """The paper's 1D Poisson (float64, 48 points, a 2 x 8 network, non-uniform w and lambdas):
    the term function's PDE term is mean(w r^2) with r computed in NumPy, the source is u*''
    by hand, and balanced_eval's lambdas are ReLoBRaLo's formula with its own draws, its value
    lam . terms, and its gradient jax.grad of lam . term_fn(...).terms and the central
    differences of the NumPy objective lam_0 mean(w r^2) + lam_1 BC."""
    problem, method = cj.get_problem("poisson1d", n_pde=48), cj.get_method("cgmpinn")
    model, batch = eqx.filter_jit(
        lambda k1, k2: (build_model(problem, method, k1, width=8, depth=2), problem.sample(k2))
    )(jax.random.key(1), jax.random.key(2))
    params, static = eqx.partition(Trainable(model, None), eqx.is_array)
    x = np.asarray(batch["pde"][0])[:, 0]
    assert x.dtype == np.float64
    w = np.exp(np.sin(1.3 * np.arange(48)) + x)
    w /= w.mean()
    term_fn = make_term_fn(problem, method, static)
    tv = jax.jit(term_fn)(params, batch, jnp.asarray(w))
    np.testing.assert_allclose(
        np.asarray(batch["pde"][1]), _source(np, problem, x), rtol=1e-10, atol=1e-8
    )
    layers = _layers(model)
    r, raw = _np_terms(problem, layers, batch)
    np.testing.assert_allclose(np.asarray(tv.raw), raw, rtol=1e-10)
    np.testing.assert_allclose(float(tv.terms[0]), np.mean(w * r**2), rtol=1e-10)
    assert float(tv.terms[1]) == float(tv.raw[1]) and float(tv.extra) == 0.0
    assert abs(np.mean(w * r**2) / np.mean(r**2) - 1) > 1e-2  # w is not a no-op here

    bal = relobralo(2)
    state = bal.init(jax.random.key(3), jnp.float64)
    prior = np.array([np.mean(w * r**2), raw[1]]) * np.array([0.5, 2.0])
    _, state = jax.jit(bal.update)(
        jnp.asarray(prior), state
    )  # first call: EMA <- prior, lambdas stay ones
    value, grad, tv2, lam, _ = jax.jit(
        lambda p, w, s, b: Objective(term_fn).balanced_eval(p, w, s, b, bal)
    )(params, jnp.asarray(w), state, batch)
    # ReLoBRaLo ("reference" variant) by hand, with the draws of the state's key
    L = np.array([np.mean(w * r**2), raw[1]])
    _, u, _ = jax.jit(relobralo_draws, static_argnums=2)(
        state.key, state.count, state.history.shape[0]
    )
    ref = (
        0.999 * prior + 0.001 * L if float(u) < 0.99 else prior
    )  # the only earlier call is the prior
    z = L / (ref + 1e-8)
    lam_ref = 2 * np.exp(z - z.max()) / np.sum(np.exp(z - z.max()))
    np.testing.assert_allclose(np.asarray(lam), lam_ref, rtol=1e-9)
    assert abs(lam_ref[0] - lam_ref[1]) > 0.5  # non-uniform lambdas
    np.testing.assert_allclose(float(value), lam_ref @ L, rtol=1e-10)
    np.testing.assert_allclose(np.asarray(tv2.terms), L, rtol=1e-10)
    lam_j = jnp.asarray(lam_ref)
    g_lib = jax.jit(jax.grad(lambda p: jnp.dot(lam_j, term_fn(p, batch, jnp.asarray(w)).terms)))(
        params
    )
    g_np = _np_grad(_np_objective(problem, batch, w, lam_ref), layers)
    g_plain = _np_grad(
        _np_objective(problem, batch, np.ones(48), np.ones(2)), layers
    )  # no w, no lambdas
    got = _grad_layers(grad)
    scale = max(np.max(np.abs(g)) for pair in g_np for g in pair)
    for layer in zip(got, _grad_layers(g_lib), g_np, g_plain):
        for mine, lib, fd, plain in zip(*layer):  # weight, then bias
            np.testing.assert_allclose(mine, lib, rtol=1e-11, atol=1e-13 * scale)
            np.testing.assert_allclose(mine, fd, rtol=1e-5, atol=1e-7 * scale)
            assert np.max(np.abs(mine - plain)) > 1e-3 * np.max(
                np.abs(plain)
            )  # not the plain gradient


# --- 3. the refresh schedule (the schedule itself: tests/test_schedule.py) ----------------------
def test_tiny_run_records_the_schedule_and_tau(cgm_run):
    """The run's refreshes are the schedule's, at tau(k) = min(k / (c_sat k_max), 1), and the
    recorded objective is lam . terms with the PDE term weighted once the weights spread."""
    h = cgm_run.history
    chunks = refresh_schedule(ADAM, LBFGS, K_UPD)
    assert (
        h.refresh_k.tolist()
        == [c.tau_k for c in chunks]
        == _reference_refreshes(ADAM, LBFGS, K_UPD)[0]
    )
    assert h.refresh_k.tolist()[19:23] == [381, 390, 391, 411]  # across the hand-off
    k_max = ADAM + LBFGS
    np.testing.assert_allclose(
        h.refresh_tau, np.minimum(h.refresh_k / (TrainConfig().cgm.c_sat * k_max), 1.0), rtol=1e-6
    )
    assert h.refresh_tau[-1] == 1.0 and h.k.tolist() == list(range(1, k_max + 1))
    assert (
        cgm_run.statuses["adam"] == StageStatus.COMPLETED
        and cgm_run.statuses["lbfgs"] == StageStatus.COMPLETED
    )
    assert np.all(h.evals[ADAM:] >= 1) and np.all(h.evals[:ADAM] == 1)
    # the objective recorded is lam . terms (cgmpinn has no extra term), in both stages
    np.testing.assert_allclose(h.loss, np.sum(h.lambdas * h.terms, axis=1), rtol=2e-6)
    np.testing.assert_allclose(h.lambdas.sum(1), 2.0, rtol=1e-5)  # ReLoBRaLo: they sum to C
    assert np.ptp(h.lambdas[:, 0]) > 1e-3  # and they moved
    np.testing.assert_array_equal(h.terms[:, 1], h.raw[:, 1])  # the BC term is not point-weighted
    # the PDE term is mean(w r^2): it differs from mean(r^2) in every chunk whose weights spread
    spread = 0
    for c, s in zip(chunks, h.refresh_spread):
        rows = (h.k >= c.first_k) & (h.k < c.first_k + c.n_steps)
        if s > 1.05:
            spread += 1
            assert np.all(np.abs(h.terms[rows, 0] / h.raw[rows, 0] - 1) > 1e-4), c
    assert spread >= 3, h.refresh_spread


# --- 5. the stops, and the parameters each returns ------------------------------------------------
RATIO, GTOL = 1.5, 1.0


@pytest.fixture(scope="module")
def guarded_run():
    """PINN, 60 Adam steps at lr 0.05 with divergence_ratio 1.5 (Adam overshoots: measured
    DIVERGED at step 44), then dense BFGS with gtol 1.0 (measured: GRAD_TOL at its 4th
    iteration)."""
    cfg = TrainConfig(
        stages=(cj.stages.Adam(steps=60, lr=0.05), cj.stages.BFGS(steps=30, gtol=GTOL)),
        cgm={"k_upd": 20},
        divergence_ratio=RATIO,
        **NET,
    )
    return cj.train(_easy(), "pinn", cfg, key=SEED, quiet=True, cache=CACHE)


def test_diverged_restores_the_best_iterate(guarded_run):
    """The guard's rule replayed on the recorded unweighted losses fires at the last Adam step,
    and the Adam stage hands over its best iterate: the second stage's first recorded loss (an
    evaluation by another program, at the parameters the stage returned) is the smallest
    unweighted loss Adam recorded, not the last one."""
    res, h = guarded_run, guarded_run.history
    assert res.statuses["adam"] == StageStatus.DIVERGED
    adam = h.k <= 60
    raw = h.raw[adam].sum(1)
    best, fired = np.inf, None
    for i, v in enumerate(raw):
        best = min(best, v)
        if v > RATIO * best:
            fired = i
            break
    assert fired == len(raw) - 1 < 59, (fired, len(raw))
    assert (
        h.k[~adam][0] == 61
    )  # the second stage still runs its whole schedule from the restored point
    assert h.raw[~adam][0].sum() == pytest.approx(np.min(raw), rel=1e-6)
    assert h.raw[~adam][0].sum() < raw[-1] / RATIO


def test_grad_tol_keeps_the_start_point(guarded_run):
    """GRAD_TOL after a few iterations; the step of the iteration that fired it is not taken:
    the model returned has (in NumPy) the objective recorded at that iteration's start, the
    rule max|g| <= gtol max(1, |f|) holds there with the gradient by central differences (and
    max|g| > gtol: the tolerance is relative)."""
    res, h = guarded_run, guarded_run.history
    assert res.statuses["bfgs"] == StageStatus.GRAD_TOL
    second = h.k > 60
    assert 1 < second.sum() < 30
    objective = _np_objective(
        res.problem, res.batch, np.ones(EASY["n_pde"]), np.ones(2)
    )  # PINN: w = 1, lam = 1
    value = objective(_layers(res.model))
    assert value == pytest.approx(h.loss[-1], rel=1e-5)
    assert value < np.min(h.loss[second][:-1])  # the stage made progress before it stopped
    assert res.e_loss == pytest.approx(h.loss[-1], rel=1e-5)
    gmax = max(np.max(np.abs(g)) for pair in _np_grad(objective, _layers(res.model)) for g in pair)
    # relative to the objective: measured max|g| 1.68 at f = 2.23, so an absolute rule
    # (max|g| <= gtol) would have gone on
    assert GTOL < gmax <= GTOL * max(1.0, value)


def test_loss_tol_takes_its_last_step():
    """PINN, no Adam, dense BFGS (its line search never accepts a rise) with ftol 0.9 and
    patience 3: the stall rule replayed on the recorded unweighted losses fires at the last
    iteration, and that iteration's step is kept: the model returned is below every recorded
    loss (neither the start point, as for GRAD_TOL, nor a restored best)."""
    cfg = TrainConfig(
        stages=(cj.stages.Adam(steps=0), cj.stages.BFGS(steps=30, ftol=0.9, patience=3)),
        cgm={"k_upd": 20},
        **NET,
    )
    res = cj.train(_easy(), "pinn", cfg, key=SEED, quiet=True, cache=CACHE)
    assert (
        res.statuses["adam"] == StageStatus.SKIPPED and res.statuses["bfgs"] == StageStatus.LOSS_TOL
    )
    raw = res.history.raw.sum(1)
    fired = loss_tol_fires_at(raw, ftol=0.9, patience=3)
    assert fired == len(raw) - 1, (fired, raw)
    _, mine = _np_terms(res.problem, _layers(res.model), res.batch)
    assert mine.sum() == pytest.approx(res.e_loss, rel=1e-5)
    assert mine.sum() < np.min(res.history.loss) * (1 - 1e-5)


# --- 6. mixed precision -------------------------------------------------------------------------
def test_mixed_precision_second_stage_in_float64(cgm_run):
    """CGMPINN, precision="mixed", the fixture's budget: the Adam stage is the float32 run's
    bit for bit, the second stage computes in float64 (model, points, recorded losses), jax's
    flag is restored, and the error (recomputed in NumPy) ends below the initial network's."""
    before = jax.config.jax_enable_x64
    res = cj.train(
        _easy(),
        "cgmpinn",
        TrainConfig(precision="mixed", **BUDGET),
        key=SEED,
        quiet=True,
        cache=CACHE,
    )
    assert jax.config.jax_enable_x64 == before
    assert {str(x.dtype) for x in _leaves(res.model)} == {"float64"}
    assert {str(x.dtype) for x in jax.tree_util.tree_leaves(res.batch)} == {"float64"}
    h, f32 = res.history, cgm_run.history
    adam = h.k <= ADAM
    np.testing.assert_array_equal(h.loss[adam], f32.loss[adam])

    def as32(a):
        return a.astype(np.float32).astype(np.float64)

    assert np.array_equal(h.loss[adam], as32(h.loss[adam]))  # float32 values
    assert np.mean(h.loss[~adam] != as32(h.loss[~adam])) > 0.9  # float64 values
    assert res.statuses["lbfgs"] in (StageStatus.COMPLETED, StageStatus.LOSS_TOL)
    initial = _np_rel_e2(res.problem, _initial_model(res.problem, "cgmpinn", SEED))
    final = _np_rel_e2(res.problem, res.model)
    assert final == pytest.approx(res.metrics.rel_e2, rel=1e-9)
    assert final < 0.05 * initial, (initial, final)  # measured 0.58 -> 3.0e-3
    assert h.loss[-1] < h.loss[adam][-1]  # the second stage went further down
