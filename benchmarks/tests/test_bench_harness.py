"""The benchmark harness (benchmarks/tracking.py, benchmarks/retired.py) and what every record
must carry: the commit that made it (issue 45, items 3 and 5)."""

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from benchmarks import retired, tracking

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks"
RESULTS = BENCH / "results"


def test_first_reach_counts_from_the_offset_and_says_never():
    k = np.array([0, 100, 200, 300, 400])
    s = np.array([0.0, 1.5, 3.0, 4.5, 6.0])
    e = np.array([1e-2, 3e-4, 9e-5, 2e-6, 5e-7])
    assert tracking.first_reach(k, s, e, 1e-4) == (200, 3.0)
    assert tracking.first_reach(k, s, e, 1e-4, offset=150) == (
        50,
        3.0,
    )  # iterations after Adam's 150 steps
    assert tracking.first_reach(k, s, e, 3e-4) == (100, 1.5)  # <= counts
    assert tracking.first_reach(k, s, e, 1e-8) == (None, None)
    assert tracking.first_reach(k, s, e, 1e-4, offset=500) == (0, 3.0)  # never negative


def test_field_problems_reach_column_is_the_median_over_the_seeds_that_got_there():
    from benchmarks.field_problems import _median_k

    assert _median_k([{"k": 5751}, {"k": 6151}]) == "5951"
    assert _median_k([{"k": 5751}, None, {"k": 6151}]) == "5951 (2/3)"
    assert _median_k([None, None]) == "-"


def _names_its_commit(doc) -> bool:
    if isinstance(doc, dict) and isinstance(doc.get("commit"), str) and doc["commit"]:
        return True
    entries = doc.get("runs") if isinstance(doc, dict) else None
    if entries is None and isinstance(doc, dict):
        entries = doc.get("studies")
    return (
        isinstance(entries, dict)
        and bool(entries)
        and all(
            isinstance(r, dict) and isinstance(r.get("commit"), str) and r["commit"]
            for r in entries.values()
        )
    )


@pytest.mark.parametrize("path", sorted(RESULTS.glob("*.json")), ids=lambda p: p.name)
def test_every_record_names_its_commit(path):
    assert _names_its_commit(json.loads(path.read_text())), (
        f"{path.name}: neither a top-level 'commit' nor a 'commit' in every run"
    )


def test_the_check_fails_on_a_record_without_a_commit():
    assert not _names_its_commit({"runs": {"a": {"commit": "abc"}, "b": {}}})
    assert not _names_its_commit([{"x": 1}])
    assert _names_its_commit({"commit": "abc", "runs": {"b": {}}})


def test_retired_studies_left_the_tree_and_their_reports_say_where_they_are():
    live = {p.stem for p in BENCH.glob("*.py")}
    for name, r in retired.RETIRED.items():
        assert name not in live, f"{name} is retired but benchmarks/{name}.py is still there"
        for rec in r.records:
            assert (RESULTS / rec).exists(), f"{name}: its record {rec} is gone"
            report = (RESULTS / rec.replace(".json", ".md")).read_text()
            assert retired.banner(name) in "\n".join(report.splitlines()[:4]), (
                f"{rec}: no retirement line at the top"
            )
            assert r.last_run in report and retired.CODE_AT in report


def test_retired_lists_and_rejects_an_unknown_study(capsys):
    assert retired.main([]) == 0
    out = capsys.readouterr().out
    assert all(f"| {name} |" in out for name in retired.RETIRED)
    with pytest.raises(SystemExit, match="no retired study 'accuracy'"):
        retired.main(["accuracy"])


def _git(*args):
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)


@pytest.mark.skipif(_git("rev-parse", "--git-dir").returncode != 0, reason="not a git checkout")
def test_the_retired_commit_holds_every_retired_script():
    if _git("cat-file", "-e", f"{retired.CODE_AT}^{{commit}}").returncode != 0:
        pytest.skip(f"commit {retired.CODE_AT} not in this clone's history (shallow clone)")
    tree = set(_git("ls-tree", "--name-only", retired.CODE_AT, "benchmarks/").stdout.split())
    missing = [n for n in retired.RETIRED if f"benchmarks/{n}.py" not in tree]
    assert not missing, f"{retired.CODE_AT} lacks {missing}"


def test_bench_out_sends_records_and_cache_elsewhere(tmp_path):
    import os
    import sys

    code = (
        "from benchmarks import runcache; print(runcache.RESULTS, runcache.CACHE, "
        'runcache.Study("accuracy").record_path.parent)'
    )
    env = {**os.environ, "CGMPINN_BENCH_OUT": str(tmp_path), "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == [
        str(tmp_path / "results"),
        str(tmp_path / "cache"),
        str(tmp_path / "results"),
    ]


def test_drift_matches_study_runs_by_key_and_paper_runs_by_cell():
    from benchmarks import drift

    old = {
        "commit": "aaa111",
        "runs": {
            "heat__pinn__seed0": {
                "problem": "heat",
                "method": "pinn",
                "seed": 0,
                "metrics": {"rel_e2": 2e-7},
            },
            "heat__pinn__seed1": {
                "problem": "heat",
                "method": "pinn",
                "seed": 1,
                "metrics": {"rel_e2": 4e-7},
            },
        },
    }
    new = {
        "runs": {
            "heat__pinn__seed1": {
                "problem": "heat",
                "method": "pinn",
                "seed": 1,
                "commit": "bbb222",
                "metrics": {"rel_e2": 1e-7},
            },
            "heat__pinn__seed9": {
                "problem": "heat",
                "method": "pinn",
                "seed": 9,
                "metrics": {"rel_e2": 1.0},
            },
        }
    }
    (row,) = drift.compare(old, new)
    assert (row["seed"], row["ratio"], row["old_commit"], row["new_commit"]) == (
        1,
        0.25,
        "aaa111",
        "bbb222",
    )
    fmt = "cgmpinn-jax/paper-run/1"
    paper_old = {"runs": {"heat__pinn__seed2__k1": {"format": fmt, "metrics": {"rel_e2": 1e-3}}}}
    paper_new = {"runs": {"heat__pinn__seed2__k2": {"format": fmt, "metrics": {"rel_e2": 5e-4}}}}
    (row,) = drift.compare(paper_old, paper_new)  # another config hash, the same cell
    assert (row["same_key"], row["ratio"]) == (False, 0.5)


def test_write_report_renders_the_record_beside_it(tmp_path):
    from benchmarks import runcache

    study = runcache.Study("demo", results_dir=tmp_path / "results", cache_dir=tmp_path / "cache")
    assert (
        study.write_report(lambda runs: "never") is None
        and not (tmp_path / "results" / "demo.md").exists()
    )
    study.save("a", {"x": 1.5})
    text = study.write_report(
        lambda runs: "| run | x |\n" + "".join(f"| {k} | {r['x']} |\n" for k, r in runs.items())
    )
    assert text == "| run | x |\n| a | 1.5 |\n" == (tmp_path / "results" / "demo.md").read_text()
    assert json.loads((tmp_path / "results" / "demo.json").read_text())["runs"]["a"][
        "commit"
    ]  # stamped
