"""benchmarks/paper_tables.py and its modules (paper_runs, tables_lib, tables_render,
paper_figures): tables from hand-written cached runs (medians, [min-max], paper numbers, verdict
counts) and the cache key."""

import importlib.util
import json
import math
from pathlib import Path

import pytest

from benchmarks import paper_figures as pf
from benchmarks import paper_runs as pr
from benchmarks import paper_tables as pt
from benchmarks import tables_lib as tl
from benchmarks import tables_render as tr

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"

PAPER = json.loads((BENCH.parent / "cgmpinn_jax" / "data" / "paper_tables.json").read_text())


def run_json(
    problem, variant, method, seed, rel_e2, *, e_inf, wall, scale=1.0, key=None, lbfgs="COMPLETED"
):
    """A cached run file's content, written out field by field (the documented format)."""
    return {
        "format": "cgmpinn-jax/paper-run/1",
        "key": key or f"{problem}-{variant}-{seed}-{scale}",
        "spec": {
            "problem": problem,
            "problem_params": {},
            "method": method,
            "variant": variant,
            "config": {"adam_steps": 5000},
            "seed": seed,
            "budget_scale": scale,
            "version": "0.1.0",
            "x64": False,
        },
        "label": variant,
        "seed": seed,
        "resolved": {"adam_steps": 5000, "lbfgs_steps": 10000, "k_upd": 200, "relobralo": "none"},
        "metrics": {"e2": rel_e2, "rel_e2": rel_e2, "e_inf": e_inf, "l2": rel_e2},
        "e_loss": 1e-5,
        "statuses": {"adam": "COMPLETED", "lbfgs": lbfgs},
        "compile_seconds": 1.0,
        "run_seconds": wall - 1.0,
        "wall_seconds": wall,
        "timing": "single",
        "timing_note": "single cj.train call",
        "sweep": None,
        "evals_per_lbfgs_iteration": 1.5,
        "loss_curve": {
            "every": 10,
            "k": [1, 11, 15],
            "raw_total": [10.0, 1.0, None],
            "objective": [10.0, 1.0, None],
        },
        "prediction": None,
        "machine": {
            "platform": "Linux-test",
            "cpu_count": 2,
            "cpus_available": 2,
            "jax": "0.0",
            "backend": "cpu",
            "devices": ["cpu:cpu"],
        },
        "command": "python -m benchmarks.paper_tables",
        "finished_at": "2025-01-01T00:00:00",
    }


@pytest.fixture
def runs_dir(tmp_path):
    d = tmp_path / "runs"
    d.mkdir()
    files = [
        run_json("poisson1d", "cgmpinn", "cgmpinn", 0, 1e-4, e_inf=2e-4, wall=100.0),
        run_json("poisson1d", "cgmpinn", "cgmpinn", 1, 3e-3, e_inf=6e-3, wall=120.0),
        run_json(
            "poisson1d", "cgmpinn", "cgmpinn", 2, "nan", e_inf="nan", wall=90.0, lbfgs="NONFINITE"
        ),
        run_json("poisson1d", "pinn", "pinn", 0, 1e-3, e_inf=1e-3, wall=50.0),
        run_json("poisson1d", "pinn", "pinn", 1, 1e-3, e_inf=3e-3, wall=60.0),
        run_json("poisson1d", "pinn", "pinn", 2, 2e-3, e_inf=5e-3, wall=70.0),
        # a scaled duplicate of pinn seed 0: the full-budget run must win the selection
        run_json("poisson1d", "pinn", "pinn", 0, 0.5, e_inf=1.0, wall=1.0, scale=0.1),
        # only scaled runs for heat: the cell must be marked
        run_json("heat", "pinn", "pinn", 0, 0.2, e_inf=0.3, wall=2.0, scale=0.1),
        run_json("heat", "pinn", "pinn", 1, 0.4, e_inf=0.5, wall=4.0, scale=0.1),
    ]
    for i, f in enumerate(files):
        (d / f"run{i}.json").write_text(json.dumps(f))
    (d / "other.json").write_text(json.dumps({"format": "something-else"}))
    (d / "broken.json").write_text("{not json")
    return d


