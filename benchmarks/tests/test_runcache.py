"""benchmarks/runcache.py: full runs in the (ignored) cache, compact runs in the committed
record, a recorded run counts as done."""

import json
import math
import shutil

import numpy as np
import pytest

from benchmarks import runcache as rc


@pytest.fixture
def dirs(tmp_path):
    return {"results_dir": tmp_path / "results", "cache_dir": tmp_path / "cache"}


def test_cached_run_trains_once(dirs, tmp_path):
    calls = []

    def fn():
        calls.append(1)
        return {
            "metrics": {"rel_e2": np.float32(1e-3), "e_inf": float("nan")},
            "config": {"beta": 1.0},
            "run_seconds": 2.5,
            "loss_curve": np.arange(5.0),
            "prediction": [0.1, 0.2],
        }

    a = rc.cached_run("precision", "p1-f32-seed0", fn, **dirs)
    b = rc.cached_run("precision", "p1-f32-seed0", fn, **dirs)
    assert len(calls) == 1 and a == b
    assert a["run_key"] == "p1-f32-seed0" and a["metrics"]["e_inf"] == "nan"
    assert a["metrics"]["rel_e2"] == pytest.approx(1e-3)
    assert "loss_curve" not in a and "prediction" not in a
    assert {"machine", "finished_at", "call_seconds", "commit", "threads"} <= set(a)
    assert a["commit"] == rc.code_commit() and a["threads"] in (
        "one XLA thread",
        "XLA default threads",
    )

    full = rc.Study("precision", **dirs).load_full("p1-f32-seed0")
    assert full["loss_curve"] == [0.0, 1.0, 2.0, 3.0, 4.0] and full["prediction"] == [0.1, 0.2]
    assert (tmp_path / "cache" / "precision" / "p1-f32-seed0.json").exists()

    # the record is valid JSON with one line per run
    rc.cached_run("precision", "p1-f32-seed1", lambda: {"metrics": {"rel_e2": 2e-3}}, **dirs)
    text = (tmp_path / "results" / "precision.json").read_text()
    doc = json.loads(text)
    assert doc["format"] == rc.RECORD_FORMAT and doc["study"] == "precision"
    assert sorted(doc["runs"]) == ["p1-f32-seed0", "p1-f32-seed1"] and len(text.splitlines()) == 4


def test_recorded_run_is_done_without_cache(dirs, tmp_path):
    st = rc.Study("s", **dirs)
    st.save("k", {"metrics": {"x": 1.0}, "history": [1, 2, 3]})
    (tmp_path / "cache" / "s" / "k.json").unlink()  # a fresh checkout: the record only
    assert st.is_done("k") and st.load_full("k") is None

    def boom():
        raise AssertionError("must not retrain a recorded run")

    assert st.run("k", boom)["metrics"] == {"x": 1.0}
    assert not st.is_done("other")


def test_accept_reruns_and_replaces(dirs):
    st = rc.Study("s", **dirs)
    st.save("k", {"version": "0.1.0", "v": 1})
    rec = st.run(
        "k", lambda: {"version": "0.2.0", "v": 2}, accept=lambda r: r["version"] == "0.2.0"
    )
    assert rec["v"] == 2 and st.load()["k"]["v"] == 2 and st.load_full("k")["v"] == 2


def test_sync_adds_cached_full_runs_and_keeps_extra_keys(dirs, tmp_path):
    st = rc.Study("s", **dirs)
    st.save("a", {"v": 1})
    doc = json.loads(st.record_path.read_text())
    doc["note"] = "hand-written note"
    st.record_path.write_text(json.dumps(doc))
    (tmp_path / "cache" / "s" / "b.json").write_text(json.dumps({"v": 2, "loss_curve": [1.0]}))
    (tmp_path / "cache" / "s" / "broken.json").write_text("{nope")
    assert st.sync() == ["b"]
    assert st.sync() == []
    runs = st.load()
    assert runs["b"] == {"v": 2, "run_key": "b"}
    assert json.loads(st.record_path.read_text())["note"] == "hand-written note"
    # a full file in the cache is used by run() too, without calling fn
    (tmp_path / "cache" / "s" / "c.json").write_text(json.dumps({"v": 3}))
    assert st.run("c", lambda: 1 / 0)["v"] == 3 and "c" in st.load()


