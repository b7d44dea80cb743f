"""Long runs: a chunk's loop called in pieces sized by time (the same steps bit for bit),
progress, checkpoints and Ctrl-C between the pieces, the run's and each stage's wall-clock
time limit (TIME_LIMIT, resumable with a larger limit), and the estimate before a long stage."""

import json
import signal

import pytest

import cgmpinn_jax as cj
from cgmpinn_jax.stages import LBFGS, Adam, GaussNewton
from cgmpinn_jax.training import _checkpoint as ck
from cgmpinn_jax.training import _loop
from helpers import SMALL, assert_same_run, only, sigint_at

# one chunk per stage (k_upd larger than either budget): without pieces, nothing would happen
# between the stage's first and last iteration
ONE_CHUNK = dict(stages=(Adam(steps=30), LBFGS(steps=24)), cgm={"k_upd": 1000}, **SMALL)
TINY_CALL = 1e-9  # every call runs one iteration


def gn_chunk(steps: int) -> dict:
    """ONE_CHUNK with a float64 Gauss-Newton stage of ``steps`` iterations after Adam."""
    return {
        **ONE_CHUNK,
        "precision": "float64",
        "stages": (Adam(steps=30), GaussNewton(steps=steps)),
    }


def test_call_sizer_aims_at_call_seconds_and_grows_at_most_4x():
    s = _loop._CallSizer(2.0)
    assert s.size(200) == 1  # nothing measured yet
    s.update(1, 0.001)
    assert s.size(200) == 4  # 2000 wanted, growth capped
    s.update(4, 0.004)
    assert s.size(200) == 16
    s.update(16, 16 * 0.5)  # slower iterations: 0.5 s each
    assert s.size(200) == 4  # 2 s / 0.5 s
    s.update(4, 4 * 5.0)  # an iteration longer than a call
    assert s.size(200) == 1
    assert s.size(0) == 0 or s.size(1) == 1
    assert _loop._CallSizer(None).size(37) == 37  # None: the whole chunk


@pytest.mark.parametrize(
    "extra",
    [ONE_CHUNK, pytest.param(gn_chunk(8), marks=pytest.mark.slow)],
    ids=["float32-optax", "float64-gauss_newton"],
)  # CI: Gauss-Newton's pieces in the test below
def test_calls_of_one_iteration_give_the_same_run_and_a_progress_report_after_each(extra):
    cfg = cj.TrainConfig(**extra)
    whole = cj.train("poisson1d", "cgmpinn", cfg, key=2, quiet=True, call_seconds=None)
    seen = []
    pieces = cj.train(
        "poisson1d",
        "cgmpinn",
        cfg,
        key=2,
        quiet=True,
        call_seconds=TINY_CALL,
        progress=lambda p: seen.append((p.stage, p.done)),
    )
    assert_same_run(whole, pieces)
    assert list(whole.budgets) == list(cfg.stage_names)
    for stage, budget in whole.budgets.items():
        done = [d for s, d in seen if s == stage]
        assert done == list(range(1, budget + 1)), (stage, done)  # a report after every iteration


def test_ctrl_c_inside_a_chunk_stops_at_the_next_call_and_resume_is_bit_identical(
    tmp_path, ctrl_c_raises
):
    cfg = cj.TrainConfig(**ONE_CHUNK)
    plain = cj.train("poisson1d", "pinn", cfg, key=5, quiet=True)
    progress = sigint_at(
        "lbfgs", 7
    )  # Ctrl-C after the second stage's 7th iteration, inside its only chunk
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
            call_seconds=TINY_CALL,
        )
    stop = info.value
    assert stop.result.statuses["lbfgs"] == cj.StageStatus.INTERRUPTED
    assert len(stop.result.history.k) == 30 + 7  # every step so far, the chunk's part included
    pos = json.loads((ck.latest(folder) / "meta.json").read_text())["position"]
    assert (pos["stage"], pos["chunk"], pos["piece"], pos["done"]) == (
        "lbfgs",
        1,
        True,
        7,
    )  # answered at once
    assert_same_run(plain, cj.resume(folder, quiet=True))


@pytest.mark.slow  # CI time (15 s); the Ctrl-C tests resume from inside a chunk too
def test_every_piece_boundary_is_a_resumable_checkpoint(tmp_path, monkeypatch):
    monkeypatch.setattr(ck, "_KEEP", 1000)
    cfg = cj.TrainConfig(**gn_chunk(6))
    plain = cj.train("poisson1d", "pinn", cfg, key=1, quiet=True)
    folder = tmp_path / "run"
    cj.train(
        "poisson1d",
        "pinn",
        cfg,
        key=1,
        quiet=True,
        checkpoint_dir=folder,
        checkpoint_every=0,
        call_seconds=TINY_CALL,
    )
    ckpts = sorted((folder / ck.SUBDIR).iterdir())
    inside = [c for c in ckpts if json.loads((c / "meta.json").read_text())["position"]["piece"]]
    assert len(inside) >= 30 - 1 + 6 - 2  # inside Adam's chunk and the second stage's
    for c in (inside[3], inside[-1]):
        assert_same_run(plain, cj.resume(only(folder, c), quiet=True))


