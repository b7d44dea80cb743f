"""Any saved model loads and predicts in a fresh process, in its saved precision, with jax's
global configuration untouched (float32, float64, mixed; lbPINN; an inverse problem)."""

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import cgmpinn_jax as cj

TINY = dict(
    stages=(cj.stages.Adam(steps=5), cj.stages.LBFGS(steps=0)), width=8, depth=2
)  # no second stage: one program less to compile
RUNS = {  # name -> (problem, method, precision)
    "f32_pinn": ("poisson1d", "pinn", "float32"),
    "f64_cgmpinn": ("heat", "cgmpinn", "float64"),
    "mixed_pinn": ("poisson1d", "pinn", "mixed"),
    "f32_lbpinn": ("poisson1d", "lbpinn", "float32"),
    "f64_inverse": ("inverse_heat", "pinn", "float64"),
}


def _flat(model):
    import jax

    return np.concatenate(
        [np.asarray(x).ravel() for x in jax.tree_util.tree_leaves(model) if hasattr(x, "dtype")]
    )


def _train(problem, method, precision):
    # mixed precision ends in float64 only after a second stage has run
    cfg = cj.TrainConfig(precision=precision, **TINY).with_steps(
        None, 2 if precision == "mixed" else 0
    )
    if problem == "inverse_heat":
        return cj.infer("heat", method, cfg, noise=0.01, key=0, quiet=True)
    return cj.train(problem, method, cfg, key=0, quiet=True)


@pytest.mark.slow  # CI time (run with -m slow); test_io loads and predicts saved models in-process
def test_saved_models_load_and_predict_in_a_fresh_process(tmp_path):
    expected = {}
    for name, (problem, method, precision) in RUNS.items():
        res = _train(problem, method, precision)
        cj.save_result(res, tmp_path / name)
        pts = np.asarray(res.problem.test_grid().points)[:50]
        np.save(tmp_path / f"{name}_pts.npy", pts)
        expected[name] = (res.predict(pts), _flat(res.model))
    code = textwrap.dedent(f"""
        import json, sys
        import jax, numpy as np
        import cgmpinn_jax as cj
        before = bool(jax.config.jax_enable_x64)
        out = {{}}
        for name in {list(RUNS)!r}:
            loaded = cj.load_model({str(tmp_path)!r} + "/" + name)
            pred = loaded.predict(np.load({str(tmp_path)!r} + "/" + name + "_pts.npy"))
            np.save({str(tmp_path)!r} + "/" + name + "_got.npy", pred)
            leaves = jax.tree_util.tree_leaves(loaded.model)
            np.save({str(tmp_path)!r} + "/" + name + "_params.npy",
                    np.concatenate([np.asarray(x).ravel() for x in leaves if hasattr(x, "dtype")]))
            # the older API still unpacks
            model, info = cj.load_model({str(tmp_path)!r} + "/" + name)
            out[name] = [str(pred.dtype), loaded.dtype, info["method"]]
        out["x64_unchanged"] = bool(jax.config.jax_enable_x64) == before
        print(json.dumps(out))
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got.pop("x64_unchanged") is True
    for name, (_problem, method, precision) in RUNS.items():
        dtype = "float32" if precision == "float32" else "float64"
        assert got[name] == [dtype, dtype, method], name
        pred, (want_pred, want_params) = np.load(tmp_path / f"{name}_got.npy"), expected[name]
        np.testing.assert_array_equal(
            np.load(tmp_path / f"{name}_params.npy"), want_params
        )  # bit for bit
        # the same network; the prediction agrees to the saved precision's rounding (compiled
        # there, eager in TrainResult.predict)
        np.testing.assert_allclose(
            pred, want_pred, rtol=1e-5 if dtype == "float32" else 1e-12, atol=1e-6
        )


def test_predict_checks_the_points(tmp_path):
    res = cj.train("heat", "pinn", cj.TrainConfig(**TINY), key=0, quiet=True)
    cj.save_result(res, tmp_path / "run")
    loaded = cj.load_model(tmp_path / "run")
    assert "heat" in repr(loaded) and loaded.predict(np.zeros((3, 2))).shape == (3,)
    with pytest.raises(ValueError, match=r"shape \(M, 2\).*'x', 't'"):
        loaded.predict(np.zeros((3, 3)))
