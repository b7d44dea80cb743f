"""Mistakes a user can make, each with the exception it must raise and a message naming the
culprit (the class and the method, attribute or option at fault).

Problem mistakes go through ``cj.train`` as a user would call it: they must be caught by
``validate_problem`` before anything is compiled, so every case here is cheap.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import jax
import jax.numpy as jnp
import pytest

import cgmpinn_jax as cj
from cgmpinn_jax.derivatives import partial
from cgmpinn_jax.problems import (
    DerivativeMatch,
    Dirichlet,
    Periodic,
    box_edges,
    edge_pair,
    grid,
    initial_line,
    uniform,
    validate_problem,
)

TINY = cj.TrainConfig(
    stages=(cj.stages.Adam(steps=2), cj.stages.LBFGS(steps=0)), cgm={"k_upd": 1}, width=4, depth=1
)


@dataclasses.dataclass(frozen=True)
class Good(cj.Problem):
    """A valid heat-like problem; each mistake below is a subclass that breaks one thing."""

    n_pde: int = 16

    name = "good"
    coords = ("x", "t")
    lower = (0.0, 0.0)
    upper = (1.0, 1.0)
    terms = ("ic", "bc")

    def exact(self, z):
        return jnp.sin(z[0]) * jnp.exp(-z[1])

    def operator(self, u, z):
        return partial(u, 1)(z) - partial(u, 0, 0)(z)

    def pieces(self):
        return {"ic": (Dirichlet(),), "bc": (Dirichlet(), Dirichlet())}

    def sample_points(self, key):
        k1, k2, k3 = jax.random.split(key, 3)
        return {
            "pde": uniform(k1, self.n_pde, self.lower, self.upper),
            "ic": (initial_line(jax.random.uniform(k2, (8,))),),
            "bc": edge_pair(jax.random.uniform(k3, (8,)), 0.0, 1.0),
        }

    def test_grid(self):
        return grid(self.lower, self.upper, (5, 5))


def bad(cls_name: str, **overrides) -> cj.Problem:
    """An instance of a subclass of Good called ``cls_name`` with some members replaced."""
    return type(cls_name, (Good,), overrides)()


def _sample_with(**changes):
    """A sample_points returning Good's points with some entries replaced (or removed: None)."""

    def sample_points(self, key):
        pts = dict(Good.sample_points(self, key))
        for k, v in changes.items():
            if v is None:
                pts.pop(k)
            else:
                pts[k] = v(pts) if callable(v) else v
        return pts

    return sample_points


def train_tiny(problem, **kw):
    return lambda: cj.train(
        problem, kw.pop("method", "pinn"), kw.pop("config", TINY), quiet=True, **kw
    )


def _missing_method():
    class NoTestGrid(cj.Problem):
        name = "no_test_grid"
        coords = ("x",)
        lower = (0.0,)
        upper = (1.0,)
        terms = ()

        def exact(self, z):
            return z[0]

        def operator(self, u, z):
            return partial(u, 0, 0)(z)

        def pieces(self):
            return {}

        def sample_points(self, key):
            return {"pde": uniform(key, 8, self.lower, self.upper)}

    return NoTestGrid()


def _missing_coords():
    class NoCoords(cj.Problem):
        name = "no_coords"
        lower = (0.0,)
        upper = (1.0,)
        terms = ()

        def exact(self, z):
            return z[0]

        def operator(self, u, z):
            return partial(u, 0, 0)(z)

        def pieces(self):
            return {}

        def sample_points(self, key):
            return {"pde": uniform(key, 8, self.lower, self.upper)}

        def test_grid(self):
            return grid(self.lower, self.upper, (5,))

    return NoCoords()


def _not_decorated():
    class Undecorated(Good):  # a field, but no @dataclasses.dataclass(frozen=True)
        nu: float = 0.1

    return Undecorated()


def _not_frozen():
    @dataclasses.dataclass
    class NotFrozen(Good):
        nu: float = 0.1

    return NotFrozen()


@dataclasses.dataclass(frozen=True)
class WithArrayField(Good):
    coeffs: Any = None


def _save_unimportable(tmp_path):
    """A model of a class defined in a function, loaded without problem=."""

    @dataclasses.dataclass(frozen=True)
    class LocalProblem(Good):
        pass

    res = cj.train(LocalProblem(), "pinn", TINY, quiet=True)
    cj.save_result(res, tmp_path / "run")
    return lambda: cj.load_model(tmp_path / "run")


