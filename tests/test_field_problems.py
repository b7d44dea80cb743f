"""Problems as the field poses them (issue 42): sources and targets given directly, reference
data as the truth of the metrics, systems, Neumann / Robin / Condition pieces, geometry in a
problem, saving and loading, and each bad input with the error that names it."""

from __future__ import annotations

import dataclasses
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import cgmpinn_jax as cj
from cgmpinn_jax.derivatives import partial
from cgmpinn_jax.problems import (
    Box,
    Condition,
    Dirichlet,
    Disk,
    Neumann,
    Problem,
    Reference,
    Robin,
    grid,
    uniform,
    validate_problem,
)

TINY = cj.TrainConfig(
    stages=(cj.stages.Adam(steps=300), cj.stages.LBFGS(steps=60)), width=20, depth=2
)
GN = cj.TrainConfig(
    stages=(cj.stages.Adam(steps=300), cj.stages.GaussNewton(steps=40)),
    width=20,
    depth=2,
    precision="float64",
)


@dataclasses.dataclass(frozen=True)
class SinPoisson(Problem):
    """u'' = f with f = -pi^2 sin(pi x) given directly, u(0) = u(1) = 0, no exact(z)."""

    n_pde: int = 100
    name = "sin_poisson"
    coords = ("x",)
    lower = (0.0,)
    upper = (1.0,)
    terms = ("bc",)

    def source(self, z):
        return -(jnp.pi**2) * jnp.sin(jnp.pi * z[0])

    def operator(self, u, z):
        return partial(u, 0, 0)(z)

    def pieces(self):
        return {"bc": (Dirichlet(g=0.0),)}

    def sample_points(self, key):
        return {
            "pde": uniform(key, self.n_pde, self.lower, self.upper),
            "bc": (jnp.array([[0.0], [1.0]]),),
        }

    def reference(self):
        x = np.linspace(0.0, 1.0, 41)[:, None]
        return Reference.from_arrays(
            x, np.sin(np.pi * x), coords=("x",), fields=("u",), source="sin(pi x)"
        )


@dataclasses.dataclass(frozen=True)
class NoTruth(SinPoisson):
    name = "no_truth"

    def reference(self):
        return None

    def test_grid(self):
        return grid(self.lower, self.upper, (11,))


@dataclasses.dataclass(frozen=True)
class FirstOrder(Problem):
    """The same Poisson problem as a system: q - u' = 0, q' = f; exact (u, q) = (sin, pi cos)."""

    name = "first_order"
    coords = ("x",)
    lower = (0.0,)
    upper = (1.0,)
    terms = ("bc",)
    fields = ("u", "q")
    equations = ("flux", "balance")

    def exact(self, z):
        return jnp.stack([jnp.sin(jnp.pi * z[0]), jnp.pi * jnp.cos(jnp.pi * z[0])])

    def operator(self, f, z):
        return f.q(z) - partial(f.u, 0)(z), partial(f["q"], 0)(z)

    def pieces(self):
        return {"bc": (Dirichlet(field="u"),)}

    def sample_points(self, key):
        return {
            "pde": uniform(key, 100, self.lower, self.upper),
            "bc": (jnp.array([[0.0], [1.0]]),),
        }

    def test_grid(self):
        return grid(self.lower, self.upper, (51,))


@dataclasses.dataclass(frozen=True)
class Annulus(Problem):
    """Laplace in the annulus 0.5 < r < 1 (a disk minus a disk): u = log(r) / log(2) + 1 is
    exact; Dirichlet u = 1 outside, and on the hole Neumann n . grad u = -1 / (0.5 log 2)
    (the outward normal of the domain points to the centre) or the Robin form u + n . grad u."""

    robin: bool = False
    name = "annulus"
    coords = ("x", "y")
    terms = ("bc",)
    homogeneous = True
    geometry = Disk((0.0, 0.0), 1.0, name="outer") - Disk((0.0, 0.0), 0.5, name="hole")

    def exact(self, z):
        return jnp.log(jnp.sqrt(jnp.sum(z**2))) / jnp.log(2.0) + 1.0

    def operator(self, u, z):
        return partial(u, 0, 0)(z) + partial(u, 1, 1)(z)

    def pieces(self):
        dn = -1.0 / (0.5 * np.log(2.0))
        hole = (
            Robin(self.geometry, "hole", a=1.0, b=1.0, g=dn)
            if self.robin
            else Neumann(self.geometry, "hole", g=dn)
        )
        return {"bc": (Dirichlet(g=1.0), hole)}

    def sample_points(self, key):
        k1, k2, k3 = jax.random.split(key, 3)
        return {
            "pde": self.geometry.sample_interior(k1, 300),
            "bc": (
                self.geometry.sample_boundary(k2, 100, "outer")[0],
                self.geometry.sample_boundary(k3, 100, "hole")[0],
            ),
        }

    def test_grid(self):
        pts, _ = self.geometry.grid((41, 41))
        return cj.problems.TestGrid(pts, (pts.shape[0],), ())