def test_load_and_select(runs_dir):
    runs = tl.load_runs(runs_dir)
    assert len(runs) == 9  # the foreign and the broken file are skipped
    sel = tl.select_runs(runs)
    pinn = sel[("poisson1d", "pinn")]
    assert [r["seed"] for r in pinn] == [0, 1, 2]
    assert pinn[0]["spec"]["budget_scale"] == 1.0
    # an expected key beats the budget preference
    sel2 = tl.select_runs(runs, expected_keys={"poisson1d-pinn-0-0.1"})
    assert sel2[("poisson1d", "pinn")][0]["spec"]["budget_scale"] == 0.1


def test_methods_table_cells(runs_dir):
    table = tl.build_methods_table(tl.load_runs(runs_dir), PAPER)
    assert list(table) == list(tl.PROBLEM_ORDER)
    rows = {r["variant"]: r for r in table["poisson1d"]["rows"]}
    assert len(rows) == 9  # eight methods + CGMPINN (ReLoBRaLo off)
    cg, pinn = rows["cgmpinn"]["ours"], rows["pinn"]["ours"]
    # NaN ranks worst: sorted [1e-4, 3e-3, nan] -> median 3e-3
    assert cg["rel_e2"]["median"] == pytest.approx(3e-3)
    assert cg["rel_e2"]["min"] == pytest.approx(1e-4) and math.isinf(cg["rel_e2"]["max"])
    assert cg["rel_e2"]["n_nonfinite"] == 1 and cg["n_seeds"] == 3
    assert cg["stage_stops"] == {"L-BFGS NONFINITE": 1}
    assert pinn["rel_e2"]["median"] == pytest.approx(1e-3)
    assert (pinn["rel_e2"]["min"], pinn["rel_e2"]["max"]) == pytest.approx((1e-3, 2e-3))
    assert pinn["e_inf"]["median"] == pytest.approx(3e-3)
    assert pinn["wall_seconds"]["median"] == pytest.approx(60.0)
    assert pinn["run_seconds"]["median"] == pytest.approx(59.0)
    assert pinn["budget_scales"] == [1.0]
    # paper numbers: methods table, and the ablation table for GMMPINN
    assert rows["pinn"]["paper"]["rel_e2"] == pytest.approx(8.15e-3)
    assert rows["cgmpinn"]["paper"]["rel_e2"] == pytest.approx(1.81e-4)
    assert rows["gmmpinn"]["paper"]["rel_e2"] == pytest.approx(2.01)
    assert rows["cgmpinn_relobralo_off"]["paper"] is None
    assert rows["cgmpinn"]["authors_rerun"]["median"] == pytest.approx(1.05e-3)
    assert rows["lbpinn"]["ours"] is None
    heat = {r["variant"]: r for r in table["heat"]["rows"]}["pinn"]["ours"]
    assert heat["budget_scales"] == [0.1] and heat["rel_e2"]["median"] == pytest.approx(0.3)


def test_verdicts(runs_dir):
    runs = tl.load_runs(runs_dir)
    v = tl.verdict(runs, "poisson1d", "cgmpinn", "pinn")
    # seed 0: 1e-4 < 1e-3 wins; seed 1: 3e-3 > 1e-3; seed 2: NaN loses
    assert (v["wins"], v["n"], v["seeds_won"]) == (1, 3, [0])
    assert (
        tl.verdict(runs, "poisson1d", "pinn", "cgmpinn")["wins"] == 2
    )  # a NaN opponent counts as beaten
    assert tl.verdict(runs, "heat")["n"] == 0
    # docs/reference-code.md §13: each CGMPINN variant of the authors' code beats PINN in 3 of 5
    # seeds
    for a in ("cgmpinn", "cgmpinn_relobralo_off"):
        av = tl.authors_verdict("poisson1d", a, "pinn")
        assert (av["wins"], av["n"]) == (3, 5)
    for d in tl.AUTHORS_RERUN["poisson1d"].values():
        assert tl.stats(d["rel_e2"])["median"] == pytest.approx(d["median"])


