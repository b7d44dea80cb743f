"""Save and load trained models with their configuration and metrics.

A saved run is a folder with

* ``model.eqx``: the network's leaves (``eqx.tree_serialise_leaves``),
* ``model.json``: what is needed to rebuild the network skeleton (the problem's name,
  class path ``"package.module:ClassName"`` and field values; method, width, depth, dtype)
  plus the config, metrics and summary.

``load_model(folder)`` rebuilds the problem and the skeleton and deserialises the leaves, so
predictions are reproduced bit for bit. This works for any problem, a user's own subclass
included, as long as its class can be imported again (defined at module level in an
importable module); otherwise pass the problem: ``load_model(folder, problem=MyPDE())``.
Models saved before class paths were recorded name a registry problem and still load.

A model saved in float64 (``precision="float64"`` or ``"mixed"``, the accurate preset) loads
and predicts in float64 in any process: [`load_model`][cgmpinn_jax.load_model] and
[`LoadedModel.predict`][cgmpinn_jax.LoadedModel.predict] scope ``jax_enable_x64`` themselves
and leave jax's configuration as they found it.

Examples:
    ```python
    cfg = cj.TrainConfig(stages=(cj.stages.Adam(steps=10), cj.stages.LBFGS(steps=0)))
    res = cj.train("poisson1d", "pinn", cfg, quiet=True)
    save_result(res, "runs/demo")
    loaded = load_model("runs/demo")
    u = loaded.predict(points)          # (M, d) -> (M,), in the saved precision
    model, info = load_model("runs/demo")   # also unpacks, as before
    ```
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any, cast

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .config import TrainConfig
from .methods import get_method
from .problems import (
    PINNACLE,
    PROBLEMS,
    WORKED,
    Problem,
    class_path,
    get_problem,
    import_problem_class,
)

__all__ = ["save_result", "load_model", "load_problem", "to_jsonable", "LoadedModel"]


def to_jsonable(x: Any) -> Any:
    """Convert a value to plain JSON types, as ``model.json`` and ``metrics.json`` store it.

    Dataclasses become dicts (of their fields), dict keys strings, tuples and lists lists,
    numpy and jax arrays nested lists, numpy scalars Python numbers; a non-finite float becomes
    the string ``"nan"``, ``"inf"`` or ``"-inf"`` (JSON has no such numbers). Anything else is
    returned as it is.

    Args:
        x: the value, nested to any depth.

    Returns:
        The converted value, ready for ``json.dumps``.

    Examples:
        >>> import numpy as np
        >>> to_jsonable({"e2": np.float32(0.5), "grid": (np.arange(2), float("nan")), 3: None})
        {'e2': 0.5, 'grid': [[0, 1], 'nan'], '3': None}
    """
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
    return {f.name: getattr(problem, f.name) for f in dataclasses.fields(problem) if f.init}


def _decode_params(cls: type, params: dict) -> dict:
    """Field values from model.json: lists back to tuples, 'nan'/'inf' back to floats for
    float fields (what `to_jsonable` changed)."""
    fields = {f.name: f for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else {}

    def untuple(v):
        return tuple(untuple(x) for x in v) if isinstance(v, list) else v

    out = {}
    for k, v in params.items():
        v = untuple(v)
        f = fields.get(k)
        if (
            isinstance(v, str)
            and v in ("nan", "inf", "-inf")
            and f is not None
            and (isinstance(f.default, float) or "float" in str(f.type))
        ):
            v = float(v)
        out[k] = v
    return out


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def _inverse_record(problem) -> dict | None:
    """An inverse problem's parts, so that [`load_model`][cgmpinn_jax.load_model] rebuilds it:
    the forward problem's record, the observations (float64 values survive JSON exactly), the
    unknowns and the observation weight; None for a forward problem."""
    from .inverse import InverseProblem

    if not isinstance(problem, InverseProblem):
        return None
    obs = problem.observations
    return {
        "forward": _problem_record(problem.forward),
        "observations": {
            "points": obs.points.tolist(),
            "values": obs.values.tolist(),
            "noise": obs.noise,
        },
        # resolved by InverseProblem.__post_init__: a tuple of Unknown records
        "unknowns": [[u.name, u.init, u.transform] for u in cast(tuple, problem.unknowns)],
        "obs_weight": problem.obs_weight,
    }


def _rebuild_inverse(rec: dict, folder: Path) -> Problem:
    from .inverse import InverseProblem, Observations
    from .problems.unknowns import Unknown

    forward = _rebuild_problem(rec["forward"], None, folder)
    o = rec["observations"]
    obs = Observations(
        np.asarray(o["points"], np.float64), np.asarray(o["values"], np.float64), o["noise"]
    )
    return InverseProblem(
        forward, obs, tuple(Unknown(*u) for u in rec["unknowns"]), rec["obs_weight"]
    )


def _hard_record(problem) -> dict | None:
    """A hard-constrained problem's parts: the forward problem's record, the pieces met and
    the import paths of a given ``g`` and ``d`` (None when built); None for another problem."""
    from .problems.hard import HardConstrained
    from ._importable import importable_path

    if not isinstance(problem, HardConstrained):
        return None
    paths = {
        k: None if getattr(problem, k) is None else importable_path(getattr(problem, k))
        for k in ("g", "d")
    }
    return {
        "forward": _problem_record(problem.forward),
        "satisfies": list(problem.satisfied),
        **paths,
        "given": problem.g is not None,
    }


def _rebuild_hard(rec: dict, folder: Path) -> Problem:
    from ._importable import import_path
    from .problems.hard import HardConstrained

    forward = _rebuild_problem(rec["forward"], None, folder)
    fns = {}
    for k in ("g", "d"):
        if rec.get("given") and rec.get(k) is None:
            raise ValueError(
                f"load_model: the model in {folder} was trained under a hard constraint "
                f"whose {k} is not an importable module-level function; pass the problem again: "
                f"load_model({str(folder)!r}, problem=HardConstrained(...))"
            )
        fns[k] = (
            None
            if rec.get(k) is None
            else import_path(rec[k], f"load_model: the hard constraint's {k}")
        )
    return HardConstrained(forward, tuple(rec["satisfies"]), fns["g"], fns["d"])


def _problem_record(problem: Problem) -> dict:
    """model.json's problem entries: name, class path, coordinates, field values, and
    whether those values survive JSON exactly (else loading needs ``problem=``)."""
    hard = _hard_record(problem)
    if hard is not None:
        return {
            "problem": problem.name,
            "problem_class": class_path(type(problem)),
            "problem_coords": list(problem.coords),
            "hard": hard,
        }
    inverse = _inverse_record(problem)
    if inverse is not None:
        return {
            "problem": problem.name,
            "problem_class": class_path(type(problem)),
            "problem_coords": list(problem.coords),
            "inverse": inverse,
        }
    params = _problem_params(problem)
    encoded = {}
    for k, v in params.items():
        try:
            encoded[k] = json.loads(json.dumps(to_jsonable(v)))
        except (TypeError, ValueError):
            encoded[k] = repr(v)  # for the record only; loading then needs problem=
    try:
        decoded = _decode_params(type(problem), json.loads(json.dumps(encoded)))
        exact = all(_same(decoded[k], v) for k, v in params.items())
    except Exception:  # noqa: BLE001 - anything unusual simply means "not exactly stored"
        exact = False
    record = {
        "problem": problem.name,
        "problem_class": class_path(type(problem)),
        "problem_coords": list(problem.coords),
        "problem_params": encoded,
        "problem_params_exact": exact,
    }
    ref = problem.reference_data()
    if ref is not None:  # a data-defined problem: the reference by source and content hash
        record["reference"] = {"source": ref.source, "sha256": ref.sha256}
    return record


def _check_reference(info: dict, problem: Problem, folder: Path) -> None:
    """The rebuilt problem's reference data is the one the model was saved with (same content
    hash); a missing or changed file is a ValueError naming both."""
    saved = info.get("reference")
    if saved is None:
        return
    try:
        ref = problem.reference_data()
    except (OSError, ValueError) as e:
        raise ValueError(
            f"load_model: the model in {folder} was trained against the reference "
            f"{saved['source']!r}, "
            f"which cannot be read now: {type(e).__name__}: {e}"
        ) from e
    if ref is None or ref.sha256 != saved["sha256"]:
        now = "no reference" if ref is None else f"{ref.source!r} with sha256 {ref.sha256[:12]}..."
        raise ValueError(
            f"load_model: the reference data of {problem.name!r} changed since the model in "
            f"{folder} was "
            f"saved: it was {saved['source']!r} with sha256 {saved['sha256'][:12]}..., now {now}"
        )


def save_result(result, folder: str | Path) -> Path:
    """Save a trained model with what is needed to load it again.

    Writes three files into ``folder`` (created if needed; existing files are replaced):

    * ``model.eqx``: the network's parameters (``eqx.tree_serialise_leaves``);
    * ``model.json``: the problem (name, class path, field values, the content hash of its
      reference data), the method, the network's width, depth and dtype, the configuration,
      the summary and the loss weights;
    * ``metrics.json``: the summary alone (``result.summary()``: errors, timings, steps).

    [`load_model`][cgmpinn_jax.load_model] reads the folder back.

    Args:
        result: a [`TrainResult`][cgmpinn_jax.TrainResult], as
            [`train`][cgmpinn_jax.train] returns it.
        folder: the folder to write, a string or ``pathlib.Path``.

    Returns:
        ``folder`` as a ``pathlib.Path``.

    Examples:
        >>> import cgmpinn_jax as cj
        >>> cfg = cj.TrainConfig(stages=(cj.stages.Adam(steps=10), cj.stages.LBFGS(steps=0)))
        >>> res = cj.train("poisson1d", "pinn", cfg, quiet=True)  # doctest: +SKIP
        >>> folder = save_result(res, "runs/demo")  # doctest: +SKIP
        >>> sorted(f.name for f in folder.iterdir())  # doctest: +SKIP
        ['metrics.json', 'model.eqx', 'model.json']
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    eqx.tree_serialise_leaves(folder / "model.eqx", result.model)
    leaves = jax.tree_util.tree_leaves(eqx.filter(result.model, eqx.is_array))
    info = {
        **_problem_record(result.problem),
        "method": result.method.name,
        "width": _width(result.model) or _run_size(result, "width"),
        "depth": _depth(result.model) or _run_size(result, "depth"),
        "dtype": str(leaves[0].dtype),
        "config": result.config.to_dict(),
        **_network_record(result),
        "summary": result.summary(),
        "log_vars": result.log_vars,
    }
    (folder / "model.json").write_text(json.dumps(to_jsonable(info), indent=1))
    (folder / "metrics.json").write_text(json.dumps(to_jsonable(result.summary()), indent=1))
    return folder


