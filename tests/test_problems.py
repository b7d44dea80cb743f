import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from cgmpinn_jax.derivatives import partial
from cgmpinn_jax.methods import get_method
from cgmpinn_jax.problems import PROBLEMS, get_problem

NAMES = list(PROBLEMS)


def _largest_term(problem, z):
    """Largest magnitude among the terms of the PDE at z (for a relative tolerance)."""
    u = problem.exact
    d = problem.dim
    vals = [u(z)] + [partial(u, i)(z) for i in range(d)] + [partial(u, i, i)(z) for i in range(d)]
    return max(1.0, float(jnp.max(jnp.abs(jnp.stack(vals)))))


@pytest.mark.parametrize("name", NAMES)
def test_exact_solution_satisfies_pde_and_constraints(name, x64):
    p = get_problem(name)
    z = jax.random.uniform(jax.random.key(3), (1000, p.dim), jnp.float64)
    z = jnp.asarray(p.lower) + (jnp.asarray(p.upper) - jnp.asarray(p.lower)) * z
    # N[u*] - f with f = N[u*] by autodiff: this compares the operator with itself (a check that the
    # residual, source and sampling plumbing agree, not of the operator); the operator is checked
    # against hand-derived closed forms in test_autodiff_source_matches_closed_form (three problems)
    r = jax.vmap(lambda q: p.residual(p.exact, q))(z)
    scale = max(_largest_term(p, q) for q in z[:20])
    assert float(jnp.max(jnp.abs(r))) / scale < 1e-8
    batch = p.sample(jax.random.key(0))
    for term, res in p.constraint_residuals(p.exact, batch).items():
        for piece in res:
            assert float(jnp.max(jnp.abs(piece))) < 1e-10, term


def _f_poisson1d(x, a1=5.0, a2=3.0, s=20.0):
    a, b = a1 * np.pi, a2 * np.pi
    sech2 = 1.0 / np.cosh(s * x) ** 2
    return (
        -(a**2 + b**2) * np.sin(a * x) * np.cos(b * x)
        - 2 * a * b * np.cos(a * x) * np.sin(b * x)
        - 2 * s**2 * sech2 * np.tanh(s * x)
    )


def _f_poisson2d(x, y, b1=3.0, b2=2.0):
    return -(np.pi**2) * (b1**2 + b2**2) * np.sin(b1 * np.pi * x) * np.sin(b2 * np.pi * y) + 4 * (
        x**2 + y**2 - 1
    ) * np.exp(-(x**2) - y**2)


def _f_heat(x, t, a1=1.0, a2=2.0, s=10.0):
    sech2 = 1.0 / np.cosh(s * x) ** 2
    u_t = (np.sin(a1 * np.pi * x) + np.tanh(s * x)) * a2 * np.pi * np.cos(a2 * np.pi * t)
    u_xx = (
        -(a1**2) * np.pi**2 * np.sin(a1 * np.pi * x) - 2 * s**2 * sech2 * np.tanh(s * x)
    ) * np.sin(a2 * np.pi * t)
    return u_t - u_xx


@pytest.mark.parametrize(
    "name,closed",
    [
        ("poisson1d", lambda z: _f_poisson1d(z[:, 0])),
        ("poisson2d", lambda z: _f_poisson2d(z[:, 0], z[:, 1])),
        ("heat", lambda z: _f_heat(z[:, 0], z[:, 1])),
    ],
)
def test_autodiff_source_matches_closed_form(name, closed, x64):
    p = get_problem(name)
    z = np.random.default_rng(0).uniform(p.lower, p.upper, size=(500, p.dim))
    f_auto = np.asarray(jax.vmap(p.source)(jnp.asarray(z)))
    f_ref = closed(z)
    np.testing.assert_allclose(f_auto, f_ref, rtol=1e-10, atol=1e-10 * np.max(np.abs(f_ref)))


EXPECTED = {
    # name: (n_pde, {term: [(n_points, fixed coordinate index, fixed value) per piece]})
    "poisson1d": (1500, {"bc": [(1, 0, 0.0), (1, 0, 1.0)]}),
    "poisson2d": (2000, {"bc": [(250, 0, 0.0), (250, 0, 1.0), (250, 1, 0.0), (250, 1, 1.0)]}),
    "heat": (1500, {"ic": [(300, 1, 0.0)], "bc": [(300, 0, 0.0), (300, 0, 1.0)]}),
    "damped_wave": (
        2000,
        {"ic": [(300, 1, 0.0), (300, 1, 0.0)], "bc": [(300, 0, 0.0), (300, 0, 1.0)]},
    ),
    "fisher_kpp": (8000, {"ic": [(400, 1, 0.0)], "bc": [(400, 0, -5.0), (400, 0, 5.0)]}),
}