def test_the_run_time_limit_stops_with_time_limit_and_a_larger_limit_resumes_bit_identical(
    tmp_path, monkeypatch
):
    cfg = cj.TrainConfig(**ONE_CHUNK)
    plain = cj.train("poisson1d", "cgmpinn", cfg, key=4, quiet=True)
    calls = {"n": 0}
    real = _loop._Loop.limit_reached

    def at_the_12th_second_stage_boundary(self, stage):  # the clock, made deterministic
        if stage == "lbfgs":
            calls["n"] += 1
            if calls["n"] >= 12:
                return "run"
        return real(self, stage)

    monkeypatch.setattr(_loop._Loop, "limit_reached", at_the_12th_second_stage_boundary)
    folder, lines = tmp_path / "run", []
    cut = cj.train(
        "poisson1d",
        "cgmpinn",
        cfg.replace(time_limit=3600.0),
        key=4,
        print_fn=lines.append,
        checkpoint_dir=folder,
        checkpoint_every=1e9,
        call_seconds=TINY_CALL,
    )
    monkeypatch.setattr(_loop._Loop, "limit_reached", real)
    assert cut.statuses == {"adam": cj.StageStatus.COMPLETED, "lbfgs": cj.StageStatus.TIME_LIMIT}
    assert cut.time_limited and "TIME_LIMIT" in " ".join(cut.stage_lines())
    assert any("time limit 3600 s reached" in line and "resume" in line for line in lines)
    assert len(cut.history.k) < len(plain.history.k)
    resumed = cj.resume(folder, quiet=True, time_limit=7200.0)
    assert_same_run(plain, resumed)
    assert not resumed.time_limited


def test_a_time_limit_reached_before_a_stage_skips_it_resumably(tmp_path):
    cfg = cj.TrainConfig(**ONE_CHUNK, time_limit=1e-6)
    plain = cj.train("poisson1d", "pinn", cfg.replace(time_limit=None), key=3, quiet=True)
    cut = cj.train(
        "poisson1d",
        "pinn",
        cfg,
        key=3,
        quiet=True,
        checkpoint_dir=tmp_path / "r",
        checkpoint_every=1e9,
    )
    assert set(cut.statuses.values()) == {cj.StageStatus.TIME_LIMIT} and cut.time_limited
    assert_same_run(plain, cj.resume(tmp_path / "r", quiet=True, time_limit=None))


def test_a_stage_time_limit_ends_that_stage_and_the_run_goes_on():
    cfg = cj.TrainConfig(
        **{**ONE_CHUNK, "stages": (Adam(steps=30, time_limit=1e-6), LBFGS(steps=24))}
    )
    res = cj.train("poisson1d", "pinn", cfg, key=0, quiet=True, call_seconds=TINY_CALL)
    assert res.statuses["adam"] == cj.StageStatus.TIME_LIMIT and not res.time_limited
    assert res.stages[0].iterations == 1  # stopped at the first call boundary
    assert res.statuses["lbfgs"] == cj.StageStatus.COMPLETED


def test_time_limits_are_options_left_out_of_the_run_identity_and_of_to_dict():
    cfg = cj.TrainConfig(time_limit=60, stages=(Adam(), LBFGS(time_limit=30)))
    d = cfg.to_dict()
    assert d["time_limit"] == 60 and d["stages"][1]["time_limit"] == 30
    assert "time_limit" not in cj.TrainConfig().to_dict()
    assert "time_limit" not in cj.TrainConfig().to_dict()["stages"][0]
    assert cj.TrainConfig.from_dict(d) == cfg
    for bad, where in (
        (lambda: cj.TrainConfig(time_limit=0), "TrainConfig.time_limit"),
        (lambda: cj.TrainConfig(time_limit=-1.0), "TrainConfig.time_limit"),
        (lambda: cj.TrainConfig(stages=(Adam(time_limit=float("nan")),)), "Adam.time_limit"),
        (lambda: cj.TrainConfig(stages=(Adam(), LBFGS(time_limit="1h"))), "LBFGS.time_limit"),
    ):
        with pytest.raises(ValueError, match=where):
            bad()
    with pytest.raises(ValueError, match="call_seconds"):
        cj.train("poisson1d", "pinn", cj.TrainConfig(**ONE_CHUNK), quiet=True, call_seconds=0)


