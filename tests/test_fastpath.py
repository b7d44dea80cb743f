"""The derivative fast path (cgmpinn_jax.nn._taylor): same residuals and loss gradients as the
general path (nested jvp), to 1e-10 relative in float64, on every benchmark problem; automatic
fallback for what it does not cover; the switch; jax's x64 flag left as found."""

from __future__ import annotations

import copy
import dataclasses

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from cgmpinn_jax.nn import _nets as nets
from cgmpinn_jax.nn import _taylor as taylor
from cgmpinn_jax.nn import _taylor_systems
from cgmpinn_jax.methods import get_method
from cgmpinn_jax.derivatives import partial
from cgmpinn_jax.problems import get_problem

PROBLEMS = ("poisson1d", "poisson2d", "heat", "advection_diffusion", "damped_wave", "fisher_kpp")
SMALL = {"n_pde": 48, "n_ic": 16, "n_bc": 16, "n_edge": 12}
RTOL = 1e-10
FISHER_MAP = ((0.2, 1.0), (0.0, -1.0))  # (x/5, t-1)

# lanes each benchmark operator reads
EXPECTED_LANES = {
    "poisson1d": {(0, 0)},
    "poisson2d": {(0, 0), (1, 1)},
    "heat": {(1,), (0, 0)},
    "advection_diffusion": {(0,), (1,), (0, 0)},
    "damped_wave": {(1,), (0, 0), (1, 1)},
    "fisher_kpp": {(), (1,), (0, 0)},
}


@pytest.fixture
def f64():
    """float64 inside the test via jax.enable_x64 as a context manager; the flag must be
    unchanged afterwards."""
    before = bool(jax.config.jax_enable_x64)
    with jax.enable_x64(True):
        yield
    assert bool(jax.config.jax_enable_x64) == before


def small(name):
    p = get_problem(name)
    fields = {f.name for f in dataclasses.fields(p)}
    return dataclasses.replace(p, **{k: v for k, v in SMALL.items() if k in fields})


def cgm_settings(problem):
    """(init, input_map) of the CGMPINN network on ``problem``."""
    s = get_method("cgmpinn").settings(problem)
    return s.init, s.input_map


def networks(problem, key=0):
    """The PINN network (raw inputs, torch init) and the CGMPINN network (its input map and
    init; Fisher-KPP: (x/5, t-1), Xavier, width 80), in float64."""
    d = problem.defaults
    init, input_map = cgm_settings(problem)
    k1, k2 = jax.random.split(jax.random.key(key))
    pinn = nets.mlp(k1, problem.dim, d.width, d.depth, dtype=jnp.float64)
    cgm = nets.mlp(
        k2, problem.dim, d.width, d.depth, init=init, input_map=input_map, dtype=jnp.float64
    )
    return {"pinn": pinn, "cgmpinn": cgm}


def objective(problem, batch):
    """The PINN objective (sum of per-term mean squares) with the PDE residuals as aux, as
    the engine builds it from the problem's public methods."""

    def f(model):
        pts, src = batch["pde"]
        r = problem.pde_residuals(model, pts, src)
        cres = problem.constraint_residuals(model, batch)
        loss = jnp.mean(r**2) + sum(jnp.mean(c**2) for t in problem.terms for c in cres[t])
        return loss, r

    return eqx.filter_value_and_grad(f, has_aux=True)


def fast_and_general(fn, *args):
    """``fn(*args)`` through the fast path and through the general path, in one jitted
    function (the switch is read while tracing; one compilation for both)."""

    def both(*a):
        fast = fn(*a)
        with taylor.fast_path(False):
            slow = fn(*a)
        return fast, slow

    return eqx.filter_jit(both)(*args)


def rel(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-300))


def n_dots(fn, *args) -> int:
    return str(jax.make_jaxpr(fn)(*args)).count("dot_general")