def test_markdown(runs_dir):
    runs = tl.load_runs(runs_dir)
    header = {
        "generated": "now",
        "build_command": "python -m benchmarks.paper_tables --build-only",
        "reproduce_command": "python -m benchmarks.paper_tables",
        "machines": tr.machines_of(runs),
        "versions": ["0.1.0"],
    }
    md = tr.render_markdown("methods", tl.build_methods_table(runs, PAPER), header)
    assert (
        "| PINN | 1.00e-3 [1.00e-3–2.00e-3] | 8.15e-3 | "
        "9.50e-4 (8e-4, 9e-4, 1.07e-2, 1.74e-3, 9.5e-4) | 3.00e-3 | 9.19e-3 | 1.00e-5 | 1.90e-3 | "
        "59.0 + 1.0 (2 CPU cores) | 1018 | 3 |  |"
    ) in md
    assert "| CGMPINN | 3.00e-3 [1.00e-4–inf] | 1.81e-4 | 1.05e-3" in md
    assert "CGMPINN beats PINN in **1 of 3** seeds" in md
    assert "3.00e-1 [2.00e-1–4.00e-1] (scale 0.1)" in md  # heat PINN, scaled
    assert "Linux-test, 2 CPUs" in md and "python -m benchmarks.paper_tables --build-only" in md
    md_opt = tr.render_markdown("optimizers", tl.build_optimizers_table(runs, PAPER), header)
    assert "| Adam→L-BFGS | 3.00e-3 [1.00e-4–inf] | 1.81e-4 |" in md_opt  # reuses the cgmpinn runs
    assert "| Adam | not run | 1.57e+0 |" in md_opt
    md_abl = tr.render_markdown("ablation", tl.build_ablation_table(runs, PAPER), header)
    assert "| CLPINN | not run | 3.04e-3 |" in md_abl


def test_median_curve():
    a, b = tl.fake_run("heat", "pinn", 0, 1.0), tl.fake_run("heat", "pinn", 1, 1.0)
    b["loss_curve"] = {
        "every": 10,
        "k": [1, 11, 21],
        "raw_total": [3.0, None, 0.5],
        "objective": [3.0, None, 0.5],
    }
    k, med = pf.median_curve([a, b])
    assert k.tolist() == [1, 11, 21]
    assert med.tolist() == pytest.approx([2.0, 0.1, 0.5])
    # three runs: a step that only one of them reached gets no median
    c = tl.fake_run("heat", "pinn", 2, 1.0)
    c["loss_curve"] = {"every": 10, "k": [1, 11], "raw_total": [1.0, 0.2], "objective": [1.0, 0.2]}
    k, med = pf.median_curve([a, b, c])
    assert k.tolist() == [1, 11, 21]
    assert med[:2].tolist() == pytest.approx([1.0, 0.15]) and math.isnan(med[2])


def test_downsample_curve():
    c = pr.downsample_curve(range(1, 26), [float(i) for i in range(25)], every=10)
    assert c["k"] == [1, 11, 21, 25] and c["s0"] == [0.0, 10.0, 20.0, 24.0]
    assert pr.downsample_curve([1, 2], [1.23456789, float("nan")], every=10)["s0"] == [
        1.23457,
        None,
    ]


