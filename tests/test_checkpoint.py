"""Checkpoints and resume (cgmpinn_jax/training/_checkpoint.py): a resumed run equals the
uninterrupted run bit for bit (parameters, metrics, every history entry), from a checkpoint inside
Adam, at the stage hand-off and inside the second stage; a process killed with SIGKILL; Ctrl-C;
corrupted checkpoints; checkpoints of another run."""

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import cgmpinn_jax as cj
from cgmpinn_jax.stages import LBFGS, Adam, GaussNewton
from cgmpinn_jax.training import _checkpoint as ck
from helpers import SMALL, assert_same_run, only, sigint_at

ROOT = Path(__file__).resolve().parents[1]
# a small network: what is checked (bit-identical resume) does not depend on its size, and
# the paper's 4 x 50 would spend most of this file's time in float64 Gauss-Newton solves
TINY = dict(stages=(Adam(steps=60), LBFGS(steps=40)), cgm={"k_upd": 20}, **SMALL)


CASES = {
    "poisson1d-cgmpinn-float32-optax": ("poisson1d", "cgmpinn", {}),
    "poisson1d-pinn-float64-gauss_newton": (
        "poisson1d",
        "pinn",
        {
            "precision": "float64",
            "stages": (Adam(steps=40), GaussNewton(steps=10)),
            "cgm": {"k_upd": 5},
        },
    ),
    "poisson1d-cgmpinn-mixed-jaxopt": (
        "poisson1d",
        "cgmpinn",
        {"precision": "mixed", "stages": (Adam(steps=60), LBFGS(steps=40, backend="jaxopt"))},
    ),
    # slow (minutes on 2 cores): python -m pytest -m slow tests/test_checkpoint.py
    "heat-pinn-float64-gauss_newton": (
        "heat",
        "pinn",
        {"precision": "float64", "stages": (Adam(steps=60), GaussNewton(steps=40))},
    ),
    "fisher_kpp-cgmpinn-mixed-jaxopt": (
        "fisher_kpp",
        "cgmpinn",
        {"precision": "mixed", "stages": (Adam(steps=60), LBFGS(steps=40, backend="jaxopt"))},
    ),
}


# CI keeps the two cheapest poisson1d cases (the resume logic is shared; mixed-jaxopt is slow for CI
# time)
@pytest.mark.parametrize(
    "case",
    [
        c
        if c.startswith("poisson1d") and "mixed" not in c
        else pytest.param(c, marks=pytest.mark.slow)
        for c in sorted(CASES)
    ],
)
def test_resume_is_bit_identical_from_adam_the_hand_off_and_the_second_stage(
    case, tmp_path, monkeypatch
):
    problem, method, extra = CASES[case]
    monkeypatch.setattr(ck, "_KEEP", 1000)  # keep every checkpoint: each is a possible kill point
    cfg = cj.TrainConfig(**{**TINY, **extra})
    plain = cj.train(problem, method, cfg, key=0, quiet=True)
    folder = tmp_path / "run"
    saved = cj.train(
        problem, method, cfg, key=0, quiet=True, checkpoint_dir=folder, checkpoint_every=0
    )
    assert_same_run(plain, saved)  # checkpointing changes nothing
    assert saved.checkpoint_seconds > 0 and plain.checkpoint_seconds is None
    ckpts = sorted((folder / ck.SUBDIR).iterdir())
    positions = [json.loads((c / "meta.json").read_text())["position"] for c in ckpts]
    # inside Adam, at the hand-off (second stage not begun) and inside the second stage
    kinds = {"adam": [], "hand-off": [], "second": []}
    for c, p in zip(ckpts, positions):
        kinds["adam" if p["stage"] == "adam" else "second" if p["handed"] else "hand-off"].append(c)
    assert all(kinds.values()), positions
    # kill points: right after Adam's first weight refresh, at the hand-off, and after the
    # second stage's last refresh
    for c in (kinds["adam"][0], kinds["hand-off"][0], kinds["second"][-1]):
        resumed = cj.resume(only(folder, c), quiet=True)
        assert_same_run(plain, resumed)