# ---- data: source and targets given, reference as the truth ------------------------------


def test_source_and_targets_given_train_against_the_reference():
    p = SinPoisson()
    assert not p.has_exact and p.truth().against == "reference sin(pi x)"
    batch = p.sample(jax.random.key(0))
    x = np.asarray(batch["pde"][0][:, 0])
    np.testing.assert_allclose(
        np.asarray(batch["pde"][1]), -(np.pi**2) * np.sin(np.pi * x), rtol=1e-5, atol=1e-5
    )
    np.testing.assert_array_equal(np.asarray(batch["bc"][0][1]), [0.0, 0.0])
    r = cj.train(p, "pinn", TINY, key=0, quiet=True)
    assert r.metrics.against == "reference sin(pi x)"
    # the metric is the one computed by hand against the reference values at its own points
    x_ref = np.linspace(0.0, 1.0, 41)[:, None]
    err = r.predict(x_ref) - np.sin(np.pi * x_ref[:, 0])
    assert r.metrics.rel_e2 == pytest.approx(
        np.linalg.norm(err) / np.linalg.norm(np.sin(np.pi * x_ref[:, 0])), rel=1e-5
    )
    assert r.metrics.rel_e2 < 0.05
    assert r.summary()["against"] == "reference sin(pi x)"


def test_no_exact_and_no_reference_reports_no_metrics():
    cfg = cj.TrainConfig(
        stages=(cj.stages.Adam(steps=20), cj.stages.LBFGS(steps=0)), width=8, depth=1
    )
    r = cj.train(NoTruth(), "pinn", cfg, key=0, quiet=True)
    assert r.metrics.against == "none" and np.isnan(r.metrics.rel_e2)
    assert r.summary()["rel_e2"] is None and "no error metrics" in r.metrics.describe()
    json.dumps(
        {k: r.summary()[k] for k in cj.metrics.ERRORS}, allow_nan=False
    )  # no NaN metric written


# ---- systems ---------------------------------------------------------------------------------


def test_system_residuals_shapes_and_exactness():
    p = FirstOrder()
    validate_problem(p)
    pts = jnp.linspace(0.0, 1.0, 7)[:, None]
    r = p.pde_residuals(p.exact, pts)
    assert r.shape == (7, 2)
    np.testing.assert_allclose(
        np.asarray(r), 0.0, atol=1e-5
    )  # the exact pair solves both equations
    net = cj.nn.mlp(jax.random.key(0), 1, 8, 2, out_dim=2)
    assert net(pts[0]).shape == (2,) and p.pde_residuals(net, pts).shape == (7, 2)


# plain PINN training on a system is slow-only (CI time); CGMPINN and the Gauss-Newton PINN cover it
@pytest.mark.parametrize(
    "method,config",
    [pytest.param("pinn", TINY, marks=pytest.mark.slow), ("cgmpinn", TINY), ("pinn", GN)],
    ids=["pinn", "cgmpinn", "pinn-gauss-newton"],
)
def test_system_trains_every_method_family(method, config):
    untrained = cj.train(FirstOrder(), method, config.with_steps(0, 0), key=0, quiet=True)
    r = cj.train(FirstOrder(), method, config, key=0, quiet=True)
    names = [n for n, _ in r.metrics.per_field]
    assert names == ["u", "q"] and r.metrics.rel_e2 < 0.2 * untrained.metrics.rel_e2
    pred = r.predict(FirstOrder().test_grid().points)
    assert pred.shape == (51, 2)
    x = FirstOrder().test_grid().points[:, 0]
    exact = np.stack([np.sin(np.pi * x), np.pi * np.cos(np.pi * x)], axis=-1)  # in float64
    pooled = np.linalg.norm(pred - exact) / np.linalg.norm(
        exact
    )  # PINNacle's L2RE: all fields and points
    assert r.metrics.rel_e2 == pytest.approx(
        pooled, rel=1e-4
    )  # float32 runs measure against a float32 exact