def test_cache_key_and_variant_configs():
    s = pr.run_spec("poisson1d", "cgmpinn", 0, 1.0)
    assert tl.cache_key(s) == tl.cache_key(pr.run_spec("poisson1d", "cgmpinn", 0, 1.0))
    assert tl.cache_key(s) == tl.cache_key(
        json.loads(json.dumps(s))
    )  # stable through a JSON round trip
    others = [
        pr.run_spec("poisson1d", "cgmpinn", 1, 1.0),
        pr.run_spec("poisson1d", "cgmpinn", 0, 0.5),
        pr.run_spec("poisson1d", "cgmpinn_relobralo_off", 0, 1.0),
        pr.run_spec("poisson1d", "pinn", 0, 1.0),
        pr.run_spec("poisson2d", "cgmpinn", 0, 1.0),
        pr.run_spec("poisson1d", "cgmpinn", 0, 1.0, problem_params={"n_pde": 100}),
        {**s, "config": {**s["config"], "adam_lr": 2e-3}},
        {**s, "version": "9.9.9"},
    ]
    keys = {tl.cache_key(o) for o in others}
    assert len(keys) == len(others) and tl.cache_key(s) not in keys
    assert (
        pr.run_path(s).name.startswith("poisson1d__cgmpinn__seed0__")
        and "scale" not in pr.run_path(s).name
    )
    assert "__scale0.5__" in pr.run_path(others[1]).name

    def cfg(p, v, sc=1.0):
        return pr.variant_config(pr._cj().get_problem(p), v, sc)

    c = cfg("poisson1d", "cgmpinn")
    assert (c.stages[0].steps, c.stages[1].steps, c.balancing.stages) == (5000, 10000, None)
    assert c.stage_names == ("adam", "lbfgs")
    assert cfg("poisson1d", "cgmpinn_relobralo_off").balancing.stages == "none"
    a = cfg("fisher_kpp", "cgmpinn_adam")
    assert (a.stages[0].steps, a.stages[1].steps) == (20000, 0)
    lb = cfg("damped_wave", "cgmpinn_lbfgs")
    assert (lb.stages[0].steps, lb.stages[1].steps, lb.balancing.stages, lb.stage("lbfgs").lr) == (
        0,
        15000,
        "none",
        0.1,
    )
    assert cfg("heat", "cgmpinn_lbfgs").stage("lbfgs").lr == 1.0  # 0.1 only for the damped wave
    sc = cfg("poisson1d", "pinn", 0.002)
    assert (sc.stages[0].steps, sc.stages[1].steps) == (10, 20)
    assert pr.planned_variants(["optimizers"], None) == ["cgmpinn", "cgmpinn_adam", "cgmpinn_lbfgs"]
    assert pr.planned_variants(["methods", "ablation"], ["pinn", "cgmpinn"]) == [
        "cgmpinn",
        "pinn",
        "cgmpinn_relobralo_off",
    ]
    # the spec holds the config as TrainConfig.to_dict() reads back, and the key hashes it
    base = pr._cj().TrainConfig()
    assert pr._cj().TrainConfig.from_dict(pr._config_for_key(base)) == base
    other = base.replace(balancing={"second_stage_apply": "refresh"})
    assert pr._config_for_key(other)["balancing"]["second_stage_apply"] == "refresh"


def test_variants_flag_selects_exact_ids(capsys, tmp_path):
    iso = ["--runs-dir", str(tmp_path), "--results-dir", str(tmp_path / "results")]
    pt.main(["--variants", "cgmpinn", "--problems", "poisson1d", "--seeds", "0", "--list", *iso])
    out = capsys.readouterr().out
    assert "poisson1d            cgmpinn " in out and "relobralo_off" not in out
    with pytest.raises(SystemExit, match="unknown variant"):
        pt.main(["--variants", "nope", "--list", *iso])