def _network_record(result) -> dict:
    """``{"network_object": "module:Class"}`` for a network given to ``train`` as an object
    (not saved by name in the config: ``load_model`` needs it again), else ``{}``."""
    from . import nn as nets

    model = _inner(result.model)
    if result.config.network.name is not None or isinstance(
        model, (nets.MLP, nets.LNNPINN, nets.STARPINN)
    ):
        return {}
    cls = type(model)
    return {"network_object": f"{cls.__module__}:{cls.__qualname__}"}


def _run_size(result, name: str) -> int:
    """The run's ``width`` or ``depth``: the config's, else the problem's default (what a
    built-in network choice was given)."""
    v = getattr(result.config, name)
    return int(v if v is not None else getattr(result.problem.defaults, name))


def _inner(model):
    """The network inside a hard constraint's transform (the model itself otherwise)."""
    from .problems.hard import ConstrainedNetwork

    return model.net if isinstance(model, ConstrainedNetwork) else model


def _width(model) -> int | None:
    from . import nn as nets

    model = _inner(model)
    if isinstance(model, nets.MLP):
        return int(model.layers[0].weight.shape[0])
    if isinstance(model, nets.LNNPINN):
        return int(model.inp.weight.shape[0])
    if isinstance(model, nets.STARPINN):
        return int(model.blocks[0][0].weight.shape[0])
    return None  # another network: its options say its size