# CI runs the simplest and the richest operator; the other four are marked slow (compile time)
@pytest.mark.parametrize(
    "name",
    [
        n if n in ("poisson1d", "fisher_kpp") else pytest.param(n, marks=pytest.mark.slow)
        for n in PROBLEMS
    ],
)
def test_equivalence_float64(name, f64):
    problem = small(name)
    assert taylor.requested_lanes(problem.operator, problem.dim, jnp.float64) == frozenset(
        EXPECTED_LANES[name]
    )
    batch = jax.jit(problem.sample)(jax.random.key(3))
    nets_ = networks(problem)
    assert (nets_["cgmpinn"].input_map is not None) == (name == "fisher_kpp")
    for label, model in nets_.items():
        assert model.layers[0].weight.dtype == jnp.float64
        fast, slow = fast_and_general(objective(problem, batch), model)
        (loss_f, r_f), g_f = fast
        (loss_s, r_s), g_s = slow
        assert r_f.dtype == jnp.float64
        assert rel(r_f, r_s) < RTOL, (label, rel(r_f, r_s))
        assert rel(loss_f, loss_s) < RTOL, label
        for a, b in zip(
            jax.tree_util.tree_leaves(g_f), jax.tree_util.tree_leaves(g_s), strict=True
        ):
            assert rel(a, b) < RTOL, (label, rel(a, b))
        # the fast path was taken: fewer matrix products than one pass per stream
        pts, src = batch["pde"]
        d_fast = n_dots(lambda m, pts=pts, src=src: problem.pde_residuals(m, pts, src), model)
        with taylor.fast_path(False):  # a fresh function: jax caches traces per function
            d_slow = n_dots(lambda m, pts=pts, src=src: problem.pde_residuals(m, pts, src), model)
        assert d_fast < d_slow, (d_fast, d_slow)


def test_residual_and_traced_coefficient(f64):
    """Problem.residual (one point; gPINN differentiates it w.r.t. the point) stays on the
    general path and agrees with the batched fast path; a coefficient the operator closes
    over may be traced (inverse problems) without leaving the fast path."""
    problem = small("advection_diffusion")
    model = networks(problem)["cgmpinn"]
    pts = jax.jit(problem.sample)(jax.random.key(1))["pde"][0][:8]
    r_point = jax.jit(jax.vmap(lambda z: problem.residual(model, z)))(pts)
    assert rel(jax.jit(lambda p: problem.pde_residuals(model, p))(pts), r_point) < RTOL

    def total(nu, fast):
        p = copy.copy(problem)  # as cgmpinn_jax.inverse binds a traced coefficient
        object.__setattr__(p, "nu", nu)
        with taylor.fast_path(fast):
            if fast:
                assert taylor.requested_lanes(p.operator, 2, jnp.float64) is not None
            return jnp.sum(p.pde_residuals(model, pts) ** 2)

    g_fast = jax.jit(jax.grad(lambda nu: total(nu, True)))(0.02)
    g_slow = jax.jit(jax.grad(lambda nu: total(nu, False)))(0.02)
    assert rel(g_fast, g_slow) < RTOL


@pytest.mark.parametrize(
    "factory",
    [
        lambda k, **kw: nets.lnn_pinn(k, 2, 8, 2, **kw),
        lambda k, **kw: nets.star_pinn(k, 2, 8, 2, n_blocks=2, **kw),
    ],
    ids=["lnn_pinn", "star_pinn"],
)
def test_other_networks(factory, f64):
    problem = small("fisher_kpp")
    model = factory(jax.random.key(2), input_map=cgm_settings(problem)[1], dtype=jnp.float64)
    batch = jax.jit(problem.sample)(jax.random.key(0))
    ((loss_f, r_f), g_f), ((loss_s, r_s), g_s) = fast_and_general(objective(problem, batch), model)
    assert rel(r_f, r_s) < RTOL
    for a, b in zip(jax.tree_util.tree_leaves(g_f), jax.tree_util.tree_leaves(g_s), strict=True):
        assert rel(a, b) < RTOL


def _mixed(u, z):
    return partial(u, 0, 1)(z) + partial(u, 1, 0)(z) + u(z) * partial(u, 0)(z)


def _third(u, z):
    return partial(u, 0, 0, 0)(z) + partial(u, 1)(z)


def _elsewhere(u, z):
    return partial(u, 0, 0)(z) - u(0.5 * z)


