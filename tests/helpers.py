"""Helpers shared by several test files (a test file imports these, never another test file)."""

import shutil
import signal
from pathlib import Path

import jax
import numpy as np

import cgmpinn_jax as cj
from cgmpinn_jax.training import CHECKPOINT_SUBDIR

# a small network: what the resume tests check (bit-identical runs) does not depend on its size
SMALL = dict(width=16, depth=2)


def assert_same_run(a, b):
    """Parameters, metrics and every history entry equal (the error tracker's seconds aside)."""
    for name in a.history._fields:
        x, y = getattr(a.history, name), getattr(b.history, name)
        if name == "snapshots":
            assert set(x) == set(y)
            for i in x:
                np.testing.assert_array_equal(x[i], y[i])
        elif name == "error_seconds" or (x is None and y is None):
            continue
        else:
            np.testing.assert_array_equal(np.asarray(x), np.asarray(y), err_msg=name)
    for u, v in zip(jax.tree_util.tree_leaves(a.model), jax.tree_util.tree_leaves(b.model)):
        np.testing.assert_array_equal(np.asarray(u), np.asarray(v))
    assert a.metrics == b.metrics
    assert a.e_loss == b.e_loss
    assert a.statuses == b.statuses


def only(folder: Path, ckpt: Path) -> Path:
    """A copy of ``folder`` holding only the checkpoint ``ckpt`` (a run killed right after it)."""
    dst = folder.parent / f"{folder.name}-{ckpt.name}"
    (dst / CHECKPOINT_SUBDIR).mkdir(parents=True)
    shutil.copytree(ckpt, dst / CHECKPOINT_SUBDIR / ckpt.name)
    return dst


def sigint_at(stage: str, done: int):
    """A ``progress`` callback that sends Ctrl-C (SIGINT) once, when ``stage`` has run ``done``
    steps."""
    sent = []

    def progress(p):
        if p.stage == stage and p.done == done and not sent:
            sent.append(1)
            signal.raise_signal(signal.SIGINT)

    return progress


def initial_rel_e2(problem, method, key):
    """Relative e2 of the untrained network that train() builds from the same key."""
    from cgmpinn_jax.methods import build_model

    _, k_net, _ = jax.random.split(jax.random.key(key), 3)
    d = problem.defaults
    model = build_model(problem, cj.get_method(method), k_net, width=d.width, depth=d.depth)
    return cj.evaluate(problem, model).rel_e2


# tiny budgets of the end-to-end runs (each test states its budget)
TINY = dict(stages=(cj.stages.Adam(steps=300), cj.stages.LBFGS(steps=300)), cgm={"k_upd": 100})
TINY_POISSON1D = dict(
    stages=(cj.stages.Adam(steps=5000), cj.stages.LBFGS(steps=2000)), cgm={"k_upd": 200}
)


def tiny_budget(problem_name: str) -> dict:
    return TINY_POISSON1D if problem_name == "poisson1d" else TINY


def reference_refreshes(adam: int, lbfgs: int, k_upd: int, refit_before_step: bool = False):
    """A step-by-step replay of the reference loop (docs/reference-code.md §6): the tau_k of
    every refit in order, and for every global step k the tau_k of the weights it uses."""
    refits, active, uses = [], None, {}
    for e in range(adam):  # Adam: refit before epoch e when e % k_upd == 0, at tau(e + 1)
        if e % k_upd == 0:
            active = e + 1
            refits.append(active)
        uses[e + 1] = active
    if lbfgs and refit_before_step:  # Fisher-KPP CGMPINN: refit before iteration i % k_upd == 0
        for i in range(lbfgs):
            if i % k_upd == 0:
                active = adam + i + 1
                refits.append(active)
            uses[adam + i + 1] = active
    elif (
        lbfgs
    ):  # refit at the stage start with Adam's last tau, then after iteration i % k_upd == 0
        active = adam
        refits.append(active)
        for i in range(lbfgs):
            uses[adam + i + 1] = active
            if i % k_upd == 0 and i + 1 < lbfgs:  # (a refit after the last iteration is never used)
                active = adam + i + 1
                refits.append(active)
    return refits, uses