def test_a_long_stage_gets_one_line_with_its_estimate_and_what_cuts_it(monkeypatch):
    monkeypatch.setattr(_loop, "LONG_STAGE_SECONDS", 0.0)
    cfg = cj.TrainConfig(**gn_chunk(8))
    lines = []
    cj.train("poisson1d", "pinn", cfg, key=0, print_fn=lines.append, call_seconds=TINY_CALL)
    est = [line for line in lines if "an iteration measured" in line]
    assert len(est) == 2, est  # once per stage
    assert "more than an hour" in est[0] and "What cuts it" in est[0]
    assert (
        "residual rows x" in est[1] and "parameters in the" in est[1] and "--second-steps" in est[1]
    )


def test_command_line_time_limit_keeps_the_checkpoints_and_resume_with_a_larger_limit_finishes(
    tmp_path, capsys
):
    from cgmpinn_jax.cli import _main as cli

    out = tmp_path / "run"
    opts = [
        "--method",
        "pinn",
        "--adam-steps",
        "30",
        "--second-steps",
        "24",
        "--k-upd",
        "1000",
        "--seed",
        "3",
        "--width",
        "16",
        "--depth",
        "2",
        "--no-plots",
        "--quiet",
        "--compile-cache",
        "off",
    ]
    assert cli.main(["run", "poisson1d", *opts, "--time-limit", "-5", "--out", str(out)]) == 2
    assert "TrainConfig.time_limit" in capsys.readouterr().err
    assert cli.main(["run", "poisson1d", *opts, "--call-seconds", "0", "--out", str(out)]) == 2
    assert "--call-seconds" in capsys.readouterr().err
    assert cli.main(["run", "poisson1d", *opts, "--time-limit", "1e-6", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "TIME_LIMIT" in text and f"--resume {out} --time-limit LARGER" in text
    assert ck.latest(out) is not None and (out / "model.eqx").exists()  # the checkpoints are kept
    assert (
        cli.main(["run", "--resume", str(out), "--adam-steps", "10"]) == 2
    )  # settings come from the checkpoint
    assert (
        cli.main(
            [
                "run",
                "--resume",
                str(out),
                "--time-limit",
                "1e9",
                "--quiet",
                "--no-plots",
                "--compile-cache",
                "off",
                "--call-seconds",
                "0.5",
            ]
        )
        == 0
    )
    plain = cj.train("poisson1d", "pinn", cj.TrainConfig(**ONE_CHUNK), key=3, quiet=True)
    saved = json.loads((out / "metrics.json").read_text())
    assert saved["rel_e2"] == plain.metrics.rel_e2
    assert not (out / ck.SUBDIR).exists()  # finished: its checkpoints removed


def test_with_iterations_of_a_fraction_of_a_second_the_run_reports_checkpoints_and_stops_within_a_call(  # noqa: E501
    tmp_path, ctrl_c_raises
):
    """A Gauss-Newton chunk of 24 iterations (one chunk: k_upd 1000) of roughly 0.1-0.5 s each and
    call_seconds 1: progress and checkpoints at least every call plus an iteration, Ctrl-C answered
    within that bound, and the resumed run bit-identical to the uninterrupted one."""
    import time

    cfg = cj.TrainConfig.preset("accurate", cgm={"k_upd": 1000}, width=24, depth=3)
    cfg = cfg.replace(
        stages=(cfg.stages[0].replace(steps=20), cfg.stages[1].replace(steps=24, form="gramian"))
    )
    prob = cj.get_problem("heat", n_pde=3000)
    marks = []
    plain = cj.train(
        prob,
        "pinn",
        cfg,
        key=0,
        quiet=True,
        call_seconds=TINY_CALL,
        progress=lambda p: marks.append((p.stage, time.perf_counter())),
    )
    gn = [t for s, t in marks if s == "gauss_newton"]
    iteration = max(b - a for a, b in zip(gn, gn[1:]))  # one call was one iteration
    bound = (
        1.0 + 2 * iteration + 1.0
    )  # call_seconds, an iteration either side, slack for a loaded machine
    seen, sent = [], {}
    folder = tmp_path / "run"

    def progress(p):
        now = time.perf_counter()
        seen.append((p.stage, p.done, now, len(list((folder / ck.SUBDIR).glob("ckpt-*")))))
        if p.stage == "gauss_newton" and p.done >= 12 and not sent:
            sent["at"] = now
            signal.raise_signal(signal.SIGINT)

    with pytest.raises(cj.TrainingInterrupted):
        cj.train(
            prob,
            "pinn",
            cfg,
            key=0,
            quiet=True,
            call_seconds=1.0,
            checkpoint_dir=folder,
            checkpoint_every=0.5,
            progress=progress,
        )
    answered = time.perf_counter() - sent["at"]
    gn = [(d, t, n) for s, d, t, n in seen if s == "gauss_newton"]
    assert gn[-1][0] < 24  # stopped inside the chunk, not at its end
    assert max(b[1] - a[1] for a, b in zip(gn, gn[1:])) <= bound
    assert answered <= bound, (answered, bound)
    assert gn[-1][2] > gn[0][2]  # checkpoints written inside the chunk, between calls
    assert_same_run(plain, cj.resume(folder, quiet=True))