def test_build_outputs(runs_dir, tmp_path):
    # CGMPINN runs with predictions on the test grid: a 1-D (200 points) and a 2-D (100 x 100)
    # figure
    for problem, n in (("poisson1d", 200), ("heat", 10000)):
        # poisson1d: replaces the seed-0 run (same numbers, newer), so the verdict is unchanged
        r = run_json(
            problem, "cgmpinn", "cgmpinn", 0, 1e-4, e_inf=2e-4, wall=100.0, key=f"{problem}-pred"
        )
        r["finished_at"] = "2025-06-01T00:00:00"
        r["prediction"] = {"shape": [n] if n == 200 else [100, 100], "values": [0.5] * n}
        (runs_dir / f"{problem}_pred.json").write_text(json.dumps(r))
    has_mpl = importlib.util.find_spec("matplotlib") is not None  # an optional extra
    kw = dict(
        results=tmp_path / "results",
        figures_dir=tmp_path / "figures",
        tables_json=tmp_path / "build" / "tables.json",
        figures=has_mpl,
        quiet=True,
    )
    out = pt.build_outputs(runs_dir=runs_dir, **kw)
    for name in ("methods.md", "optimizers.md", "ablation.md", "paper_runs.json"):
        assert (tmp_path / "results" / name).exists()
    doc = json.loads((tmp_path / "build" / "tables.json").read_text())
    assert doc["header"]["n_runs_cached"] == 11 and doc["header"]["n_runs_used"] == 9
    v = doc["tables"]["methods"]["poisson1d"]["verdicts"][0]
    assert (v["wins"], v["n"]) == (1, 3)
    per_run = ("poisson1d_rel_e2.png", "heat_rel_e2.png")
    if has_mpl:
        assert {p.name for p in out["figures"]} == {
            "poisson1d_loss.png",
            "heat_loss.png",
            "poisson1d_cgmpinn.png",
            "heat_cgmpinn.png",
            *per_run,
        }

    # the compact record: every valid run file, one line each, without loss curves and predictions
    record = tmp_path / "results" / "paper_runs.json"
    runs = json.loads(record.read_text())["runs"]
    assert len(runs) == 11 and len(record.read_text().splitlines()) == 11 + 2
    assert sorted(runs) == sorted(
        p.stem for p in runs_dir.glob("*.json") if p.stem not in ("other", "broken")
    )
    assert not any("loss_curve" in r or "prediction" in r for r in runs.values())

    # without the cache (a fresh checkout): the same tables from the record, only the per-run
    # figures
    md = (tmp_path / "results" / "methods.md").read_text()
    out2 = pt.build_outputs(runs_dir=tmp_path / "no-cache", **kw)

    def strip(t):
        return [ln for ln in t.splitlines() if not ln.startswith(("Generated", "Tables built"))]

    assert strip((tmp_path / "results" / "methods.md").read_text()) == strip(md)
    if has_mpl:
        assert {p.name for p in out2["figures"]} == set(per_run)


def test_recorded_run_counts_as_done(tmp_path):
    """A run in the compact record is not trained again, although no cache file exists."""
    spec = pr.run_spec("heat", "pinn", 1, 1.0)
    rec = tl.fake_run("heat", "pinn", 1, 1e-3)
    rec.update(key=tl.cache_key(spec), spec=spec)
    record = tmp_path / "results" / "paper_runs.json"
    pr.study(tmp_path / "cache", record).save(pr.run_key(spec), rec)
    (tmp_path / "cache" / f"{pr.run_key(spec)}.json").unlink()  # only the record is left
    todo = pr.plan(["heat"], ["pinn"], [0, 1], 1.0, tmp_path / "cache", record)
    assert todo == [("heat", "pinn", [0], [1])]
    assert [r["seed"] for r in pr.all_runs(tmp_path / "cache", record)] == [1]
    # a run recorded under another key (older package version, other TrainConfig fields) is done
    # too, unless exact keys are asked for (--retrain-stale); another budget scale or dtype is not
    spec2 = {
        **pr.run_spec("heat", "pinn", 0, 1.0),
        "version": "0.0.1",
        "config": {"renamed_field": 1},
    }
    rec2 = tl.fake_run("heat", "pinn", 0, 2e-3)
    rec2.update(key=tl.cache_key(spec2), spec=spec2)
    pr.study(tmp_path / "cache", record).save(pr.run_key(spec2), rec2)
    assert pr.plan(["heat"], ["pinn"], [0, 1], 1.0, tmp_path / "cache", record) == [
        ("heat", "pinn", [], [0, 1])
    ]
    assert pr.plan(
        ["heat"], ["pinn"], [0, 1], 1.0, tmp_path / "cache", record, exact_keys=True
    ) == [("heat", "pinn", [0], [1])]
    assert pr.plan(["heat"], ["pinn"], [0], 0.5, tmp_path / "cache", record) == [
        ("heat", "pinn", [0], [])
    ]
    assert pr.run_identity({**spec2, "x64": True}) != pr.run_identity(spec2)


