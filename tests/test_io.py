"""Saving and loading trained models, for registry problems and a user's own problem."""

from __future__ import annotations

import dataclasses
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import cgmpinn_jax as cj
from cgmpinn_jax.derivatives import partial
from cgmpinn_jax.io import load_problem
from cgmpinn_jax.problems import Dirichlet, box_edges, grid, uniform

TINY = cj.TrainConfig(
    stages=(cj.stages.Adam(steps=3), cj.stages.LBFGS(steps=0)), cgm={"k_upd": 1}, width=6, depth=2
)


@dataclasses.dataclass(frozen=True)
class MyPoisson2D(cj.Problem):
    """A user's problem, defined in this (importable) test module, with non-default fields of
    several kinds: a float, an int, a tuple and an infinite float."""

    k: float = 1.0
    n_pde: int = 32
    shift: tuple = (0.0, 0.0)
    cap: float = float("inf")

    name = "my_poisson2d"
    coords = ("x", "y")
    lower = (0.0, 0.0)
    upper = (1.0, 1.0)
    terms = ("bc",)

    def exact(self, z):
        return jnp.minimum(
            jnp.sin(self.k * (z[0] - self.shift[0])) * jnp.cos(z[1] - self.shift[1]), self.cap
        )

    def operator(self, u, z):
        return partial(u, 0, 0)(z) + partial(u, 1, 1)(z)

    def pieces(self):
        return {"bc": (Dirichlet(),) * 4}

    def sample_points(self, key):
        return {
            "pde": uniform(key, self.n_pde, self.lower, self.upper),
            "bc": box_edges(self.lower, self.upper, 4),
        }

    def test_grid(self):
        return grid(self.lower, self.upper, (7, 7))


def _same_model(a, b):
    la, lb = jax.tree.leaves(a), jax.tree.leaves(b)
    assert len(la) == len(lb)
    for x, y in zip(la, lb):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def _predict(model, problem):
    return np.asarray(jax.vmap(model)(jnp.asarray(problem.test_grid().points, jnp.float32)))


@pytest.fixture(scope="module")
def saved_user_run(tmp_path_factory):
    problem = MyPoisson2D(k=2.5, n_pde=24, shift=(0.25, -0.5), cap=float("inf"))
    res = cj.train(problem, "pinn", TINY, key=3, quiet=True)
    folder = tmp_path_factory.mktemp("io") / "user"
    cj.save_result(res, folder)
    return res, folder


def test_user_problem_round_trips(saved_user_run):
    res, folder = saved_user_run
    info = json.loads((folder / "model.json").read_text())
    assert info["problem_class"] == f"{MyPoisson2D.__module__}:MyPoisson2D"
    assert info["problem_params"]["k"] == 2.5 and info["problem_params_exact"] is True
    rebuilt = load_problem(folder)
    assert rebuilt == res.problem and type(rebuilt) is MyPoisson2D
    assert rebuilt.shift == (0.25, -0.5) and rebuilt.cap == float(
        "inf"
    )  # a tuple and inf survive JSON
    model, info2 = cj.load_model(folder)
    _same_model(model, res.model)
    np.testing.assert_array_equal(_predict(model, rebuilt), res.predict(rebuilt.test_grid().points))
    assert info2["method"] == "pinn"


def test_explicit_problem(saved_user_run):
    res, folder = saved_user_run
    for given in (res.problem, MyPoisson2D, f"{MyPoisson2D.__module__}:MyPoisson2D"):
        model, _ = cj.load_model(folder, problem=given)
        _same_model(model, res.model)
    assert (
        load_problem(folder, problem=MyPoisson2D) == res.problem
    )  # a class gets the saved field values
    with pytest.raises(ValueError, match=r"trained on the problem 'my_poisson2d'.*'heat'"):
        cj.load_model(folder, problem="heat")
    with pytest.raises(TypeError, match=r"problem must be"):
        cj.load_model(folder, problem=3)


def test_explicit_problem_rescues_an_unimportable_class(saved_user_run, tmp_path):
    res, folder = saved_user_run
    moved = tmp_path / "moved"
    moved.mkdir()
    for name in ("model.eqx", "metrics.json"):
        (moved / name).write_bytes((folder / name).read_bytes())
    info = json.loads((folder / "model.json").read_text())
    info["problem_class"] = "a_module_that_is_gone:MyPoisson2D"
    (moved / "model.json").write_text(json.dumps(info))
    with pytest.raises(ValueError, match=r"a_module_that_is_gone.*problem="):
        cj.load_model(moved)
    model, _ = cj.load_model(moved, problem=res.problem)
    _same_model(model, res.model)


def test_registry_problem_and_old_format(tmp_path):
    """A registry problem round-trips; a model.json written before class paths were
    recorded (name and parameters only) still loads."""
    res = cj.train("poisson1d", "pinn", TINY, key=0, quiet=True)
    cj.save_result(res, tmp_path / "new")
    info = json.loads((tmp_path / "new" / "model.json").read_text())
    assert info["problem_class"] == "cgmpinn_jax.problems.paper.poisson1d:Poisson1D"
    model, _ = cj.load_model(tmp_path / "new")
    _same_model(model, res.model)
    old = tmp_path / "old"
    old.mkdir()
    (old / "model.eqx").write_bytes((tmp_path / "new" / "model.eqx").read_bytes())
    for k in ("problem_class", "problem_coords", "problem_params_exact"):
        info.pop(k)
    (old / "model.json").write_text(json.dumps(info))
    model, _ = cj.load_model(old)
    _same_model(model, res.model)
    info["problem"] = "my_unregistered"
    (old / "model.json").write_text(json.dumps(info))
    with pytest.raises(ValueError, match=r"'my_unregistered'.*not in the registry.*problem="):
        cj.load_model(old)


def test_built_in_problems_saved_under_an_old_module_path(tmp_path):
    """A built-in problem recorded under a module path it has since moved from (problems/heat.py
    is now problems/paper/heat.py, problems/pinnacle_nd.py problems/pinnacle/nd.py) is rebuilt
    by its registry name."""
    from cgmpinn_jax.io import _problem_record, _rebuild_problem

    for name, old in (
        ("heat", "cgmpinn_jax.problems.heat:Heat"),
        ("heat_nd", "cgmpinn_jax.problems.pinnacle_nd:HeatND"),
    ):
        problem = cj.get_problem(name)
        info = dict(_problem_record(problem), problem_class=old)
        assert _rebuild_problem(info, None, tmp_path) == problem
    info = dict(
        _problem_record(cj.get_problem("heat")),
        problem_class="cgmpinn_jax.gone:Heat",
        problem="nope",
    )
    with pytest.raises(ValueError, match="cannot rebuild the problem 'nope'"):
        _rebuild_problem(info, None, tmp_path)


def test_fields_that_json_cannot_hold_need_problem(tmp_path):
    @dataclasses.dataclass(frozen=True)
    class WithBytes(MyPoisson2D):
        tag: bytes = b"\x00"

    from cgmpinn_jax.io import _problem_record

    rec = _problem_record(WithBytes())
    assert rec["problem_params_exact"] is False
    assert _problem_record(MyPoisson2D())["problem_params_exact"] is True


def test_not_a_saved_run(tmp_path):
    with pytest.raises(FileNotFoundError, match="not a saved run"):
        cj.load_model(tmp_path)
