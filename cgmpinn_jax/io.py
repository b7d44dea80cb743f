"""Save and load trained models with their configuration and metrics.

A saved run is a folder with

* ``model.eqx``: the network's leaves (``eqx.tree_serialise_leaves``),
* ``model.json``: what is needed to rebuild the network skeleton (problem name and
  parameters, method, width, depth, dtype) plus the config, metrics and summary.

``load_model(folder)`` rebuilds the skeleton and deserialises the leaves, so predictions
are reproduced bit for bit.

Example::

    res = cj.train("poisson1d", "pinn", cj.TrainConfig(adam_steps=10, lbfgs_steps=0), quiet=True)
    save_result(res, "runs/demo")
    model, info = load_model("runs/demo")
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .methods import get_method
from .problems import get_problem

__all__ = ["save_result", "load_model", "to_jsonable"]


def to_jsonable(x: Any) -> Any:
    """Plain JSON types (NaN/inf as strings) from numpy/jax values, tuples and dataclasses."""
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return to_jsonable(dataclasses.asdict(x))
    if isinstance(x, dict):
        return {str(k): to_jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [to_jsonable(v) for v in x]
    if isinstance(x, (np.ndarray, jax.Array)):
        return to_jsonable(np.asarray(x).tolist())
    if isinstance(x, (np.floating, float)):
        x = float(x)
        return x if math.isfinite(x) else str(x)
    if isinstance(x, (np.integer,)):
        return int(x)
    return x


def _problem_params(problem) -> dict:
    return {f.name: getattr(problem, f.name) for f in dataclasses.fields(problem)}


def save_result(result, folder: str | Path) -> Path:
    """Write ``model.eqx`` and ``model.json`` (and ``metrics.json``) into ``folder``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    eqx.tree_serialise_leaves(folder / "model.eqx", result.model)
    leaves = jax.tree_util.tree_leaves(eqx.filter(result.model, eqx.is_array))
    info = {
        "problem": result.problem.name,
        "problem_params": _problem_params(result.problem),
        "method": result.method.name,
        "width": _width(result.model),
        "depth": _depth(result.model),
        "dtype": str(leaves[0].dtype),
        "config": result.config.to_dict(),
        "summary": result.summary(),
        "log_vars": result.log_vars,
    }
    (folder / "model.json").write_text(json.dumps(to_jsonable(info), indent=1))
    (folder / "metrics.json").write_text(json.dumps(to_jsonable(result.summary()), indent=1))
    return folder


def _width(model) -> int:
    from . import nets

    if isinstance(model, nets.MLP):
        return int(model.layers[0].weight.shape[0])
    if isinstance(model, nets.LNNPINN):
        return int(model.inp.weight.shape[0])
    return int(model.blocks[0][0].weight.shape[0])


def _depth(model) -> int:
    from . import nets

    if isinstance(model, nets.MLP):
        return len(model.layers) - 1
    if isinstance(model, nets.LNNPINN):
        return len(model.blocks) + 1
    return len(model.blocks[0]) - 1


def load_model(folder: str | Path):
    """Rebuild a saved model. Returns ``(model, info)`` where ``info`` is model.json's dict."""
    from .train import build_model

    folder = Path(folder)
    if not (folder / "model.json").exists() or not (folder / "model.eqx").exists():
        raise FileNotFoundError(f"{folder} has no model.json / model.eqx (not a saved run)")
    info = json.loads((folder / "model.json").read_text())
    problem = get_problem(info["problem"], **info.get("problem_params", {}))
    method = get_method(info["method"])
    dtype = jnp.dtype(info["dtype"])
    if dtype == jnp.float64 and not jax.config.jax_enable_x64:
        raise ValueError("this model was saved in float64: enable jax_enable_x64 before loading it")
    skeleton = build_model(problem, method, jax.random.key(0), width=info["width"], depth=info["depth"])
    model = eqx.tree_deserialise_leaves(folder / "model.eqx", skeleton)
    return model, info
