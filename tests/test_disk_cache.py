"""The command's on-disk XLA compilation cache (cgmpinn_jax.training._disk_cache)."""

import json
import subprocess
import sys
from pathlib import Path

import jax
import pytest

from cgmpinn_jax.training import _disk_cache as disk_cache


def test_resolve_option_environment_and_default(monkeypatch, tmp_path):
    monkeypatch.delenv(disk_cache.ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert disk_cache.resolve(None) == tmp_path / "xdg" / "cgmpinn-jax" / "xla"
    assert disk_cache.resolve(str(tmp_path / "mine")) == tmp_path / "mine"
    for off in ("off", "OFF", "none", "0"):
        assert disk_cache.resolve(off) is None
    monkeypatch.setenv(disk_cache.ENV, str(tmp_path / "env"))
    assert disk_cache.resolve(None) == tmp_path / "env"
    assert disk_cache.resolve("off") is None  # the option wins over the environment
    monkeypatch.setenv(disk_cache.ENV, "off")
    assert disk_cache.resolve(None) is None
    assert disk_cache.resolve(str(tmp_path / "mine")) == tmp_path / "mine"


def test_enable_refuses_bad_paths_without_touching_jax(tmp_path):
    before = jax.config.jax_compilation_cache_dir
    f = tmp_path / "a-file"
    f.write_text("x")
    with pytest.raises(ValueError, match="not a directory"):
        disk_cache.enable(f)
    with pytest.raises(ValueError, match="cannot create"):
        disk_cache.enable(f / "below-a-file")
    with pytest.raises(ValueError, match="min_compile_seconds"):
        disk_cache.enable(tmp_path / "ok", min_compile_seconds=-1)
    assert jax.config.jax_compilation_cache_dir == before


def test_cli_bad_cache_dir_is_a_clear_error(tmp_path, capsys):
    from cgmpinn_jax.cli import _main as cli

    f = tmp_path / "a-file"
    f.write_text("x")
    rc = cli.main(
        [
            "run",
            "--adam-steps",
            "1",
            "--second-steps",
            "0",
            "--compile-cache",
            str(f),
            "--out",
            str(tmp_path / "out"),
            "--no-plots",
            "--quiet",
        ]
    )
    assert rc == 2
    assert "not a directory" in capsys.readouterr().err


def _run(cache: Path, out: Path) -> dict:
    cmd = [
        sys.executable,
        "-m",
        "cgmpinn_jax.cli",
        "run",
        "poisson1d",
        "--method",
        "pinn",
        "--adam-steps",
        "30",
        "--second-steps",
        "0",
        "--seed",
        "3",
        "--no-plots",
        "--quiet",
        "--compile-cache",
        str(cache),
        "--out",
        str(out),
    ]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    assert f"compile cache {cache}" in p.stdout
    return json.loads((out / "metrics.json").read_text())


def test_second_run_loads_from_the_cache_with_identical_results(tmp_path):
    cache = tmp_path / "xla"
    first = _run(cache, tmp_path / "a")
    stored = sorted(p.name for p in cache.rglob("*") if p.is_file())
    assert stored, "the first run stored no compiled program"
    second = _run(cache, tmp_path / "b")
    assert (
        sorted(p.name for p in cache.rglob("*") if p.is_file()) == stored
    )  # nothing new: every program was loaded
    for k in ("rel_e2", "e2", "e_inf", "e_loss"):
        assert second[k] == first[k], (
            k
        )  # bit-identical: the loaded executables are the compiled ones


def test_compile_cache_records_lowering_and_xla_seconds_once_per_program():
    import cgmpinn_jax as cj

    cache = cj.CompileCache()
    cfg = cj.TrainConfig(stages=(cj.stages.Adam(steps=5), cj.stages.LBFGS(steps=3)))
    res = cj.train("poisson1d", "pinn", cfg, key=0, quiet=True, cache=cache)
    names = [t[0] for t in cache.timings]
    # a chunk's programs: the weight refresh (compiled once for both stages), PINN's
    # re-basing of the second stage's stored point, each stage's loop
    assert {"refresh", "adam", "rebase_lbfgs", "lbfgs"} <= set(names) and len(names) == len(
        set(names)
    )
    assert all(lower > 0 and xla > 0 for _, lower, xla in cache.timings)
    assert sum(lower + xla for _, lower, xla in cache.timings) == pytest.approx(
        res.compile_seconds, rel=1e-9
    )
    again = cj.train(
        "poisson1d", "pinn", cfg, key=1, quiet=True, cache=cache
    )  # same programs, other seed
    assert again.compile_seconds == 0.0 and [t[0] for t in cache.timings] == names
    cache.clear()
    assert cache.timings == [] and len(cache) == 0