@pytest.mark.parametrize("name", NAMES)
def test_point_counts_and_ranges(name):
    p = get_problem(name)
    b = p.sample(jax.random.key(0))
    pde, src = b["pde"]
    lo, hi = np.asarray(p.lower), np.asarray(p.upper)
    assert np.all(np.asarray(pde) >= lo) and np.all(np.asarray(pde) < hi)
    assert src.shape == (pde.shape[0],)
    if name == "advection_diffusion":
        assert pde.shape == (3000, 2)
        ((ic, _),) = b["ic"]
        assert (
            ic.shape == (300, 2)
            and np.all(ic[:, 1] == 0)
            and np.all((ic[:, 0] >= -1) & (ic[:, 0] < 1))
        )
        (pu, tu), (px, tx) = b["bc"]
        assert pu.shape == (300, 2, 2) and np.all(pu[:, 0, 0] == -1) and np.all(pu[:, 1, 0] == 1)
        np.testing.assert_array_equal(pu[:, 0, 1], pu[:, 1, 1])  # same times on both sides
        np.testing.assert_array_equal(pu, px)
        return
    n_pde, terms = EXPECTED[name]
    assert pde.shape == (n_pde, p.dim)
    assert set(terms) == set(p.terms)
    for term, spec in terms.items():
        assert len(b[term]) == len(spec)
        for (pts, target), (n, axis, value) in zip(b[term], spec):
            assert pts.shape == (n, p.dim) and target.shape == (n,)
            assert np.all(np.asarray(pts[:, axis]) == value)
            free = np.asarray(pts[:, 1 - axis]) if p.dim == 2 else None
            if free is not None:
                assert np.all(free >= lo[1 - axis]) and np.all(free <= hi[1 - axis])
    if name in ("heat", "damped_wave", "fisher_kpp"):  # the same random times on both edges
        (left, _), (right, _) = b["bc"]
        np.testing.assert_array_equal(left[:, 1], right[:, 1])
        assert len(np.unique(np.asarray(left[:, 1]))) > 290
    if name == "poisson2d":  # per-edge linspace, endpoints included
        np.testing.assert_allclose(b["bc"][0][0][:, 1], np.linspace(0, 1, 250), atol=1e-7)
    if name == "damped_wave":  # u and u_t pieces share the IC points
        np.testing.assert_array_equal(b["ic"][0][0], b["ic"][1][0])


@pytest.mark.parametrize("name", NAMES)
def test_same_key_same_points(name):
    p = get_problem(name)
    a = p.sample(jax.random.key(5))["pde"][0]
    b = p.sample(jax.random.key(5))["pde"][0]
    c = p.sample(jax.random.key(6))["pde"][0]
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)


def test_test_grids():
    g = get_problem("poisson1d").test_grid()
    assert g.points.shape == (200, 1) and g.points[0, 0] == 0 and g.points[-1, 0] == 1
    g = get_problem("advection_diffusion").test_grid()
    assert g.points.shape == (10000, 2) and g.shape == (100, 100)
    # meshgrid(indexing='ij'): the first coordinate varies slowest
    assert g.points[0, 0] == g.points[99, 0] == -1 and g.points[99, 1] == 1
    rms = {
        "poisson1d": 1.0830,
        "poisson2d": 0.7970,
        "heat": 1.1402,
        "damped_wave": 0.4762,
        "advection_diffusion": 0.6736,
        "fisher_kpp": 0.7687,
    }
    for name, expected in rms.items():  # docs/reference-code.md §8.7, last row
        p = get_problem(name)
        u = np.asarray(p.exact_on(p.test_grid().points))
        assert abs(np.sqrt(np.mean(u**2)) - expected) < 1e-4, name


def test_fisher_clamp_and_constants():
    p = get_problem("fisher_kpp")
    assert math.isclose(p.lam, 1.63299, rel_tol=1e-5) and math.isclose(
        p.speed, 2.04124, rel_tol=1e-5
    )
    far = jnp.array([-1000.0, 0.0])
    assert float(p.exact(far)) == pytest.approx(1.0 / (1.0 + math.exp(-50.0)) ** 2)
    assert get_method("cgmpinn").settings(p).input_map == ((0.2, 1.0), (0.0, -1.0))


def test_wave_speed():
    assert get_problem("damped_wave").c2 == pytest.approx(1.00101, abs=1e-5)


def test_unknown_problem_lists_names():
    with pytest.raises(ValueError) as e:
        get_problem("burgers")
    for name in NAMES:
        assert name in str(e.value)


def test_wrong_point_dimension():
    p = get_problem("heat")
    with pytest.raises(ValueError, match=r"\(n, 2\)"):
        p.pde_residuals(p.exact, jnp.ones((10, 3)))
    with pytest.raises(ValueError, match=r"\(n, 2\)"):
        p.exact_on(jnp.ones((10,)))


# ---- validation, point helpers, naming ---------------------------------------------------

from cgmpinn_jax.problems import box_edges, edge_pair, initial_line, validate_problem  # noqa: E402


@pytest.mark.parametrize("name", NAMES)
def test_benchmarks_pass_validation(name):
    p = get_problem(name)
    assert validate_problem(p) is p