def test_system_weighting_per_equation_by_default_and_nothing_without_point_weights():
    """CGMPINN on a system: one weight per point and equation by default ("per_equation", mean 1
    in each equation's column), one per point with "norm"; PINN's uniform weights make the
    option a no-op, bit for bit."""
    cfg = cj.TrainConfig(
        stages=(cj.stages.Adam(steps=60), cj.stages.LBFGS(steps=0)),
        cgm={"k_upd": 20},
        width=8,
        depth=1,
    )
    norm = cfg.replace(cgm={"system_weighting": "norm"})
    per = cj.train(FirstOrder(), "cgmpinn", cfg, key=0, quiet=True).history.snapshots
    one = cj.train(FirstOrder(), "cgmpinn", norm, key=0, quiet=True).history.snapshots
    w_per, w_one = np.asarray(per[max(per)]), np.asarray(one[max(one)])
    assert w_per.shape == (100, 2) and w_one.shape == (100,)  # FirstOrder: 100 interior points
    np.testing.assert_allclose(w_per.mean(axis=0), 1.0, rtol=1e-5)
    assert not np.allclose(w_per[:, 0], w_per[:, 1])  # each equation weighted on its own
    a, b = (cj.train(FirstOrder(), "pinn", c, key=0, quiet=True) for c in (cfg, norm))
    assert all(
        np.array_equal(x, y)
        for x, y in zip(jax.tree_util.tree_leaves(a.model), jax.tree_util.tree_leaves(b.model))
    )


def test_gauss_newton_stacks_a_row_per_point_and_equation():
    import equinox as eqx
    from cgmpinn_jax.training._objective import LeastSquares, Trainable

    p, m = FirstOrder(), cj.get_method("pinn")
    net = cj.nn.mlp(jax.random.key(1), 1, 6, 1, out_dim=2)
    params, static = eqx.partition(Trainable(net, None), eqx.is_array)
    batch = p.sample(jax.random.key(0))
    lsq = LeastSquares(p, m, static)
    lam = jnp.ones(2)
    r = lsq.residuals(params, batch, jnp.ones(100), lam)
    assert r.shape == (lsq.n_rows(batch),) == (2 * 100 + 2,)
    term = cj.training._objective.make_term_fn(p, m, static)(params, batch, jnp.ones(100))
    assert float(jnp.sum(r**2)) == pytest.approx(float(jnp.sum(term.terms)), rel=1e-5)


# ---- curved boundaries: Neumann and Robin on a geometry ----------------------------------------


@pytest.mark.parametrize("robin", [False, True], ids=["neumann", "robin"])
def test_neumann_and_robin_pieces_vanish_on_the_exact_solution(robin):
    p = Annulus(robin=robin)
    validate_problem(p)
    batch = p.sample(jax.random.key(0))
    res = p.constraint_residuals(p.exact, batch)["bc"]
    for piece_res in res:
        np.testing.assert_allclose(np.asarray(piece_res), 0.0, atol=1e-4)
    # a wrong field does not: the Neumann residual of u = 1 is the whole target
    ones = p.constraint_residuals(lambda z: jnp.ones(()), batch)["bc"][1]
    assert float(jnp.max(jnp.abs(ones))) > 1.0


def test_annulus_trains_from_a_geometry():
    untrained = cj.train(Annulus(), "pinn", TINY.with_steps(0, 0), key=0, quiet=True)
    r = cj.train(Annulus(), "pinn", TINY, key=0, quiet=True)
    assert r.metrics.rel_e2 < 0.2 * untrained.metrics.rel_e2
    assert Annulus().lower == (-1.0, -1.0) and Annulus().upper == (
        1.0,
        1.0,
    )  # the geometry's bounding box


def test_condition_piece_pins_a_combination():
    f = cj.problems.Fields(lambda z: jnp.stack([z[0], 3.0 * z[0]]), ("u", "v"))
    c = Condition(lambda u, z: u.u(z) + u["v"](z), g=1.0)
    pts = jnp.array([[0.25], [0.5]])
    np.testing.assert_allclose(np.asarray(c.residual(f, pts, c.target(None, pts))), [0.0, 1.0])