def test_committed_results_are_compact():
    """benchmarks/results/ stays small: no run files, logs or figures (except the README's one,
    gn_wall_heat.png), records without curves."""
    results = BENCH / "results"
    files = [p for p in results.rglob("*") if p.is_file()]
    assert sum(p.stat().st_size for p in files) < 3 * 2**20
    figures = [p.name for p in files if p.suffix == ".png"]
    assert (
        figures == ["gn_wall_heat.png"] and (results / "gn_wall_heat.png").stat().st_size < 100_000
    )
    files = [p for p in files if p.suffix != ".png"]
    assert {p.suffix for p in files} <= {".md", ".json"} and all(p.parent == results for p in files)
    runs = json.loads((results / "paper_runs.json").read_text())["runs"]
    assert len(runs) >= 224
    for key, r in runs.items():
        assert r["format"] == tl.RUN_FORMAT and key == tl.run_filename(r["spec"])[:-5]
        assert "loss_curve" not in r and "prediction" not in r
        assert {
            "metrics",
            "statuses",
            "compile_seconds",
            "run_seconds",
            "evals_per_lbfgs_iteration",
            "machine",
        } <= set(r)


def test_cpu_minutes_per_run_and_list_estimate(capsys, tmp_path):
    cpu = {"backend": "cpu"}

    def run(variant, seed, wall, machine=cpu, **kw):
        r = tl.fake_run("heat", variant, seed, 1e-3, wall=wall, **kw)
        r["machine"] = machine
        return r

    runs = [
        run("pinn", 0, 60.0),
        run("pinn", 1, 180.0),
        run("pinn", 2, 240.0),  # median 3 min
        run("clpinn", 0, 600.0),
        run("pinn", 3, 6000.0, machine={"backend": "gpu"}),  # GPU: ignored
        run("pinn", 4, 6000.0, scale=0.5),
    ]  # scaled: ignored
    vm = run("pinn", 5, 6000.0)
    vm["timing"] = "vmapped-share"  # a sweep's share: ignored
    est = pt.cpu_minutes_per_run(runs + [vm])
    assert est[("heat", "pinn")] == (3.0, 3)
    assert est[("heat", "clpinn")] == (10.0, 1)
    assert est[("heat", None)] == (pytest.approx(3.5), 4)  # median of 1, 3, 4, 10 minutes
    assert ("heat", "gpinn") not in est

    for r in runs:
        (tmp_path / f"{r['key']}.json").write_text(json.dumps(r))
    # seeds the cached runs do not have (a cached seed would count as done:
    # test_recorded_run_counts_as_done)
    pt.main(
        [
            "--variants",
            "pinn,gpinn",
            "--problems",
            "heat,poisson1d",
            "--seeds",
            "6,7",
            "--list",
            "--runs-dir",
            str(tmp_path),
            "--results-dir",
            str(tmp_path / "results"),
        ]
    )
    out = capsys.readouterr().out
    assert "~3 CPU min/run (median of 3 cached, this cell)" in out
    assert (
        "~4 CPU min/run (median of 4 cached, any variant on this problem)" in out
    )  # gpinn on heat
    # 2 pinn + 2 gpinn heat runs at 3 and 3.5 min; 4 poisson1d runs without an estimate
    assert "~0.2 CPU core-hours" in out and "4 run(s) without an estimate" in out


def test_hardware_label():
    assert (
        tl.hardware_label({"backend": "gpu", "devices": ["gpu:NVIDIA H200"]}) == "GPU NVIDIA H200"
    )
    assert (
        tl.hardware_label({"backend": "cpu", "cpus_available": 2, "platform": "Linux-6.1-x86_64"})
        == "2 CPU cores"
    )
    assert (
        tl.hardware_label(
            {"backend": "cpu", "cpus_available": 2, "platform": "Linux-fc-gpu-x86_64"}
        )
        == "2 CPU cores of the GPU host"
    )
    assert tl.hardware_label({}) == "?"