@pytest.mark.slow  # CI time (about 54 s on one core); run with -m slow
def test_inverse_run_resumes_with_its_observations(tmp_path):
    problem = cj.inverse.inverse_problem("heat", n_obs=40, noise=0.01, key=1)
    cfg = cj.TrainConfig(stages=(Adam(steps=40), LBFGS(steps=20)), cgm={"k_upd": 20}, **SMALL)
    plain = cj.train(problem, "cgmpinn", cfg, key=0, quiet=True, track_error_every=10)
    folder = tmp_path / "inv"
    cj.train(
        problem,
        "cgmpinn",
        cfg,
        key=0,
        quiet=True,
        checkpoint_dir=folder,
        checkpoint_every=0,
        track_error_every=10,
    )
    first = sorted((folder / ck.SUBDIR).iterdir())[0]
    resumed = cj.resume(
        only(folder, first), quiet=True, track_error_every=10
    )  # the problem rebuilt from the record
    assert_same_run(plain, resumed)
    np.testing.assert_array_equal(plain.history.coeffs, resumed.history.coeffs)
    np.testing.assert_array_equal(plain.history.error_rel_e2, resumed.history.error_rel_e2)


def test_ctrl_c_checkpoints_then_stops_and_resume_finishes(tmp_path, ctrl_c_raises):
    cfg = cj.TrainConfig(**TINY)
    plain = cj.train("poisson1d", "pinn", cfg, key=5, quiet=True)
    progress = sigint_at("adam", 20)  # Ctrl-C in the middle of the Adam stage
    folder = tmp_path / "run"
    with pytest.raises(cj.TrainingInterrupted) as info:
        cj.train(
            "poisson1d",
            "pinn",
            cfg,
            key=5,
            quiet=True,
            checkpoint_dir=folder,
            checkpoint_every=1e9,
            progress=progress,
        )
    stop = info.value
    assert isinstance(stop, KeyboardInterrupt) and stop.checkpoint_dir == folder
    assert stop.result.statuses["adam"] == cj.StageStatus.INTERRUPTED and np.isfinite(
        stop.result.metrics.rel_e2
    )
    assert len(stop.result.history.k) == 20  # no chunk lost
    meta = json.loads((ck.latest(folder) / "meta.json").read_text())
    assert {k: meta["position"][k] for k in ("stage", "chunk", "handed", "done", "piece")} == {
        "stage": "adam",
        "chunk": 1,
        "handed": True,
        "done": 20,
        "piece": False,
    }
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # handler restored
    assert_same_run(plain, cj.resume(folder, quiet=True))


def test_a_process_that_ignores_ctrl_c_is_left_deaf_to_it():
    """SIG_IGN (a background job of a script) stays as it is: no handler, the flag never set."""
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with ck.sigint_flag() as stop:
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
            signal.raise_signal(signal.SIGINT)
            assert not stop()
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        signal.signal(signal.SIGINT, signal.default_int_handler)
        with ck.sigint_flag() as stop:  # the default handler: replaced inside, restored after
            assert signal.getsignal(signal.SIGINT) is not signal.default_int_handler
            signal.raise_signal(signal.SIGINT)
            assert stop()
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, before)


def test_sigkilled_process_resumes_bit_identical(tmp_path):
    """A subprocess killed with SIGKILL right after its second checkpoint; the resumed run
    equals an uninterrupted one."""
    folder = tmp_path / "run"
    script = textwrap.dedent(f"""
        import os, signal
        import cgmpinn_jax as cj
        from cgmpinn_jax.training import _checkpoint as ck
        write = ck.Checkpointer.write
        def write_then_die(self, snap):
            path = write(self, snap)
            if self.written == 2:
                os.kill(os.getpid(), signal.SIGKILL)
            return path
        ck.Checkpointer.write = write_then_die
        cfg = cj.TrainConfig.from_dict({cj.TrainConfig(**TINY).to_dict()!r})
        cj.train("poisson1d", "cgmpinn", cfg, key=2, quiet=True,
                 checkpoint_dir={str(folder)!r}, checkpoint_every=0)
        print("finished")
    """)
    proc = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
    assert "finished" not in proc.stdout
    plain = cj.train("poisson1d", "cgmpinn", cj.TrainConfig(**TINY), key=2, quiet=True)
    assert_same_run(plain, cj.resume(folder, quiet=True))


