"""benchmarks/accuracy.py: the report keeps each machine's seconds apart and judges a goal on all
seeds."""

from benchmarks import accuracy as ab


def _run(seed, e2, backend, wall):
    reach = {f"{t:.0e}": {"iterations": 100, "seconds": wall / 2} for t in ab.THRESHOLDS}
    return dict(
        problem="poisson2d",
        method="pinn",
        seed=seed,
        second_steps=1500,
        metrics={"rel_e2": e2},
        reach=reach,
        wall_seconds=wall,
        compile_seconds=10.0,
        statuses={"second": "COMPLETED"},
        threads="one XLA thread",
        machine={"backend": backend, "devices": [backend]},
    )


def _rows(text):
    return [line for line in text.splitlines() if line.startswith("| poisson2d |")]


def test_cpu_and_gpu_runs_of_a_cell_get_their_own_rows_and_one_goal():
    recs = {
        "a": _run(0, 8e-7, "cpu", 4666.0),
        "b": _run(1, 2e-6, "gpu", 60.0),
        "c": _run(2, 3e-6, "gpu", 70.0),
    }
    cpu, gpu = _rows(ab.render(recs))
    assert "| cpu | 0 |" in cpu and "| 4666 |" in cpu
    assert (
        "| gpu | 1,2 |" in gpu and "| 65 |" in gpu
    )  # the GPU row's median wall, not pooled with the CPU's
    # median of all three seeds is 2e-6: missed by 2x, judged on every seed in both rows
    assert "missed x2.0 (all 3 seeds)" in cpu and "missed x2.0 (all 3 seeds)" in gpu


def test_a_cell_on_one_machine_has_one_row():
    (row,) = _rows(ab.render({"a": _run(0, 8e-7, "cpu", 100.0), "b": _run(1, 9e-7, "cpu", 120.0)}))
    assert "| cpu | 0,1 |" in row and "<= 1e-06: met |" in row and "all" not in row