def _depth(model) -> int | None:
    from . import nn as nets

    model = _inner(model)
    if isinstance(model, nets.MLP):
        return len(model.layers) - 1
    if isinstance(model, nets.LNNPINN):
        return len(model.blocks) + 1
    if isinstance(model, nets.STARPINN):
        return len(model.blocks[0]) - 1
    return None


def _saved_network(info: dict, network: Any, folder: Path) -> Any:
    """The network ``load_model`` builds: ``network`` if given (a name, a factory, or a module
    of the saved structure, as `build_model` takes them), else the config's, by name."""
    from .config import NetworkOptions

    if network is not None:
        return NetworkOptions(network) if isinstance(network, str) else network
    if "network_object" in info:
        raise ValueError(
            f"load_model: {folder} was trained with a network given to train as an object "
            f"({info['network_object']}), which is not saved by name; pass it again: "
            f"load_model(folder, network=<its factory or a module of the same structure>)"
        )
    net = (info.get("config") or {}).get("network")
    return None if not net else NetworkOptions(net["name"], net.get("options") or {})


def _read_info(folder: Path) -> dict:
    if not (folder / "model.json").exists() or not (folder / "model.eqx").exists():
        raise FileNotFoundError(f"{folder} has no model.json / model.eqx (not a saved run)")
    return json.loads((folder / "model.json").read_text())