def test_validation_traces_once_and_checks_exact():
    """validate_problem looks at shapes only (eval_shape): it must not run sample_points on
    concrete data, and must still reject an exact solution of the wrong shape."""
    import dataclasses

    from cgmpinn_jax.problems import Heat

    calls = []

    @dataclasses.dataclass(frozen=True)
    class Traced(Heat):
        def sample_points(self, key):
            calls.append(isinstance(key, jax.core.Tracer))
            return Heat.sample_points(self, key)

    validate_problem(Traced(n_pde=7))
    assert calls == [True]  # traced once, abstractly
    validate_problem(Traced(n_pde=7))
    assert calls == [True]  # cached per problem

    @dataclasses.dataclass(frozen=True)
    class Vector(Heat):
        def exact(self, z):
            return jnp.stack([Heat.exact(self, z)])

    with pytest.raises(ValueError, match=r"Vector\.exact\(z\): must return a scalar"):
        validate_problem(Vector())


def test_sample_names_a_piece_count_mismatch():
    import dataclasses

    from cgmpinn_jax.problems import Heat

    @dataclasses.dataclass(frozen=True)
    class OneEdge(Heat):
        def sample_points(self, key):
            pts = Heat.sample_points(self, key)
            return {**pts, "bc": pts["bc"][:1]}

    with pytest.raises(
        ValueError, match=r"OneEdge\.sample_points\(key\)\['bc'\]: has 1 point array.*2 piece"
    ):
        OneEdge().sample(jax.random.key(0))


def test_box_edges():
    # deterministic: the 2D Poisson benchmark's four edges, bit for bit
    p = get_problem("poisson2d")
    for a, b in zip(p.sample_points(jax.random.key(0))["bc"], box_edges(p.lower, p.upper, 250)):
        np.testing.assert_array_equal(a, b)
    # random points on the faces of a 3D box, in face order (axis 0 lo/hi, axis 1 lo/hi, ...)
    lo, hi = (0.0, -1.0, 2.0), (1.0, 1.0, 5.0)
    faces = box_edges(lo, hi, 50, key=jax.random.key(1))
    assert len(faces) == 6
    for i, f in enumerate(faces):
        axis, side = divmod(i, 2)
        f = np.asarray(f)
        assert f.shape == (50, 3)
        assert np.all(f[:, axis] == (hi if side else lo)[axis])
        others = [j for j in range(3) if j != axis]
        assert np.all(f[:, others] >= np.array(lo)[others]) and np.all(
            f[:, others] <= np.array(hi)[others]
        )
        assert len(np.unique(f[:, others[0]])) == 50
    assert [e.tolist() for e in box_edges((0.0,), (2.0,), 9)] == [[[0.0]], [[2.0]]]
    with pytest.raises(ValueError, match="box_edges"):
        box_edges((0.0, 0.0), (1.0,), 4)


def test_edge_pair_and_initial_line():
    t = jnp.array([0.1, 0.7])
    left, right = edge_pair(t, -2.0, 3.0)

    def f32(a):
        return np.asarray(a, np.float32)

    np.testing.assert_array_equal(left, f32([[-2.0, 0.1], [-2.0, 0.7]]))
    np.testing.assert_array_equal(right, f32([[3.0, 0.1], [3.0, 0.7]]))
    np.testing.assert_array_equal(initial_line(t, 0.5), f32([[0.1, 0.5], [0.7, 0.5]]))


def test_test_grid_is_the_one_name():
    """Every built-in problem defines test_grid(), and no problem has test_points()."""
    for cls in (type(get_problem(n)) for n in NAMES):
        assert "test_grid" in cls.__dict__ and "test_points" not in cls.__dict__, cls
    assert get_problem("heat").test_grid().points.shape == (10000, 2)
    assert not hasattr(get_problem("heat"), "test_points")


def test_get_problem_by_class_path_and_class():
    from cgmpinn_jax.examples import ViscousBurgers

    p = get_problem("cgmpinn_jax.examples:ViscousBurgers", nu=0.1)
    assert type(p) is ViscousBurgers and p.nu == 0.1
    assert get_problem(ViscousBurgers, n_pde=10).n_pde == 10
    with pytest.raises(ValueError, match=r"ViscousBurgers.*'nope'"):
        get_problem(ViscousBurgers, nope=1)
    with pytest.raises(ValueError, match=r"'cgmpinn_jax.examples' has no 'Missing'"):
        get_problem("cgmpinn_jax.examples:Missing")
    with pytest.raises(ValueError, match=r"not a Problem subclass"):
        get_problem("cgmpinn_jax.examples:readme_block")


def test_problem_docstring_lists_what_to_define():
    from cgmpinn_jax.problems import DerivativeMatch, Problem

    doc = Problem.__doc__
    for item in (
        "name",
        "coords",
        "lower",
        "upper",
        "terms",
        "homogeneous",
        "defaults",
        "exact(self, z)",
        "operator(self, u, z)",
        "pieces(self)",
        "sample_points(self, key)",
        "test_grid(self)",
    ):
        assert item in doc, item
    assert "pairs with" in doc and "**sum**" in doc
    assert "an index into the problem's ``coords``" in DerivativeMatch.__doc__
