"""Every Python code block of the guides runs, as a user would paste it, at tiny budgets.

The blocks of a page run in order in one namespace (a later block may use an earlier one's
names), in a fresh working folder. Training is shrunk from outside, so the pages keep their
realistic budgets: ``cj.train``, ``cj.sweep`` and ``cj.infer`` run at most `ADAM` Adam steps
and `SECOND` iterations of every later stage (none: their compilation is most of a block's
time, and the stages are tested on their own elsewhere), on at most `POINTS` points per piece.
A block that is shown but must not run (output, a shell session) is fenced as ``text`` or
``bash``.
"""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path

import pytest

import cgmpinn_jax as cj

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
ADAM, SECOND, POINTS = 10, 0, 64
BLOCK_RE = re.compile(r"^```python[^\n]*\n(.*?)^```", re.S | re.M)


def guide_pages() -> list[Path]:
    """The pages with Python blocks (the API pages' examples run as doctests instead)."""
    return sorted(p for p in DOCS.glob("*.md") if BLOCK_RE.search(p.read_text(encoding="utf-8")))


def code_blocks(page: Path) -> list[str]:
    return BLOCK_RE.findall(page.read_text(encoding="utf-8"))


def _tiny_config(config):
    cfg = config if config is not None else cj.TrainConfig()
    caps = [ADAM if st.name == "adam" else SECOND for st in cfg.stages]
    return cfg.with_steps(
        *(cap if st.steps is None else min(st.steps, cap) for st, cap in zip(cfg.stages, caps))
    )


def _tiny_problem(problem):
    prob = cj.get_problem(problem) if isinstance(problem, str) else problem
    if not dataclasses.is_dataclass(prob):
        return prob
    counts = {
        f.name: min(getattr(prob, f.name), POINTS)
        for f in dataclasses.fields(prob)
        if f.name.startswith("n_") and isinstance(getattr(prob, f.name), int)
    }
    return dataclasses.replace(prob, **counts)


def _shrunk(fn):
    def run(problem, method="cgmpinn", config=None, *args, **kwargs):
        return fn(_tiny_problem(problem), method, _tiny_config(config), *args, **kwargs)

    return run


@pytest.fixture
def tiny_training(monkeypatch, tmp_path):
    for name in ("train", "sweep", "infer"):
        monkeypatch.setattr(cj, name, _shrunk(getattr(cj, name)))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    return tmp_path


def test_the_guides_have_code():
    pages = {p.name for p in guide_pages()}
    assert {"getting-started.md", "own-pde.md", "problems-from-data.md", "inverse.md"} <= pages


@pytest.mark.parametrize("page", guide_pages(), ids=lambda p: p.name)
def test_every_block_of_a_guide_runs(page, tiny_training):
    namespace: dict = {"__name__": f"guide_{page.stem.replace('-', '_')}"}
    for i, block in enumerate(code_blocks(page)):
        try:
            exec(
                compile(block, f"{page.name}, block {i + 1}", "exec", dont_inherit=True), namespace
            )
        except Exception as exc:  # the page and block in the failure, with the code
            raise AssertionError(f"{page.name}, block {i + 1} failed: {exc!r}\n{block}") from exc
    assert os.getcwd() == str(tiny_training)