def _rebuild_problem(info: dict, problem: Any, folder: Path) -> Problem:
    if problem is None and "inverse" in info:
        return _rebuild_inverse(info["inverse"], folder)
    if problem is None and "hard" in info:
        return _rebuild_hard(info["hard"], folder)
    saved = info["problem"]
    params = info.get("problem_params", {})
    hint = f"pass the problem explicitly: load_model({str(folder)!r}, problem=YourProblem(...))"
    if problem is not None:
        if isinstance(problem, Problem):
            cls = type(problem)
        elif isinstance(problem, (str, type)):
            cls = (
                type(get_problem(problem)) if isinstance(problem, str) else problem
            )  # validates the name
        else:
            raise TypeError(
                f"load_model: problem must be a Problem instance, a Problem subclass or a name, "
                f"got {type(problem).__name__}"
            )
        name = problem.name if isinstance(problem, Problem) else getattr(cls, "name", None)
        got = problem.coords if isinstance(problem, Problem) else getattr(cls, "coords", None)
        coords = info.get("problem_coords")
        if name != saved or (coords is not None and list(got or ()) != list(coords)):
            raise ValueError(
                f"load_model: the model in {folder} was trained on the problem {saved!r}"
                + (f" with coords {tuple(coords)!r}" if coords is not None else "")
                + f", but problem= is {cls.__name__} {name!r} with coords {tuple(got or ())!r}"
            )
        if not isinstance(problem, Problem):
            problem = get_problem(cls, **_decode_params(cls, params))
        return problem
    path = info.get("problem_class")
    if path is None:  # saved before class paths were recorded: a registry name
        if saved not in PROBLEMS:
            raise ValueError(
                f"load_model: the model in {folder} names the problem {saved!r}, "
                "which is not in the "
                f"registry ({', '.join(PROBLEMS)}), and records no class path; {hint}"
            )
        cls = PROBLEMS[saved]
    else:
        try:
            cls = import_problem_class(path)
        except ValueError as e:
            built_in = {
                **PINNACLE,
                **WORKED,
                **PROBLEMS,
            }  # get_problem's order: the paper's six first
            if (
                path.startswith("cgmpinn_jax.") and saved in built_in
            ):  # a built-in problem whose module moved
                cls = built_in[saved]
            else:
                raise ValueError(
                    f"load_model: cannot rebuild the problem {saved!r} of {folder}: {e}. "
                    f"Define the class at module level in an importable module, or {hint}"
                ) from e
    if not info.get("problem_params_exact", True):
        raise ValueError(
            f"load_model: the field values of {cls.__name__} could not be stored exactly in "
            f"{folder / 'model.json'}; {hint}"
        )
    kwargs = _decode_params(cls, params)
    try:
        return cls(**kwargs)
    except Exception as e:  # noqa: BLE001 - re-raised with the class named
        raise ValueError(
            f"load_model: cannot rebuild {cls.__name__}(**{kwargs!r}) (from {folder}): "
            f"{type(e).__name__}: {e}; {hint}"
        ) from e


