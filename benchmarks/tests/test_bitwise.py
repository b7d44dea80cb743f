"""benchmarks/bitwise.py: the fingerprint of a run and the comparison of two fingerprint files."""

import numpy as np

import cgmpinn_jax as cj
from benchmarks import bitwise


def test_fingerprint_is_exact_and_compare_finds_any_difference():
    res = cj.train(
        cj.get_problem("poisson1d", n_pde=32),
        "pinn",
        cj.TrainConfig(
            stages=(cj.stages.Adam(steps=10), cj.stages.LBFGS(steps=0)),
            cgm={"k_upd": 5},
            width=4,
            depth=1,
        ),
        key=0,
        quiet=True,
    )
    fp = bitwise.fingerprint(res)
    assert float.fromhex(fp["loss"][0]) == float(res.history.loss[0])  # exact, not rounded
    assert fp["statuses"] == ["COMPLETED", "SKIPPED"]
    a = {"package": "a", "runs": {"r": fp}}
    assert bitwise.compare(a, {"package": "b", "runs": {"r": dict(fp)}}) == []
    off = dict(
        fp,
        loss=fp["loss"][:-1] + [float(np.nextafter(float.fromhex(fp["loss"][-1]), np.inf)).hex()],
    )
    assert bitwise.compare(a, {"package": "b", "runs": {"r": off}}) == ["r: loss differs"]
    assert bitwise.compare(a, {"package": "b", "runs": {}}) == ["r: only in the first file"]