@pytest.fixture(scope="module")
def two_checkpoints(tmp_path_factory):
    """A finished tiny run's folder with its last two checkpoints, and the run."""
    folder = tmp_path_factory.mktemp("ck") / "run"
    cfg = cj.TrainConfig(stages=(Adam(steps=60), LBFGS(steps=0)), cgm={"k_upd": 20})
    res = cj.train(
        "poisson1d", "pinn", cfg, key=1, quiet=True, checkpoint_dir=folder, checkpoint_every=0
    )
    return folder, cfg, res


@pytest.mark.parametrize("damage", ["truncate", "flip", "meta"])
def test_a_corrupted_checkpoint_falls_back_to_the_previous_with_a_warning(
    damage, two_checkpoints, tmp_path
):
    src, cfg, res = two_checkpoints
    folder = tmp_path / "run"
    shutil.copytree(src, folder)
    newest, previous = sorted((folder / ck.SUBDIR).iterdir(), reverse=True)
    if damage == "truncate":
        bad = newest / "arrays.eqx"
        bad.write_bytes(bad.read_bytes()[:100])
    elif damage == "flip":
        bad = newest / "history.npz"
        data = bytearray(bad.read_bytes())
        data[len(data) // 2] ^= 0xFF
        bad.write_bytes(bytes(data))
    else:
        bad = newest / "meta.json"
        bad.write_text(bad.read_text()[:50])
    with pytest.warns(UserWarning, match=str(bad.name)):
        resumed = cj.train("poisson1d", "pinn", cfg, key=1, quiet=True, resume=folder)
    assert_same_run(res, resumed)


def test_a_checkpoint_of_another_run_is_refused_naming_the_fields(two_checkpoints, tmp_path):
    src, cfg, _ = two_checkpoints
    other = cj.TrainConfig(
        stages=(Adam(steps=60), LBFGS(steps=0)), cgm={"k_upd": 20}, precision="float64"
    )
    with pytest.raises(
        cj.CheckpointError, match=r"config\.precision: saved 'float32', now 'float64'"
    ):
        cj.train("poisson1d", "pinn", other, key=1, quiet=True, resume=src)
    with pytest.raises(cj.CheckpointError, match=r"method: saved 'pinn', now 'cgmpinn'"):
        cj.train("poisson1d", "cgmpinn", cfg, key=1, quiet=True, resume=src)
    with pytest.raises(
        cj.CheckpointError, match=r"problem\.problem: saved 'poisson1d', now 'heat'"
    ):
        cj.train("heat", "pinn", cfg, key=1, quiet=True, resume=src)
    with pytest.raises(cj.CheckpointError, match=r"key: saved"):
        cj.train("poisson1d", "pinn", cfg, key=2, quiet=True, resume=src)
    # another library version: every checkpoint refused by name
    folder = tmp_path / "run"
    shutil.copytree(src, folder)
    for c in (folder / ck.SUBDIR).iterdir():
        meta = json.loads((c / "meta.json").read_text())
        meta["identity"]["version"] = "0.0.1"
        (c / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(
        cj.CheckpointError, match=r"version: saved '0\.0\.1', now '" + cj.__version__
    ):
        cj.resume(folder, quiet=True)


def test_missing_or_empty_folders_and_bad_options(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such folder"):
        cj.resume(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(cj.CheckpointError, match="holds no checkpoint"):
        cj.resume(tmp_path / "empty")
    with pytest.raises(ValueError, match="checkpoint_every"):
        cj.train(
            "poisson1d",
            "pinn",
            cj.TrainConfig(stages=(Adam(steps=20), LBFGS(steps=0))),
            quiet=True,
            checkpoint_dir=tmp_path / "x",
            checkpoint_every=-1,
        )


def test_checkpoint_interval_limits_the_writes(tmp_path):
    cfg = cj.TrainConfig(stages=(Adam(steps=100), LBFGS(steps=0)), cgm={"k_upd": 20})
    res = cj.train(
        "poisson1d", "pinn", cfg, key=0, quiet=True, checkpoint_dir=tmp_path, checkpoint_every=1e9
    )
    assert res.checkpoint_seconds == 0.0 and ck.latest(tmp_path) is None  # the interval never came
    cj.train(
        "poisson1d",
        "pinn",
        cfg,
        key=0,
        quiet=True,
        checkpoint_dir=tmp_path / "b",
        checkpoint_every=0,
    )
    assert (
        len(list((tmp_path / "b" / ck.SUBDIR).iterdir())) == 2
    )  # the previous one kept, older ones gone


@pytest.mark.slow  # CI time (run with -m slow); a faster test covers the same path
def test_command_line_ctrl_c_then_resume(tmp_path):
    """``cgmpinn-jax run --out D``: Ctrl-C writes a checkpoint, saves the best model so far and
    exits with status 130, printing how to resume; ``--resume D`` finishes the run with the
    recorded settings, equal to the uninterrupted run; other options with --resume are refused."""
    import time

    from cgmpinn_jax.cli import _main as cli

    out = tmp_path / "run"
    opts = [
        "--adam-steps",
        "4000",
        "--second-steps",
        "0",
        "--k-upd",
        "200",
        "--seed",
        "3",
        "--no-plots",
        "--width",
        "16",
        "--depth",
        "2",
        "--compile-cache",
        "off",
    ]
    # `python -m cgmpinn_jax.cli ...` with Python's Ctrl-C handler, however the suite was launched
    # (a job started with & from a script inherits SIGINT ignored, and the library then leaves it
    # so)
    as_from_a_terminal = (
        "import runpy, signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
        "runpy.run_module('cgmpinn_jax.cli', run_name='__main__', alter_sys=True)"
    )
    cmd = [
        sys.executable,
        "-c",
        as_from_a_terminal,
        "run",
        "poisson1d",
        *opts,
        "--out",
        str(out),
        "--checkpoint-every",
        "0",
    ]
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    t0 = time.time()
    while ck.latest(out) is None and proc.poll() is None and time.time() - t0 < 240:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    text = proc.communicate(timeout=240)[0]
    assert proc.returncode == cli.EXIT_INTERRUPTED, text[-3000:]
    assert f"--resume {out}" in text and (out / "model.eqx").exists()
    done_at = json.loads((ck.latest(out) / "meta.json").read_text())["position"]["done"]
    assert 0 < done_at < 4000
    assert (
        cli.main(["run", "--resume", str(out), "--adam-steps", "10"]) == 2
    )  # settings come from the checkpoint
    assert (
        cli.main(["run", "--resume", str(out), "--quiet", "--no-plots", "--compile-cache", "off"])
        == 0
    )
    cfg = cj.TrainConfig(stages=(Adam(steps=4000), LBFGS(steps=0)), cgm={"k_upd": 200}, **SMALL)
    plain = cj.train("poisson1d", "cgmpinn", cfg, key=3, quiet=True)
    saved = json.loads((out / "metrics.json").read_text())
    assert saved["rel_e2"] == plain.metrics.rel_e2
    assert json.loads((out / "history.json").read_text())["loss"] == plain.history.loss.tolist()
    assert not (out / ck.SUBDIR).exists()  # a finished run's checkpoints are removed


@pytest.mark.slow  # CI time (about 35 s on one core); run with -m slow
def test_sweep_resumes_its_vmapped_state_bit_identical(tmp_path, monkeypatch):
    monkeypatch.setattr(ck, "_KEEP", 1000)
    cfg = cj.TrainConfig(stages=(Adam(steps=40), LBFGS(steps=20)), cgm={"k_upd": 20}, **SMALL)
    kw = dict(seeds=[0], grid={"beta": [0.5, 2.0]}, quiet=True, keep_histories=True)
    plain = cj.sweep("poisson1d", "cgmpinn", cfg, **kw)
    folder = tmp_path / "sweep"
    cj.sweep("poisson1d", "cgmpinn", cfg, checkpoint_dir=folder, checkpoint_every=0, **kw)
    ckpts = sorted((folder / ck.SUBDIR).iterdir())
    assert len(ckpts) >= 2
    for c in ckpts[-1:]:  # inside the second stage
        resumed = cj.sweep("poisson1d", "cgmpinn", cfg, resume=only(folder, c), **kw)
        for name in plain.metrics:
            np.testing.assert_array_equal(plain.metrics[name], resumed.metrics[name])
        for a, b in zip(plain.histories, resumed.histories):
            np.testing.assert_array_equal(a.loss, b.loss)
            np.testing.assert_array_equal(a.raw, b.raw)
    with pytest.raises(cj.CheckpointError, match=r"axes\.beta"):
        cj.sweep("poisson1d", "cgmpinn", cfg, resume=folder, **{**kw, "grid": {"beta": [0.5, 3.0]}})