def test_custom_compact_and_bad_input(dirs):
    st = rc.Study("s", **dirs)
    rec = st.save(
        "k",
        {"metrics": {"a": 1}, "big": list(range(10))},
        compact=lambda f: {"metrics": f["metrics"]},
    )
    assert set(rec) == {"metrics", "run_key", "machine", "finished_at", "commit", "threads"}
    with pytest.raises(TypeError):
        st.run("j", lambda: [1, 2])
    with pytest.raises(ValueError):
        st.run("../escape", lambda: {})
    assert rc.to_json({"x": np.array([1.0, math.inf]), (1, 2): np.int64(3)}) == {
        "x": [1.0, "inf"],
        "(1, 2)": 3,
    }


def test_machine_description_and_thread_flags(monkeypatch):
    """The studies' shared harness: machine_info keeps its record keys, machine_text fills a
    study's own one-line format from the same facts, threads_label reads XLA_FLAGS."""
    import os
    import platform

    info = rc.machine_info()
    assert list(info) == [
        "platform",
        "processor",
        "cpu_count",
        "cpus_available",
        "python",
        "jax",
        "jaxlib",
        "backend",
        "devices",
    ]
    assert info["cpu_count"] == os.cpu_count() and info["python"] == platform.python_version()
    assert (
        rc.machine_text("{processor}, {cpu_count} cores, {system}")
        == f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"{platform.system()}"
    )
    assert (
        rc.machine_text("{arch}, Python {python}")
        == f"{platform.machine()}, Python {platform.python_version()}"
    )
    assert rc.host("device_count", "backend") == {
        "device_count": len(__import__("jax").devices()),
        "backend": info["backend"],
    }
    with pytest.raises(KeyError):
        rc.host("hostname")
    assert rc.threads_label(rc.ONE_THREAD_XLA_FLAGS) == "one XLA thread"
    assert rc.threads_label("") == "XLA default threads"
    monkeypatch.setenv("XLA_FLAGS", rc.ONE_THREAD_XLA_FLAGS)
    assert rc.threads_label() == "one XLA thread"


def assert_same_run(a, b):
    """Parameters, metrics and every history entry equal (the error tracker's seconds aside)."""
    import jax
    import numpy as np

    for name in a.history._fields:
        x, y = getattr(a.history, name), getattr(b.history, name)
        if name == "snapshots":
            assert set(x) == set(y) and all(np.array_equal(x[i], y[i]) for i in x)
        elif name != "error_seconds" and not (x is None and y is None):
            np.testing.assert_array_equal(np.asarray(x), np.asarray(y), err_msg=name)
    for u, v in zip(jax.tree_util.tree_leaves(a.model), jax.tree_util.tree_leaves(b.model)):
        np.testing.assert_array_equal(np.asarray(u), np.asarray(v))
    assert a.metrics == b.metrics


def test_train_resumable_resumes_a_killed_run_drops_init_and_cleans_up(tmp_path, monkeypatch):
    """A run killed after a checkpoint resumes from it (equal to the uninterrupted run, ``init``
    ignored); a finished run leaves no checkpoints behind; a fresh run reports resumed=False."""
    import cgmpinn_jax as cj
    from cgmpinn_jax.training import _checkpoint as ck

    monkeypatch.setattr(rc, "CACHE", tmp_path / "cache")
    cfg = cj.TrainConfig(
        stages=(cj.stages.Adam(steps=60), cj.stages.LBFGS(steps=0)),
        cgm={"k_upd": 20},
        width=8,
        depth=2,
    )
    plain, resumed = rc.train_resumable("st", "r0", "poisson1d", "pinn", cfg, key=0, quiet=True)
    assert resumed is False and not (tmp_path / "cache" / "st_checkpoints" / "r0").exists()

    folder = tmp_path / "cache" / "st_checkpoints" / "r1"  # a run killed after its first checkpoint
    monkeypatch.setattr(ck, "_KEEP", 1000)
    cj.train("poisson1d", "pinn", cfg, key=0, quiet=True, checkpoint_dir=folder, checkpoint_every=0)
    for c in sorted((folder / ck.SUBDIR).iterdir())[1:]:
        shutil.rmtree(c)
    other = cj.train(
        "poisson1d", "pinn", cfg.replace().with_steps(20, None), key=5, quiet=True
    ).model
    res, resumed = rc.train_resumable(
        "st", "r1", "poisson1d", "pinn", cfg, key=0, quiet=True, init=other
    )
    assert resumed is True and not folder.exists()
    assert_same_run(plain, res)
