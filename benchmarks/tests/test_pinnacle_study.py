"""The PINNacle study (benchmarks/pinnacle.py, issue 43): its cells name every problem of the
registry with parameters the problems have, one smoke cell runs end to end into a temporary
folder (record fields, report), and the report renders the secondary quote of PINNacle's best
method, PINNacle's own PINN run here beside ours, the ratios and the pairing by seed."""

from __future__ import annotations

import dataclasses
import json


import cgmpinn_jax as cj
from benchmarks import pinnacle as study
from cgmpinn_jax.problems.pinnacle import PINNACLE


def test_cells_cover_the_registry_with_real_parameters():
    assert set(study.PROBLEMS) == set(PINNACLE)
    for table in (study.PINNACLE_POINTS, study.ACCURATE):
        assert set(table) == set(PINNACLE)
    for p in study.PROBLEMS:
        names = {f.name for f in dataclasses.fields(PINNACLE[p])}
        assert set(study.PINNACLE_POINTS[p]) <= names
        assert set(study.ACCURATE[p][0]) <= names
        params, cfg = study.setup(p, "pinnacle")
        assert (cfg.width, cfg.depth, cfg.stage_names) == (100, 5, ("adam",))
        assert study.budgets(cfg)["adam_steps"] == 20000 and study.budgets(cfg)["adam_lr"] == 1e-3
        params, cfg = study.setup(p, "accurate")
        assert cfg.precision == "float64" and cfg.stage_names == ("adam", "gauss_newton")
        assert study.budgets(cfg)["second_steps"] == study.ACCURATE[p][1]["second_steps"]
        assert study.setup(p, "faithful")[1] == cj.TrainConfig()
    assert study.setup("burgers1d_c", "faithful")[0] == {"reference_source": "pinnacle"}
    assert (
        study.run_key("wave1d_c", "accurate", "pinn", 2, "adam200,second5")
        == "wave1d_c__accurate__pinn__seed2__adam200__second5"
    )


def test_published_numbers_file_is_the_labelled_secondary_quote():
    pub = study.load_published()
    assert pub["status"] == "secondary" and "secondary summary" in pub["label"]
    assert set(pub["problems"]) == set(PINNACLE)
    for row in pub["problems"].values():
        assert row["best"] > 0 and row["best_method"]
        assert "pinn" not in row  # PINNacle's PINN is measured here, not quoted


def test_one_smoke_cell_end_to_end(tmp_path):
    assert (
        study.main(
            [
                "--smoke",
                "--problems",
                "burgers1d_c",
                "--presets",
                "pinnacle",
                "--seeds",
                "0",
                "--out",
                str(tmp_path),
            ]
        )
        == 0
    )
    runs = json.loads((tmp_path / "pinnacle.json").read_text())["runs"]
    assert list(runs) == ["burgers1d_c__pinnacle__pinn__seed0__smoke"]
    r = runs["burgers1d_c__pinnacle__pinn__seed0__smoke"]
    for key in (
        "problem",
        "method",
        "preset",
        "seed",
        "l2re",
        "l2re_spectral",
        "stages",
        "wall_seconds",
        "commit",
        "threads",
        "machine",
        "params",
        "network",
    ):
        assert key in r, key
    assert (r["problem"], r["method"], r["preset"], r["seed"], r["variant"]) == (
        "burgers1d_c",
        "pinn",
        "pinnacle",
        0,
        "smoke",
    )
    assert 0 < r["l2re"] < 10 and 0 < r["l2re_spectral"] < 10 and "burgers1d.dat" in r["against"]
    assert [(s["name"], s["iterations"]) for s in r["stages"]] == [
        ("adam", study.SMOKE["adam_steps"])
    ]
    report = (tmp_path / "pinnacle.md").read_text()
    assert "| burgers1d_c | pinnacle (smoke) | pinn | 0 |" in report
    assert (
        tmp_path / "cache" / "pinnacle" / "burgers1d_c__pinnacle__pinn__seed0__smoke.json"
    ).exists()