def load_problem(folder: str | Path, *, problem: Any = None) -> Problem:
    """Rebuild the problem a saved run was trained on, without loading the network.

    The problem is rebuilt as [`load_model`][cgmpinn_jax.load_model] does, and a data-defined
    problem's reference data is checked against the content hash saved with the model.

    Args:
        folder: a folder written by [`save_result`][cgmpinn_jax.save_result].
        problem: optional, as for ``load_model``: the problem (an instance, a Problem subclass,
            a registry name or ``"package.module:ClassName"``) when its class cannot be
            imported again; its name and coordinates must match the saved ones.

    Returns:
        The [`Problem`][cgmpinn_jax.Problem] instance.

    Raises:
        FileNotFoundError: ``folder`` is not a saved run.
        ValueError: the problem cannot be rebuilt, does not match, or its reference data
            changed.

    Examples:
        >>> problem = load_problem("runs/demo")  # doctest: +SKIP
        >>> problem.name  # doctest: +SKIP
        'poisson1d'
    """
    folder = Path(folder)
    info = _read_info(folder)
    rebuilt = _rebuild_problem(info, problem, folder)
    _check_reference(info, rebuilt, folder)
    return rebuilt


class LoadedModel:
    """A saved model with what it was saved with, as [`load_model`][cgmpinn_jax.load_model]
    returns it; it also unpacks as ``model, info`` (the older API).

    Args:
        model: the network with its loaded parameters.
        info: the contents of ``model.json``; ``info["dtype"]`` must be set.
        problem: the problem the model was trained on.

    Attributes:
        model: the network (an equinox Module mapping one point ``(d,)`` to a scalar, or to
            ``(F,)`` for a system of ``F`` fields), its parameters in the saved dtype.
        info: model.json's dict (config, metrics, summary, problem record).
        problem: the rebuilt [`Problem`][cgmpinn_jax.Problem].
        dtype: the parameters' dtype name, ``"float32"`` or ``"float64"``.

    Examples:
        >>> loaded = load_model("runs/demo")  # doctest: +SKIP
        >>> loaded.predict([[0.25], [0.5]]).shape  # doctest: +SKIP
        (2,)
        >>> model, info = loaded  # doctest: +SKIP
    """

    def __init__(self, model, info: dict, problem: Problem):
        self.model, self.info, self.problem = model, info, problem
        self.dtype = str(info["dtype"])

    def __iter__(self):
        return iter((self.model, self.info))

    @property
    def config(self):
        """The [`TrainConfig`][cgmpinn_jax.TrainConfig] the model was trained with."""
        return TrainConfig.from_dict(self.info["config"])

    def __repr__(self) -> str:
        return (
            f"LoadedModel(problem={self.problem.name!r}, method={self.info.get('method')!r}, "
            f"dtype={self.dtype!r}, width={self.info.get('width')}, depth={self.info.get('depth')})"
        )

    def predict(self, points) -> np.ndarray:
        """Evaluate the model at points, in the saved precision.

        A float64 model is evaluated inside ``jax.enable_x64(True)`` (restored after), with
        the highest matmul precision, whatever jax's configuration.

        Args:
            points: array-like of shape ``(M, d)`` with ``d = len(problem.coords)``, columns in
                the order of ``problem.coords``; ``(M,)`` is accepted when ``d = 1``.

        Returns:
            A numpy array of shape ``(M,)`` (``(M, F)`` for a system of ``F`` fields) in the
                saved dtype.

        Raises:
            ValueError: ``points`` has the wrong shape.
        """
        pts = np.asarray(points, dtype=np.float64)
        d = len(self.problem.coords)
        if pts.ndim == 1 and d == 1:
            pts = pts[:, None]
        if pts.ndim != 2 or pts.shape[1] != d:
            raise ValueError(
                f"LoadedModel.predict: points must have shape (M, {d}) for {self.problem.name} "
                f"(coords {tuple(self.problem.coords)!r}), got {pts.shape}"
            )
        with jax.enable_x64(self.dtype == "float64"), jax.default_matmul_precision("highest"):
            return np.asarray(jax.jit(jax.vmap(self.model))(jnp.asarray(pts, self.dtype)))