# ---- saving and loading ----------------------------------------------------------------------


def test_data_problem_saves_and_reloads_and_a_changed_reference_is_refused(tmp_path):
    r = cj.train(
        cj.get_problem("holes", n_pde=200, n_outer=80, n_holes=80),
        "pinn",
        cj.TrainConfig(
            stages=(cj.stages.Adam(steps=30), cj.stages.LBFGS(steps=0)), width=8, depth=1
        ),
        key=0,
        quiet=True,
    )
    cj.save_result(r, tmp_path)
    info = json.loads((tmp_path / "model.json").read_text())
    assert (
        info["reference"]["source"] == "pinnacle/poisson1_cg_data.dat.gz"
        and len(info["reference"]["sha256"]) == 64
    )
    loaded = cj.load_model(tmp_path)
    pts = loaded.problem.truth().points[:50]
    np.testing.assert_allclose(
        loaded.predict(pts), r.predict(pts), rtol=1e-5, atol=1e-6
    )  # compiled there, eager here
    info["reference"]["sha256"] = "0" * 64
    (tmp_path / "model.json").write_text(json.dumps(info))
    with pytest.raises(ValueError, match="reference data of 'holes' changed"):
        cj.load_model(tmp_path)


def test_a_system_records_its_weighting_and_a_resume_with_another_is_refused(tmp_path):
    """A system's ``cgm.system_weighting`` is written into every saved model and checkpoint,
    at its default too, and read back as written; resuming a "norm" run with the default
    ("per_equation") is refused, naming the option."""
    from cgmpinn_jax.training import recorded_run

    cfg = cj.TrainConfig(
        stages=(cj.stages.Adam(steps=40), cj.stages.LBFGS(steps=0)),
        cgm={"k_upd": 10},
        width=8,
        depth=1,
    )
    norm = cfg.replace(cgm={"system_weighting": "norm"})
    r = cj.train(FirstOrder(), "cgmpinn", cfg, key=0, quiet=True)
    cj.save_result(r, tmp_path / "model")
    info = json.loads((tmp_path / "model" / "model.json").read_text())
    assert (
        info["config"]["cgm"]["system_weighting"] == "per_equation"
        and "config_defaults" not in info
    )
    assert cj.load_model(tmp_path / "model", problem=FirstOrder()).config == cfg
    plain = cj.train(FirstOrder(), "cgmpinn", norm, key=0, quiet=True)
    cj.train(
        FirstOrder(),
        "cgmpinn",
        norm,
        key=0,
        quiet=True,
        checkpoint_dir=tmp_path / "run",
        checkpoint_every=0,
    )
    ckpts = list((tmp_path / "run" / "checkpoints").glob("ckpt-*"))
    assert ckpts
    for ckpt in ckpts:
        identity = json.loads((ckpt / "meta.json").read_text())["identity"]
        assert (
            identity["config"]["cgm"]["system_weighting"] == "norm"
            and "config_defaults" not in identity
        )
    assert recorded_run(tmp_path / "run", problem=FirstOrder())["config"] == norm
    with pytest.raises(cj.CheckpointError, match="cgm.system_weighting: saved 'norm'"):
        cj.train(FirstOrder(), "cgmpinn", cfg, key=0, quiet=True, resume=tmp_path / "run")
    resumed = cj.train(FirstOrder(), "cgmpinn", norm, key=0, quiet=True, resume=tmp_path / "run")
    assert (
        resumed.metrics.rel_e2 == plain.metrics.rel_e2 != r.metrics.rel_e2
    )  # norm's run, not per_equation's


def test_worked_examples_validate_and_state_their_reference():
    for name in ("burgers_data", "cavity", "holes"):
        p = validate_problem(cj.get_problem(name))
        assert not p.has_exact and p.truth().against.startswith("reference ")
    assert cj.get_problem("cavity").truth().values.shape == (10201, 3)


# ---- bad input: each a clear error naming the culprit ------------------------------------------


class ShortDisk(Disk):
    """A user's geometry whose interior sampler returns one point too few."""

    def sample_interior(self, key, n):
        return super().sample_interior(key, n)[:-1]


def _variant(base, **members):
    return dataclasses.dataclass(frozen=True)(type("Bad" + base.__name__, (base,), members))()


