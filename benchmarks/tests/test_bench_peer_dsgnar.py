"""benchmarks.peer_dsgnar: the summary of a side's error trace and the report (the runs
themselves need DSGNAR's clone and its own environment; `python -m benchmarks.peer_dsgnar`)."""

from __future__ import annotations

import numpy as np

from benchmarks import peer_dsgnar


def _trace(seconds, errors, **kw):
    return {"seconds": list(seconds), "rel_l2": list(errors), "done": True, **kw}


def test_summary_reads_first_reach_and_best_error_by_each_time():
    t = _trace(
        [10, 100, 200, 700, 1300], [1e-3, 2e-5, 5e-6, 8e-7, 9e-7], stages=["Gauss-Newton: ..."]
    )
    s = peer_dsgnar.summarise("ours", t, 2048, 1024, 0)
    assert s["reach_seconds"] == {"1e-04": 100.0, "1e-05": 200.0, "1e-06": 700.0, "1e-09": None}
    assert s["best_by_seconds"]["150"] == 2e-5 and s["best_by_seconds"]["600"] == 5e-6
    assert (
        s["best_by_seconds"]["1200"] == 8e-7 and s["best_by_seconds"]["2400"] == 8e-7
    )  # best so far, not last
    assert s["final_rel_l2"] == 9e-7 and s["seconds"] == 1300.0
    early = peer_dsgnar.summarise("dsgnar", _trace([200], [0.5]), 2048, 1024, 0)
    assert early["best_by_seconds"]["150"] is None and early["reach_seconds"]["1e-04"] is None


def test_report_lists_both_sides_with_their_stop():
    runs = {}
    for side, done in (("ours", True), ("dsgnar", False)):
        extra = {"stages": ["GN: 1500 of 1500"]} if side == "ours" else {}
        s = peer_dsgnar.summarise(
            side, _trace([5, 50], [1e-2, 3e-5], done=done, **extra), 2048, 1024, 0
        )
        runs[f"{side}__seed0__pde2048"] = dict(
            s, commit="abc", parameters=7851 if side == "ours" else 5125
        )
    text = peer_dsgnar.render(runs)
    rows = [
        line
        for line in text.splitlines()
        if line.startswith("| ours") or line.startswith("| DSGNAR")
    ]
    assert len(rows) == 2 and rows[0].startswith("| ours") and "GN: 1500 of 1500" in rows[0]
    assert "stopped at the time limit" in rows[1] and "3.00e-05" in rows[1]
    assert np.isfinite(float(rows[1].split("|")[8]))
