"""cgmpinn-jax: curriculum-guided Gaussian-mixture PINNs (CGMPINN) in pure JAX.

>>> import cgmpinn_jax as cj
>>> sorted(cj.PROBLEMS)[:2]
['advection_diffusion', 'damped_wave']

``cj.train`` is the training function (:func:`cgmpinn_jax.driver.train`); there is no
``cgmpinn_jax.train`` module. The engine is split one idea per module: ``config`` (options),
``schedule`` (resolved settings, refresh schedule), ``objective`` (loss terms),
``second_stage`` (L-BFGS and dense quasi-Newton members), ``gauss_newton`` (the
Levenberg-Marquardt member), ``engine`` (jittable chunks),
``driver`` (host loop, compile cache, ``train``), ``records`` (statuses, histories, results),
``precision`` (scoped float64); ``inverse`` identifies unknown PDE coefficients from data.
"""

from . import balancing, config, derivatives, driver, engine, gmm, methods, metrics, nets, objective, precision, problems, records, second_stage, weighting
from . import disk_cache, gauss_newton, inverse
from .io import LoadedModel
from .io import load_model, save_result
from .methods import METHODS, Method, get_method
from .metrics import Metrics, error_metrics, evaluate
from .problems import PROBLEMS, Problem, get_problem
from .sweep import SweepResult, sweep
from .config import PRESETS, TrainConfig
from .driver import CompileCache, train
from .records import History, StageStatus, TrainResult
from .schedule import refresh_schedule
from .checkpoint import CheckpointError, TrainingInterrupted
from .resuming import resume

__version__ = "0.2.0"

__all__ = [
    "balancing",
    "inverse",
    "derivatives",
    "gmm",
    "methods",
    "metrics",
    "nets",
    "problems",
    "weighting",
    "load_model",
    "LoadedModel",
    "gauss_newton",
    "save_result",
    "METHODS",
    "Method",
    "get_method",
    "Metrics",
    "error_metrics",
    "evaluate",
    "PROBLEMS",
    "Problem",
    "get_problem",
    "SweepResult",
    "sweep",
    "StageStatus",
    "TrainConfig",
    "TrainResult",
    "refresh_schedule",
    "train",
    "resume",
    "CheckpointError",
    "TrainingInterrupted",
    "PRESETS",
    "CompileCache",
    "History",
]