@pytest.mark.parametrize(
    "make,pattern",
    [
        (lambda: _variant(SinPoisson, source=Problem.source), r"source\(z\).*no exact"),
        (lambda: _variant(FirstOrder, fields=("u",)), r"exact\(z\).*scalar"),
        (lambda: _variant(FirstOrder, equations=("flux",)), r"operator\(u, z\).*scalar"),
        (lambda: _variant(FirstOrder, fields=("u", "u")), r"fields.*distinct"),
        (
            lambda: _variant(FirstOrder, pieces=lambda self: {"bc": (Dirichlet(),)}),
            r"must name the field",
        ),
        (
            lambda: _variant(FirstOrder, pieces=lambda self: {"bc": (Dirichlet(field="w"),)}),
            r"field='w' is not one",
        ),
        (
            lambda: _variant(
                SinPoisson,
                reference=lambda self: Reference.from_arrays(
                    np.array([[0.5], [1.5]]),
                    np.zeros((2, 1)),
                    coords=("x",),
                    fields=("u",),
                    source="outside",
                ),
            ),
            r"reference\(\).*outside",
        ),
        (
            lambda: _variant(
                SinPoisson,
                reference=lambda self: Reference.from_arrays(
                    np.array([[0.5]]),
                    np.zeros((1, 1)),
                    coords=("x",),
                    fields=("w",),
                    source="wrong field",
                ),
            ),
            r"reference\(\).*fields",
        ),
        (
            lambda: _variant(
                Annulus,
                sample_points=lambda self, key: {
                    "pde": uniform(key, 50, (-1.0, -1.0), (1.0, 1.0)),
                    "bc": (jnp.ones((4, 2)), jnp.ones((4, 2)) * 0.5),
                },
            ),
            r"sample_points\(key\)\['pde'\].*outside the geometry",
        ),
        (
            lambda: _variant(
                Annulus,
                pieces=lambda self: {"bc": (Dirichlet(g=1.0), Neumann(lambda z: jnp.zeros(2)))},
            ),
            r"normal.*not unit",
        ),
        (lambda: _variant(Annulus, geometry=Box((0.0,), (1.0,))), r"geometry.*1-dimensional"),
        (
            lambda: _variant(Annulus, geometry=ShortDisk((0.0, 0.0), 1.0, name="outer")),
            r"sample_interior\(key, n\).*shape \(63, 2\) for n = 64",
        ),
    ],
    ids=[
        "no-source",
        "exact-shape",
        "operator-shape",
        "duplicate-fields",
        "piece-without-field",
        "unknown-field",
        "reference-outside",
        "reference-fields",
        "points-outside",
        "zero-normal",
        "geometry-dim",
        "sampler-count",
    ],
)
def test_bad_input_raises_a_clear_error(make, pattern):
    with pytest.raises(ValueError, match=pattern):
        validate_problem(make())


def test_missing_reference_file_is_named():
    bad = _variant(
        SinPoisson,
        reference=lambda self: cj.problems.load_reference(
            "/nonexistent/ref.dat", coords=("x",), fields=("u",)
        ),
    )
    with pytest.raises((ValueError, FileNotFoundError), match="ref.dat"):
        validate_problem(bad)


def test_worked_examples_stay_short():
    """Each worked example is a short class (docs/problems-from-data.md shows it with public names
    only; tests/test_docs_prose.py checks that the page's classes match these)."""
    import inspect

    from cgmpinn_jax.problems import worked

    for cls in worked.WORKED.values():
        assert len(inspect.getsource(cls).splitlines()) <= 90, cls.__name__


# lbPINN and gPINN change the loss on a system's residuals (gPINN slow-only for CI time); the other
# four change the network or the weighting only (slow: python -m pytest -m slow)
@pytest.mark.parametrize(
    "method",
    ["lbpinn"]
    + [
        pytest.param(m, marks=pytest.mark.slow)
        for m in ("gpinn", "lnn_pinn", "star_pinn", "gmmpinn", "clpinn")
    ],
)
def test_every_method_runs_on_a_system(method):
    cfg = cj.TrainConfig(
        stages=(cj.stages.Adam(steps=60), cj.stages.LBFGS(steps=5)),
        width=8,
        depth=2,
        cgm={"k_upd": 20},
    )
    r = cj.train(FirstOrder(), method, cfg, key=0, quiet=True)
    assert [n for n, _ in r.metrics.per_field] == ["u", "q"] and np.isfinite(r.metrics.rel_e2)