def _load_renamed_class(tmp_path):
    res = cj.train(Good(), "pinn", TINY, quiet=True)
    cj.save_result(res, tmp_path / "run")
    info_path = tmp_path / "run" / "model.json"
    info = json.loads(info_path.read_text())
    info["problem_class"] = "my_deleted_module:Good"
    info_path.write_text(json.dumps(info))
    return lambda: cj.load_model(tmp_path / "run")


NAN, INF = float("nan"), float("inf")

# (id, () -> callable that must raise, exception type(s), regex the message must match)
CASES = [
    # ---- TrainConfig and train() arguments
    ("config_beta_nan", lambda: lambda: cj.TrainConfig(cgm={"beta": NAN}), ValueError, r"beta"),
    (
        "config_adam_lr_inf",
        lambda: lambda: cj.TrainConfig(stages=(cj.stages.Adam(lr=INF), cj.stages.LBFGS())),
        ValueError,
        r"Adam\.lr",
    ),
    (
        "config_negative_steps",
        lambda: lambda: cj.TrainConfig(stages=(cj.stages.Adam(steps=-5), cj.stages.LBFGS())),
        ValueError,
        r"Adam\.steps",
    ),
    (
        "config_not_a_trainconfig",
        lambda: train_tiny(Good(), config={"adam_steps": 5}),
        (TypeError, ValueError),
        r"config",
    ),
    ("key_string", lambda: train_tiny(Good(), key="0"), (TypeError, ValueError), r"key"),
    ("key_float", lambda: train_tiny(Good(), key=1.5), (TypeError, ValueError), r"key"),
    ("unknown_method", lambda: train_tiny(Good(), method="cgmpin"), ValueError, r"cgmpin"),
    (
        "unknown_problem_name",
        lambda: lambda: cj.get_problem("burgers"),
        ValueError,
        r"'burgers'.*module:ClassName",
    ),
    (
        "unimportable_class_path",
        lambda: lambda: cj.get_problem("no_such_module_xyz:Foo"),
        ValueError,
        r"no_such_module_xyz",
    ),
    ("class_instead_of_instance", lambda: lambda: validate_problem(Good), TypeError, r"Good\(\)"),
    # ---- exact / operator
    (
        "exact_shape_1",
        lambda: train_tiny(bad("ExactShape1", exact=lambda self, z: jnp.sin(z[:1]))),
        ValueError,
        r"ExactShape1\.exact\(z\).*scalar \(shape \(\)\).*got shape \(1,\)",
    ),
    (
        "exact_shape_2",
        lambda: train_tiny(bad("ExactShape2", exact=lambda self, z: jnp.sin(z))),
        ValueError,
        r"ExactShape2\.exact\(z\).*got shape \(2,\)",
    ),
    (
        "exact_written_for_batches",
        lambda: train_tiny(bad("ExactBatched", exact=lambda self, z: jnp.sin(z[:, 0]))),
        ValueError,
        r"ExactBatched\.exact\(z\) raised IndexError",
    ),
    (
        "operator_returns_vector",
        lambda: train_tiny(
            bad(
                "OpVector",
                operator=lambda self, u, z: jnp.stack([partial(u, 1)(z), partial(u, 0, 0)(z)]),
            )
        ),
        ValueError,
        r"OpVector\.operator\(u, z\).*scalar.*got shape \(2,\)",
    ),
    (
        "operator_forgot_z",
        lambda: train_tiny(bad("OpNoCall", operator=lambda self, u, z: partial(u, 1))),
        ValueError,
        r"OpNoCall\.operator\(u, z\)",
    ),
    # ---- pieces() against sample_points()
    (
        "two_pieces_one_array",
        lambda: train_tiny(bad("OneArray", sample_points=_sample_with(bc=lambda p: p["bc"][:1]))),
        ValueError,
        r"OneArray\.sample_points\(key\)\['bc'\].*1 point array.*2 piece",
    ),
    (
        "term_points_not_a_tuple",
        lambda: train_tiny(bad("BareArray", sample_points=_sample_with(ic=lambda p: p["ic"][0]))),
        ValueError,
        r"BareArray\.sample_points\(key\)\['ic'\].*tuple.*\(points,\)",
    ),
    (
        "term_points_missing",
        lambda: train_tiny(bad("NoIC", sample_points=_sample_with(ic=None))),
        ValueError,
        r"NoIC\.sample_points\(key\).*no key 'ic'",
    ),
    (
        "points_for_undeclared_term",
        lambda: train_tiny(bad("ExtraTerm", sample_points=_sample_with(obs=lambda p: (p["pde"],)))),
        ValueError,
        r"ExtraTerm\.sample_points\(key\).*'obs'.*terms",
    ),
    (
        "pieces_term_misspelled",
        lambda: train_tiny(
            bad(
                "Misspelled",
                pieces=lambda self: {"ic": (Dirichlet(),), "BC": (Dirichlet(), Dirichlet())},
            )
        ),
        ValueError,
        r"Misspelled\.pieces\(\).*'BC'.*not declared",
    ),
    (
        "piece_class_not_instance",
        lambda: train_tiny(
            bad(
                "PieceClass",
                pieces=lambda self: {"ic": (Dirichlet,), "bc": (Dirichlet(), Dirichlet())},
            )
        ),
        ValueError,
        r"PieceClass\.pieces\(\)\['ic'\]\[0\].*Dirichlet\(\.\.\.\)",
    ),
    (
        "pieces_not_a_tuple",
        lambda: train_tiny(
            bad(
                "PieceBare",
                pieces=lambda self: {"ic": Dirichlet(), "bc": (Dirichlet(), Dirichlet())},
            )
        ),
        ValueError,
        r"PieceBare\.pieces\(\)\['ic'\].*tuple of pieces",
    ),
    (
        "derivative_axis_out_of_coords",
        lambda: train_tiny(
            bad(
                "AxisTooBig",
                pieces=lambda self: {"ic": (DerivativeMatch(2),), "bc": (Dirichlet(), Dirichlet())},
            )
        ),
        ValueError,
        r"AxisTooBig\.pieces\(\)\['ic'\]\[0\].*coords.*0\.\.1.*got 2",
    ),
    (
        "pde_points_wrong_dim",
        lambda: train_tiny(
            bad("PdeDim", sample_points=_sample_with(pde=lambda p: p["pde"][:, :1]))
        ),
        ValueError,
        r"PdeDim\.sample_points\(key\)\['pde'\].*\(n, 2\).*got shape \(16, 1\)",
    ),
    (
        "bc_points_wrong_dim",
        lambda: train_tiny(
            bad("BcDim", sample_points=_sample_with(bc=lambda p: (p["bc"][0], jnp.ones((8, 3)))))
        ),
        ValueError,
        r"BcDim\.sample_points\(key\)\['bc'\]\[1\].*\(n, 2\).*\(8, 3\)",
    ),
    (
        "periodic_points_not_paired",
        lambda: train_tiny(
            bad(
                "Unpaired",
                pieces=lambda self: {"ic": (Dirichlet(),), "bc": (Periodic(), Periodic((0,)))},
            )
        ),
        ValueError,
        r"Unpaired\.sample_points\(key\)\['bc'\]\[0\].*\(n, 2, 2\).*Periodic",
    ),
    (
        "integer_points",
        lambda: train_tiny(
            bad(
                "IntPoints",
                sample_points=_sample_with(bc=(jnp.zeros((4, 2), jnp.int32), jnp.ones((4, 2)))),
            )
        ),
        ValueError,
        r"IntPoints\.sample_points\(key\)\['bc'\]\[0\].*floating",
    ),
    (
        "empty_points",
        lambda: train_tiny(bad("NoPoints", sample_points=_sample_with(ic=(jnp.zeros((0, 2)),)))),
        ValueError,
        r"NoPoints\.sample_points\(key\)\['ic'\]\[0\].*no points",
    ),
    (
        "sample_points_uses_numpy_on_key",
        lambda: train_tiny(
            bad(
                "NumpyKey",
                sample_points=_sample_with(
                    pde=lambda p: jnp.asarray(__import__("numpy").asarray(p["pde"]))
                ),
            )
        ),
        ValueError,
        r"NumpyKey\.sample_points\(key\) raised",
    ),
    (
        "test_grid_not_a_testgrid",
        lambda: train_tiny(bad("BadGrid", test_grid=lambda self: jnp.zeros((4, 2)))),
        ValueError,
        r"BadGrid\.test_grid\(\).*TestGrid",
    ),
    # ---- class attributes
    (
        "bounds_reversed",
        lambda: train_tiny(bad("Reversed", lower=(0.0, 1.0), upper=(1.0, 0.0))),
        ValueError,
        r"Reversed\.lower/upper.*lower < upper.*\bt\b",
    ),
    (
        "bounds_wrong_length",
        lambda: train_tiny(bad("ShortBounds", lower=(0.0,))),
        ValueError,
        r"ShortBounds\.lower.*tuple of 2 floats",
    ),
    (
        "bound_not_a_tuple",
        lambda: train_tiny(bad("FloatBound", coords=("x",), lower=(0.0), upper=(1.0,))),
        ValueError,
        r"FloatBound\.lower.*\(0\.0,\)",
    ),
    (
        "coords_a_string",
        lambda: train_tiny(bad("CoordStr", coords="xt")),
        ValueError,
        r"CoordStr\.coords.*tuple",
    ),
    (
        "terms_a_string",
        lambda: train_tiny(bad("TermStr", terms="bc")),
        ValueError,
        r"TermStr\.terms.*\('bc',\)",
    ),
    (
        "pde_declared_as_term",
        lambda: train_tiny(bad("PdeTerm", terms=("pde", "ic", "bc"))),
        ValueError,
        r"PdeTerm\.terms.*reserved",
    ),
    (
        "missing_class_attribute",
        lambda: train_tiny(_missing_coords()),
        ValueError,
        r"NoCoords.*'coords'",
    ),
    ("missing_method", lambda: train_tiny(_missing_method()), ValueError, r"NoTestGrid.*test_grid"),
    (
        "dataclass_not_decorated",
        lambda: train_tiny(_not_decorated()),
        ValueError,
        r"Undecorated.*nu.*@dataclasses\.dataclass\(frozen=True\)",
    ),
    ("dataclass_not_frozen", lambda: _not_frozen, TypeError, r"frozen"),
    (
        "unhashable_field",
        lambda: train_tiny(WithArrayField(coeffs=jnp.ones(3))),
        ValueError,
        r"WithArrayField\.coeffs.*hashable",
    ),
    # ---- sweep validates too
    (
        "sweep_bad_problem",
        lambda: (
            lambda: cj.sweep(
                bad("SweepShape", exact=lambda self, z: jnp.sin(z)),
                "pinn",
                TINY,
                seeds=[0],
                quiet=True,
            )
        ),
        ValueError,
        r"SweepShape\.exact\(z\)",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_mistake_raises_clear_error(case):
    _, make, exc, pattern = case
    with pytest.raises(exc, match=pattern):
        make()()


# save/load mistakes need a trained (tiny) model; kept apart for the tmp_path fixture.
SAVE_CASES = [
    (
        "load_class_defined_in_function",
        _save_unimportable,
        ValueError,
        r"<locals>\.LocalProblem.*problem=",
    ),
    (
        "load_class_no_longer_importable",
        _load_renamed_class,
        ValueError,
        r"my_deleted_module.*problem=",
    ),
]


@pytest.mark.parametrize("case", SAVE_CASES, ids=[c[0] for c in SAVE_CASES])
def test_load_mistake_raises_clear_error(case, tmp_path):
    _, make, exc, pattern = case
    with pytest.raises(exc, match=pattern):
        make(tmp_path)()


def test_at_least_twenty_distinct_mistakes():
    assert len(CASES) + len(SAVE_CASES) >= 20
    assert len({c[0] for c in CASES + SAVE_CASES}) == len(CASES) + len(SAVE_CASES)


def test_valid_problems_pass():
    """The base case of every mistake above is valid, and so are problems using each helper
    and piece kind (a validator that rejects everything would pass the table)."""
    assert validate_problem(Good()) is not None

    @dataclasses.dataclass(frozen=True)
    class Square(cj.Problem):
        name = "square"
        coords = ("x", "y")
        lower = (0.0, 0.0)
        upper = (1.0, 2.0)
        terms = ("bc", "neumann")

        def exact(self, z):
            return z[0] * z[1]

        def operator(self, u, z):
            return partial(u, 0, 0)(z) + partial(u, 1, 1)(z)

        def pieces(self):
            return {"bc": (Dirichlet(),) * 4, "neumann": (DerivativeMatch(0), Periodic((1,)))}

        def sample_points(self, key):
            left, right = box_edges(self.lower, self.upper, 6, key=key)[:2]
            return {
                "pde": uniform(key, 10, self.lower, self.upper),
                "bc": box_edges(self.lower, self.upper, 5),
                "neumann": (left, jnp.stack([left, right], axis=1)),
            }

        def test_grid(self):
            return grid(self.lower, self.upper, (4, 4))

    validate_problem(Square())
    batch = Square().sample(jax.random.key(0))
    assert [p.shape for p, _ in batch["bc"]] == [(5, 2)] * 4
    assert batch["neumann"][1][0].shape == (6, 2, 2)