def _wrapped(u, z):
    return partial(lambda q: u(q) ** 2, 0)(z)


def _grad_inside(u, z):
    return jax.grad(u)(z)[0] + partial(u, 1, 1)(z)


def _not_scalar(u, z):
    return jnp.stack([u(z), partial(u, 0)(z)])


@pytest.mark.parametrize(
    "op, covered",
    [
        (_mixed, True),
        (_third, False),
        (_elsewhere, False),
        (_wrapped, False),
        (_grad_inside, False),
    ],
)
def test_automatic_fallback(op, covered, f64):
    model = nets.mlp(jax.random.key(0), 2, 12, 3, input_map=FISHER_MAP, dtype=jnp.float64)
    pts = jax.random.uniform(jax.random.key(1), (10, 2), jnp.float64)
    assert (taylor.requested_lanes(op, 2, jnp.float64) is not None) == covered
    fast, slow = fast_and_general(lambda m, p: taylor.operator_values(op, m, p), model, pts)
    assert rel(fast, slow) < RTOL
    if op is _mixed:  # exact reference by reverse mode
        h = jax.jit(jax.vmap(jax.hessian(model)))(pts)
        g = jax.jit(jax.vmap(jax.grad(model)))(pts)
        ref = 2 * h[:, 0, 1] + jax.vmap(model)(pts) * g[:, 0]
        assert rel(fast, ref) < RTOL


def test_not_covered_inputs():
    def op(u, z):
        return partial(u, 0, 0)(z)

    assert taylor.requested_lanes(_not_scalar, 2, jnp.float32) is None

    # a plain function has no taylor(): general path
    def f(z):
        return jnp.sin(z[0]) * z[1]

    assert not taylor.supports_taylor(f)
    pts = jnp.array([[0.3, 2.0], [1.0, 1.0]])
    np.testing.assert_allclose(
        taylor.operator_values(op, f, pts), -jnp.sin(pts[:, 0]) * pts[:, 1], rtol=1e-6
    )


@pytest.mark.parametrize("stack", [True, False])
def test_stacked_and_per_lane_products_agree(stack, f64):
    problem = small("damped_wave")
    model = networks(problem)["cgmpinn"]
    pts, src = jax.jit(problem.sample)(jax.random.key(0))["pde"]
    with taylor.fast_path(True, stack=stack):
        assert taylor.stacking() is stack
        fast = jax.jit(lambda m: problem.pde_residuals(m, pts, src))(model)
        n = n_dots(lambda m: problem.pde_residuals(m, pts, src), model)
    with taylor.fast_path(False):
        slow = jax.jit(lambda m: problem.pde_residuals(m, pts, src))(model)
    assert rel(fast, slow) < RTOL
    lanes = 1 + 2 + 2  # value, u_x, u_t, u_xx, u_tt
    hidden = len(model.layers) - 2
    # first layer: value + constant lanes; hidden and output layers: 1 product or one per lane
    assert n == 2 + (hidden + 1) * (1 if stack else lanes), n


def test_float32_default_and_switch():
    """Default dtype (float32 unless x64 is on), the switch nests and restores, and the
    default stacking is per lane on CPU."""
    before = bool(jax.config.jax_enable_x64)
    problem = small("heat")
    model = nets.mlp(jax.random.key(0), 2)
    pts, src = jax.jit(problem.sample)(jax.random.key(0))["pde"]
    assert taylor.fast_path_enabled()
    assert taylor.stacking() is (jax.default_backend() != "cpu")
    with taylor.fast_path(False):
        assert not taylor.fast_path_enabled()
        with taylor.fast_path(True, stack=True):
            assert taylor.fast_path_enabled() and taylor.stacking()
        assert not taylor.fast_path_enabled()
    assert taylor.fast_path_enabled()
    fast, slow = fast_and_general(lambda m: problem.pde_residuals(m, pts, src), model)
    assert fast.dtype == slow.dtype == model.layers[0].weight.dtype
    np.testing.assert_allclose(fast, slow, rtol=1e-4, atol=1e-4 * float(jnp.max(jnp.abs(slow))))
    assert bool(jax.config.jax_enable_x64) == before