def _rec(problem, preset, method, seed, l2re):
    stages = [
        {"name": "adam", "label": "Adam", "status": "COMPLETED", "iterations": 10, "budget": 10}
    ]
    return {
        "problem": problem,
        "preset": preset,
        "method": method,
        "seed": seed,
        "variant": "",
        "l2re": l2re,
        "params": {"n_pde": 10},
        "network": {"width": 8, "depth": 2, "parameters": 105},
        "stages": stages,
        "wall_seconds": 1.0,
        "compile_seconds": 0.5,
        "threads": "one XLA thread",
        "commit": "abc",
        "machine": {"processor": "x86_64", "cpu_count": 2, "backend": "cpu"},
    }


def test_report_renders_the_quote_the_side_by_side_ratios_and_pairs():
    recs = {
        f"{m}{s}": _rec("wave1d_c", "accurate", m, s, e)
        for m, s, e in [
            ("pinn", 0, 1e-3),
            ("pinn", 1, 2e-3),
            ("cgmpinn", 0, 5e-4),
            ("cgmpinn", 1, 4e-3),
        ]
    }
    pub = {
        "label": "PINNacle, as quoted",
        "source": {"citation": "Hao et al.", "table": "Table 3", "url": "u"},
        "problems": {"wave1d_c": {"best": 0.05, "best_method": "NTK"}},
    }
    peer = {
        "wave1d_c": {
            "problem": "wave1d_c",
            "iters": 2000,
            "peer_l2re": 0.1,
            "ours_l2re": 0.2,
            "ratio_ours_peer": 2.0,
            "ours_init": "glorot",
        }
    }
    text = study.render(recs, pub, peer)
    row = next(line for line in text.splitlines() if line.startswith("| wave1d_c | "))
    assert (
        "| 5.00e-02 (NTK) | 1.00e-01 (2000) | 2.00e-01 (2000) | 2.00 |" in row
        and "| 3.0e-02 |" in row
    )
    assert "PINNacle, as quoted" in text and "Not checked against the paper" in text
    other = next(line for line in text.splitlines() if line.startswith("| ns2d_c | "))
    assert "| not found | - | - | - |" in other
    assert "CGMPINN lower on 1 of 2 seeds" in text


def test_the_side_by_side_with_the_most_iterations_at_pinnacles_setting_is_shown(tmp_path):
    rec = {
        "format": "x",
        "study": "peer_pinnacle",
        "runs": {
            "a": {
                "problem": "wave1d_c",
                "iters": 2000,
                "ours_init": "glorot",
                "ours_point_set": "deepxde",
                "peer_l2re": 1,
            },
            "b": {
                "problem": "wave1d_c",
                "iters": 4000,
                "ours_init": "glorot",
                "ours_point_set": "deepxde",
                "peer_l2re": 2,
            },
            "c": {
                "problem": "wave1d_c",
                "iters": 8000,
                "ours_init": "glorot",
                "peer_l2re": 3,
            },  # interior points only
            "d": {"problem": "wave1d_c", "iters": 9000, "peer_l2re": 4},
        },
    }  # no init recorded: the torch default
    (tmp_path / "peer.json").write_text(json.dumps(rec))
    assert study.load_peer(tmp_path / "peer.json")["wave1d_c"]["peer_l2re"] == 2


def test_deepxde_point_set_adds_every_constraint_point_once_to_the_pde_points():
    import jax

    from cgmpinn_jax.problems import validate_problem

    for name, params, extra in (
        ("burgers1d_c", dict(n_pde=50, n_ic=7, n_bc=5), 7 + 2 * 5),
        ("ns2d_c", dict(n_pde=50, n_lid=6, n_wall=9), 6 + 9 + 1),
    ):  # u and v share their points
        prob = study.make_problem(name, "pinnacle", params)
        validate_problem(prob)
        plain = cj.get_problem(name, **params).sample_points(jax.random.key(0))
        pts = jax.jit(prob.sample_points)(jax.random.key(0))
        assert pts["pde"].shape[0] == 50 + extra
        assert (pts["pde"][:50] == plain["pde"]).all()
        assert type(study.make_problem(name, "faithful", params)) is type(cj.get_problem(name))