def load_model(folder: str | Path, *, problem: Any = None, network: Any = None) -> LoadedModel:
    """Rebuild a saved model: a [`LoadedModel`][cgmpinn_jax.LoadedModel]
    (``.predict(points)``, ``.model``, ``.info``), which also unpacks as ``model, info``
    (``info`` is model.json's dict).

    A float64 model loads in float64 whatever jax's ``jax_enable_x64`` is (the flag is
    scoped here and restored); call ``.predict`` to compute in float64, or call ``.model``
    inside ``with jax.enable_x64(True):``.

    Args:
        folder: a folder written by [`save_result`][cgmpinn_jax.save_result].
        problem: optional; the problem the model was trained on (an instance, a Problem
            subclass, a registry name or ``"package.module:ClassName"``). By default it is
            rebuilt from the class path and field values recorded in model.json; pass it when
            that class cannot be imported (defined in a notebook, a script's ``__main__`` or
            a function). Its name and coordinates must match the saved ones.
        network: optional; the network, for a model trained with a network given to ``train``
            as an object (a module, or a factory that cannot be imported by name): the same
            factory or a module of the same structure. A network saved by name
            (``config.network``) is rebuilt from its factory without it.

    Raises:
        FileNotFoundError: ``folder`` is not a saved run.
        ValueError: the problem cannot be rebuilt (the message says why and how to pass it),
            ``problem`` does not match the saved one, or a data-defined problem's reference
            data is missing or differs from the saved content hash; a network given to
            ``train`` as an object and not passed again; saved parameters that do not fit the
            network built now (its factory or options changed).

    Examples:
        >>> model, info = load_model("runs/demo")  # doctest: +SKIP
        >>> model, info = load_model("runs/burgers", problem=ViscousBurgers())  # doctest: +SKIP
    """
    from .methods import build_model

    folder = Path(folder)
    info = _read_info(folder)
    problem = _rebuild_problem(info, problem, folder)
    _check_reference(info, problem, folder)
    method = get_method(info["method"])
    if str(info["dtype"]) not in ("float32", "float64"):
        raise ValueError(
            f"load_model: {folder / 'model.json'} records dtype {info['dtype']!r}; "
            "expected float32 or float64"
        )
    with jax.enable_x64(str(info["dtype"]) == "float64"):
        skeleton = build_model(
            problem,
            method,
            jax.random.key(0),
            width=info["width"],
            depth=info["depth"],
            network=_saved_network(info, network, folder),
        )
        try:
            model = eqx.tree_deserialise_leaves(folder / "model.eqx", skeleton)
        except Exception as e:  # noqa: BLE001 - a network that is not the saved one, reported as such
            raise ValueError(
                f"load_model: the parameters in {folder / 'model.eqx'} "
                "do not fit the network built now "
                f"({type(skeleton).__name__}); was its factory or its options changed? ({e})"
            ) from e
    return LoadedModel(model, info, problem)