def test_taylor_lanes_against_autodiff(f64):
    """Every lane of MLP.taylor, with the input map, against jax.hessian / jax.grad."""
    model = nets.mlp(jax.random.key(4), 2, 10, 3, input_map=FISHER_MAP, dtype=jnp.float64)
    pts = jax.random.uniform(jax.random.key(5), (7, 2), jnp.float64)
    lanes = jax.jit(lambda m, p: m.taylor_lanes(p, [(), (0,), (1,), (0, 0), (0, 1), (1, 1)]))(
        model, pts
    )
    h = jax.jit(jax.vmap(jax.hessian(model)))(pts)
    g = jax.jit(jax.vmap(jax.grad(model)))(pts)
    assert rel(lanes[()], jax.vmap(model)(pts)) < RTOL
    assert rel(lanes[(0,)], g[:, 0]) < RTOL and rel(lanes[(1,)], g[:, 1]) < RTOL
    for i, j in ((0, 0), (0, 1), (1, 1)):
        assert rel(lanes[(i, j)], h[:, i, j]) < RTOL
    with pytest.raises(ValueError, match="shape"):
        model.taylor_lanes(pts[:, :1], [()])


@pytest.mark.parametrize("network", ["mlp", "lnn_pinn", "star_pinn"])
def test_a_systems_fields_take_the_fast_path_with_the_same_residuals_and_gradients(network, f64):
    """The lid-driven cavity (u, v, p; three equations): one Taylor-mode pass for every field."""
    problem = get_problem("ns2d_c", n_pde=64, n_lid=8, n_wall=16)
    factory = {"mlp": nets.mlp, "lnn_pinn": nets.lnn_pinn, "star_pinn": nets.star_pinn}[network]
    kw = {} if network == "star_pinn" else {"depth": 3}
    model = factory(jax.random.key(0), 2, 12, out_dim=3, **kw)
    pts = problem.sample(jax.random.key(1))["pde"][0].astype(jnp.float64)
    model = jax.tree_util.tree_map(
        lambda x: x.astype(jnp.float64) if eqx.is_inexact_array(x) else x, model
    )

    def loss(m):
        r = problem.pde_residuals(m, pts)
        return jnp.sum(r**2), r

    (l_f, r_f), g_f = jax.value_and_grad(loss, has_aux=True)(model)
    with taylor.fast_path(False):
        (l_s, r_s), g_s = jax.value_and_grad(lambda m: loss(m), has_aux=True)(model)
    assert r_f.shape == (64, 3) and rel(r_f, r_s) < RTOL and rel(l_f, l_s) < RTOL
    for a, b in zip(jax.tree_util.tree_leaves(g_f), jax.tree_util.tree_leaves(g_s), strict=True):
        assert rel(a, b) < RTOL
    d_fast = n_dots(lambda m: problem.pde_residuals(m, pts), model)
    with taylor.fast_path(False):
        d_slow = n_dots(lambda m: problem.pde_residuals(m, pts), model)
    assert d_fast < d_slow, (d_fast, d_slow)


def test_a_system_operator_reading_every_field_at_once_falls_back():
    fields = ("u", "v")
    net = nets.mlp(jax.random.key(0), 2, 8, 2, out_dim=2)
    pts = jax.random.uniform(jax.random.key(1), (5, 2))
    whole = lambda u, z: jnp.stack([u(z)[0] - partial(u.v, 0)(z), u(z)[1]])  # noqa: E731
    assert _taylor_systems.system_operator_values(whole, net, pts, fields) is None
    per_field = lambda u, z: jnp.stack([u.u(z) - partial(u["v"], 0, 0)(z), partial(u.v, 1)(z)])  # noqa: E731
    out = _taylor_systems.system_operator_values(per_field, net, pts, fields)
    from cgmpinn_jax.problems._pieces import Fields

    ref = jax.vmap(lambda z: per_field(Fields(net, fields), z))(pts)
    assert out.shape == (5, 2) and rel(out, ref) < 1e-5