def test_a_sweep_over_a_system_and_a_geometry_stays_vmapped():
    cfg = cj.TrainConfig(
        stages=(cj.stages.Adam(steps=40), cj.stages.LBFGS(steps=0)),
        width=8,
        depth=1,
        cgm={"k_upd": 20},
    )
    for problem in (FirstOrder(), Annulus()):
        res = cj.sweep(problem, "cgmpinn", cfg, seeds=[0, 1], quiet=True)
        rel = np.asarray(res.metrics["rel_e2"])
        assert rel.shape == (2,) and np.all(np.isfinite(rel)) and rel[0] != rel[1]


def test_command_line_lists_and_runs_a_worked_example(tmp_path, capsys):
    from cgmpinn_jax.cli import main

    assert main(["list"]) == 0
    listed = capsys.readouterr().out
    assert all(f"  {name} " in listed for name in ("burgers_data", "cavity", "holes"))
    out = tmp_path / "holes"
    assert (
        main(
            [
                "run",
                "holes",
                "--adam-steps",
                "20",
                "--second-steps",
                "0",
                "--width",
                "8",
                "--depth",
                "1",
                "--quiet",
                "--no-plots",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "errors against the reference pinnacle/poisson1_cg_data.dat.gz" in printed
    metrics = json.loads((out / "metrics.json").read_text())
    assert (
        metrics["against"] == "reference pinnacle/poisson1_cg_data.dat.gz" and metrics["rel_e2"] > 0
    )


def test_cavity_refinement_adds_points_under_the_lid_and_keeps_the_default():
    key = jax.random.key(3)
    base = cj.get_problem("cavity", n_pde=200)
    plain, refined = (
        base.sample_points(key),
        dataclasses.replace(base, n_refine=101).sample_points(key),
    )
    np.testing.assert_array_equal(
        np.asarray(refined["pde"][:200]), np.asarray(plain["pde"])
    )  # uniform part unchanged
    for a, b in zip(plain["bc"], refined["bc"]):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    extra = np.asarray(refined["pde"][200:])
    assert extra.shape == (101, 2) and (extra >= 0).all() and (extra <= 1).all()
    strip, corner = extra[:50], extra[50:]
    assert (strip[:, 1] >= 0.9).all()
    gap = np.minimum(corner[:, 0], 1 - corner[:, 0])
    assert (gap <= 0.15).all() and (1 - corner[:, 1] <= 0.15).all()
    assert (corner[:, 0] < 0.5).sum() in (25, 26)  # both corners, alternately
    assert np.median(gap) < 0.15 / 3  # denser toward the corner: median of 0.15 U^2 is 0.0375
    validate_problem(dataclasses.replace(base, n_refine=101))
    with pytest.raises(ValueError, match="LidDrivenCavity: n_refine must be >= 0"):
        dataclasses.replace(base, n_refine=-1).sample_points(key)


def test_burgers_front_refinement_adds_points_around_the_front_and_keeps_the_default():
    key = jax.random.key(5)
    base = cj.get_problem("burgers_data", n_pde=300)
    plain, refined = (
        base.sample_points(key),
        dataclasses.replace(base, n_refine=401).sample_points(key),
    )
    np.testing.assert_array_equal(
        np.asarray(refined["pde"][:300]), np.asarray(plain["pde"])
    )  # uniform part unchanged
    for term in ("ic", "bc"):
        for a, b in zip(plain[term], refined[term]):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    extra = np.asarray(refined["pde"][300:])
    assert extra.shape == (401, 2)
    assert (
        (np.abs(extra[:, 0]) <= 0.1).all()
        and (extra[:, 1] >= 0.25).all()
        and (extra[:, 1] <= 1).all()
    )
    assert (extra[:, 0] < 0).sum() == 201  # both sides, alternately (x = 0 has measure zero)
    assert (
        np.median(np.abs(extra[:, 0])) < 0.1 / 3
    )  # denser toward x = 0: median of 0.1 U^2 is 0.025
    validate_problem(dataclasses.replace(base, n_refine=401))
    with pytest.raises(ValueError, match="BurgersFromData: n_refine must be >= 0"):
        dataclasses.replace(base, n_refine=-1).sample_points(key)
