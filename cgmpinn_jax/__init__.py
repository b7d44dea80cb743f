"""cgmpinn-jax: curriculum-guided Gaussian-mixture PINNs (CGMPINN) in pure JAX.

>>> import cgmpinn_jax as cj
>>> sorted(cj.PROBLEMS)[:2]
['advection_diffusion', 'damped_wave']
"""

from . import balancing, derivatives, gmm, methods, metrics, nets, problems, weighting
from .io import load_model, save_result
from .methods import METHODS, Method, get_method
from .metrics import Metrics, error_metrics, evaluate
from .problems import PROBLEMS, Problem, get_problem
from .sweep import SweepResult, sweep
from .train import StageStatus, TrainConfig, TrainResult, refresh_schedule, train

__version__ = "0.2.0"

__all__ = [
    "balancing",
    "derivatives",
    "gmm",
    "methods",
    "metrics",
    "nets",
    "problems",
    "weighting",
    "load_model",
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
]
