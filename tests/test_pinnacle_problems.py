"""PINNacle's seven problems (cgmpinn_jax/problems/pinnacle/): each closed form
satisfies its PDE and its conditions, each reference meets its boundary conditions, and every
problem validates, is listed by ``cgmpinn-jax list`` and trains by name."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import cgmpinn_jax as cj
from cgmpinn_jax import cli
from cgmpinn_jax.derivatives import partial
from cgmpinn_jax.problems import PINNACLE, PROBLEMS, WORKED, get_problem, validate_problem
from cgmpinn_jax.problems.pinnacle import Burgers1DC
from cgmpinn_jax.problems.pinnacle.nd import lateral_normal

CLOSED = ["wave1d_c", "heat2d_ms", "poisson_nd", "heat_nd"]
DATA = ["burgers1d_c", "poisson2d_c", "ns2d_c"]


def test_registry():
    assert list(PINNACLE) == DATA + CLOSED
    assert not set(PINNACLE) & (set(PROBLEMS) | set(WORKED))
    assert all(get_problem(n).has_exact == (n in CLOSED) for n in PINNACLE)
    assert get_problem("wave1d_c", n_pde=8192).n_pde == 8192
    with pytest.raises(ValueError, match="heat2d_ms"):
        get_problem("no_such_problem")


# ---------------------------------------------------------------- the closed forms


def _term_scale(p, z):
    """The largest magnitude among u*, its first and pure second derivatives and f at the points
    z."""
    u = p.exact

    def terms(q):
        return jnp.stack(
            [u(q), p.source(q)]
            + [partial(u, i)(q) for i in range(p.dim)]
            + [partial(u, i, i)(q) for i in range(p.dim)]
        )

    return float(jnp.max(jnp.abs(jax.vmap(terms)(z))))


@pytest.mark.parametrize("name", CLOSED)
def test_closed_form_satisfies_the_pde(name):
    """N[u*] = f with f as stated (0, or PINNacle's source for the two 5-D problems), by
    autodiff."""
    with jax.enable_x64(True):
        p = get_problem(name, n_pde=300)
        z = p.sample_points(jax.random.key(1))["pde"]
        assert z.dtype == jnp.float64 and z.shape == (300, p.dim)
        r = jax.vmap(lambda q: p.residual(p.exact, q))(z)
        scale = _term_scale(p, z)
        assert scale > 1.0
        assert float(jnp.max(jnp.abs(r))) < 1e-8 * scale


def _on(points, axis, value):
    return np.allclose(np.asarray(points)[:, axis], value, atol=1e-12)


@pytest.mark.parametrize("name", CLOSED)
def test_closed_form_satisfies_the_conditions(name):
    """Every piece's residual of u* vanishes on its sampled points, and the points lie where the
    condition is stated."""
    with jax.enable_x64(True):
        p = get_problem(name)
        batch = p.sample(jax.random.key(0))
        for term, res in p.constraint_residuals(p.exact, batch).items():
            for i, r in enumerate(res):
                scale = max(1.0, float(jnp.max(jnp.abs(batch[term][i][1]))))
                assert float(jnp.max(jnp.abs(r))) < 1e-10 * scale, (term, i)
        ic, bc = batch.get("ic"), batch["bc"]
        if name == "wave1d_c":
            assert _on(ic[0][0], 1, 0.0) and _on(ic[1][0], 1, 0.0)
            x = np.asarray(bc[0][0][:, 0])
            assert set(np.unique(x)) == {0.0, 1.0} and (x == 0).sum() == 200
        elif name == "heat2d_ms":
            assert _on(ic[0][0], 2, 0.0) and ic[0][0].shape == (800, 3)
            xy = np.asarray(bc[0][0][:, :2])
            assert bc[0][0].shape == (800, 3) and np.all(
                np.min(np.minimum(xy, 1 - xy), axis=1) < 1e-12
            )
        elif name == "poisson_nd":
            x = np.asarray(bc[0][0])
            assert x.shape == (800, 5) and np.all(np.min(np.minimum(x, 1 - x), axis=1) < 1e-12)
        else:  # heat_nd: the sphere x [0, 1], and the ball at t = 0
            x = np.asarray(bc[0][0])
            np.testing.assert_allclose(np.linalg.norm(x[:, :5], axis=1), 1.0, atol=1e-12)
            assert x[:, 5].min() >= 0 and x[:, 5].max() <= 1 and _on(ic[0][0], 5, 0.0)
            assert np.linalg.norm(np.asarray(ic[0][0])[:, :5], axis=1).max() <= 1.0


def test_heat_nd_neumann_condition_on_the_sphere():
    """n . grad u* = u* on |x| = 1 (grad u* = x u*), with n = (x, 0) the normal of the cylinder."""
    with jax.enable_x64(True):
        p = get_problem("heat_nd")
        ((pts, target),) = p.sample(jax.random.key(2))["bc"]
        normals = jax.vmap(lateral_normal)(pts)
        np.testing.assert_allclose(normals[:, :5], pts[:, :5], atol=1e-12)
        assert float(jnp.abs(normals[:, 5]).max()) == 0.0
        (piece,) = p.pieces()["bc"]
        np.testing.assert_allclose(piece.value(p.exact, pts), p.exact_on(pts), rtol=1e-12)
        np.testing.assert_allclose(target, p.exact_on(pts), rtol=1e-12)
        inside = pts.at[:, :5].multiply(0.5)  # off the sphere the flux is |x|^2 u*, not u*
        assert float(jnp.abs(piece.value(p.exact, inside) - piece.target(p, inside)).min()) > 0.1


def test_closed_forms_take_pinnacles_values():
    """Spot values computed by hand from PINNacle's ref_sol formulas."""
    with jax.enable_x64(True):
        z = {
            "wave1d_c": [0.3, 0.2],
            "heat2d_ms": [0.013, 0.4, 2.0],
            "poisson_nd": [0.1, 0.2, 0.3, 0.4, 0.5],
            "heat_nd": [0.1, -0.2, 0.3, 0.0, 0.2, 0.7],
        }
        x = {k: np.array(v) for k, v in z.items()}
        want = {
            "wave1d_c": np.sin(np.pi * 0.3) * np.cos(0.4 * np.pi)
            + 0.5 * np.sin(1.2 * np.pi) * np.cos(1.6 * np.pi),
            "heat2d_ms": np.sin(0.26 * np.pi)
            * np.sin(0.4 * np.pi)
            * np.exp(-(400 / 500**2 + 1) * 2.0),
            "poisson_nd": np.sin(np.pi / 2 * x["poisson_nd"]).sum(),
            "heat_nd": np.exp((x["heat_nd"][:5] ** 2).sum() / 2 + 0.7),
        }
        for name, v in want.items():
            assert float(get_problem(name).exact(jnp.asarray(x[name]))) == pytest.approx(
                v, rel=1e-12
            )


def test_test_grids_lie_in_the_domain():
    assert get_problem("wave1d_c").test_grid().points.shape == (101 * 101, 2)
    assert get_problem("heat2d_ms").test_grid().shape == (81, 21, 11)
    cube = get_problem("poisson_nd").test_grid().points
    assert cube.shape == (5000, 5) and cube.min() >= 0 and cube.max() <= 1
    cyl = get_problem("heat_nd").test_grid().points
    assert cyl.shape == (5000, 6) and np.linalg.norm(cyl[:, :5], axis=1).max() <= 1
    assert cyl[:, 5].min() >= 0 and cyl[:, 5].max() <= 1
    np.testing.assert_array_equal(cyl, get_problem("heat_nd").test_grid().points)  # a fixed seed


# ---------------------------------------------------------------- the data-defined ones


def _edge(lo, hi):
    return lambda p: np.any((np.abs(p - lo) < 1e-9) | (np.abs(p - hi) < 1e-9), axis=1)


def _circles(p):
    c = np.array([[0.3, 0.3], [-0.3, 0.3], [0.3, -0.3], [-0.3, -0.3]])
    return np.abs(np.min(np.linalg.norm(p[:, None] - c[None], axis=-1), axis=1) - 0.1) < 1e-9


def _lid(p):
    return np.abs(p[:, 1] - 1) < 1e-12


def _walls(p):
    return ~_lid(p) & (
        (np.abs(p[:, 0]) < 1e-12) | (np.abs(p[:, 0] - 1) < 1e-12) | (np.abs(p[:, 1]) < 1e-12)
    )


# (problem parameters, [(term, piece index, where on the reference's points, tolerance)]); the
# tolerances are the data's own (tests/test_reference_data.py measures them on the files)
REFERENCE_CHECKS = {
    "burgers1d_c": (
        {},
        [
            ("ic", 0, lambda p: p[:, 1] == 0, 1e-6),
            ("bc", 0, lambda p: p[:, 0] == -1, 0.0),
            ("bc", 1, lambda p: p[:, 0] == 1, 0.0),
        ],
    ),
    "burgers1d_c/pinnacle": (
        {"reference_source": "pinnacle"},
        [
            ("ic", 0, lambda p: p[:, 1] == 0, 4e-6),
            ("bc", 0, lambda p: p[:, 0] == -1, 0.0),
            ("bc", 1, lambda p: p[:, 0] == 1, 0.0),
        ],
    ),
    "poisson2d_c": ({}, [("bc", 0, _edge(-0.5, 0.5), 1e-6), ("bc", 1, _circles, 1e-6)]),
    "ns2d_c": (
        {},
        [
            ("bc", 0, _lid, 3e-4),
            ("bc", 1, _lid, 2e-4),
            ("bc", 2, _walls, 1e-6),
            ("bc", 3, _walls, 1e-6),
        ],
    ),
}


@pytest.mark.parametrize("case", sorted(REFERENCE_CHECKS))
def test_reference_meets_the_stated_conditions(case):
    """The reference's values on a boundary part agree with the target of the piece stated there."""
    params, checks = REFERENCE_CHECKS[case]
    p = get_problem(case.split("/")[0], **params)
    ref = p.reference_data()
    for term, i, where, tol in checks:
        piece, mask = p.pieces()[term][i], where(ref.points)
        assert mask.sum() >= 11, (term, i)
        target = np.asarray(piece.target(p, jnp.asarray(ref.points[mask])))
        assert np.abs(ref.field(piece.field or "u")[mask] - target).max() <= tol + 1e-7, (term, i)
    if case == "ns2d_c":  # the pressure gauge p(0, 0) = 0 of the pinned point
        assert ref.field("p")[np.all(ref.points == 0, axis=1)].tolist() == [0.0]


def test_burgers_reference_source():
    assert get_problem("burgers1d_c").truth().against.endswith("(pseudo-spectral)")
    truth = get_problem("burgers1d_c", reference_source="pinnacle").truth()
    assert truth.against == "reference pinnacle/burgers1d.dat.gz" and truth.points.shape == (
        1111,
        2,
    )
    with pytest.raises(ValueError, match="reference_source must be one of"):
        Burgers1DC(reference_source="comsol")
    with pytest.raises(ValueError, match="nu = 0.01/pi"):
        Burgers1DC(nu=0.01, reference_source="pinnacle")


def test_data_problems_are_the_worked_examples():
    for name, worked in (
        ("burgers1d_c", "burgers_data"),
        ("poisson2d_c", "holes"),
        ("ns2d_c", "cavity"),
    ):
        assert isinstance(get_problem(name), type(get_problem(worked)))
        assert (
            get_problem(name).reference_data().source == get_problem(worked).reference_data().source
        )


# ---------------------------------------------------------------- registry, listing, training, docs


def test_listed_by_cli(capsys):
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    section = out[out.index("PINNacle's problems") : out.index("methods (")]
    for name in PINNACLE:
        line = next(ln for ln in section.splitlines() if ln.split()[:1] == [name])
        p = get_problem(name)
        assert f"d={p.dim} " in line
        assert ("against the closed form" in line) == p.has_exact
        assert p.has_exact or "against reference pinnacle/" in line or "pseudo-spectral" in line


TINY = cj.TrainConfig(stages=(cj.stages.Adam(steps=20), cj.stages.LBFGS(steps=0)), width=8, depth=1)


@pytest.mark.parametrize("name", list(PINNACLE))
def test_validates_and_trains_by_name(name):
    validate_problem(get_problem(name))
    r = cj.train(name, "pinn", TINY, quiet=True)
    assert r.problem.name == name and np.isfinite(r.e_loss)
    assert r.metrics.against == ("exact" if name in CLOSED else r.problem.truth().against)
    assert all(np.isfinite(getattr(r.metrics, k)) for k in cj.metrics.ERRORS)


SOURCES = {
    "burgers1d_c": ("burgers.py", "Burgers1D"),
    "poisson2d_c": ("poisson.py", "Poisson2D_Classic"),
    "ns2d_c": ("ns.py", "NS2D_LidDriven"),
    "wave1d_c": ("wave.py", "Wave1D"),
    "heat2d_ms": ("heat.py", "Heat2D_Multiscale"),
    "poisson_nd": ("poisson.py", "PoissonND"),
    "heat_nd": ("heat.py", "HeatND"),
}


@pytest.mark.parametrize("name", list(PINNACLE))
def test_docstring_cites_pinnacle_and_says_where_ours_differs(name):
    doc = PINNACLE[name].__doc__
    file, cls = SOURCES[name]
    assert f"src/pde/{file}" in doc and f"class ``{cls}``" in doc
    assert "differs from PINNacle" in doc and "point counts" in doc
    assert re.search(r"\b8192\b", doc) and f'get_problem("{name}", n_pde=' in doc
