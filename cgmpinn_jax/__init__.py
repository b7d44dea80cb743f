"""cgmpinn-jax: curriculum-guided Gaussian-mixture PINNs (CGMPINN) in pure JAX.

Examples:
    >>> import cgmpinn_jax as cj
    >>> sorted(cj.PROBLEMS)[:2]
    ['advection_diffusion', 'damped_wave']

This module is the public face: ``cj.train``, ``cj.sweep``, ``cj.TrainConfig`` and the names
below. The implementation lives in subpackages, layered from the bottom up (no module
imports a layer above its own; ``import-linter`` checks it):

* ``problems`` (the ``Problem`` base and its checks, point helpers, the paper's six benchmarks,
  PINNacle's problems, reference data readers), above ``geometry`` (domains from primitives
  and set operations) and ``nn`` (networks, Taylor-mode fast path), ``derivatives``;
* ``gmm`` (jitted 1-D EM), then ``weighting`` (tau, CGM / GMMPINN / CLPINN weights,
  ReLoBRaLo), ``stages`` (a run's stages as objects: Adam, L-BFGS, dense quasi-Newton,
  Gauss-Newton, each with its options, budget and stop rule, and the solvers they build;
  ``StageStatus``) and
  ``inverse`` (unknown coefficients, observations);
* ``training`` (schedule, objective, engine, driver, records, sweep, checkpoints);
* ``cli`` (the ``cgmpinn-jax`` command), imported by nothing.

``config`` (``TrainConfig`` and its option groups), ``methods``, ``metrics``, ``io`` and
``plots`` are modules of their own.
"""

from ._version import __version__ as __version__
from . import config as config
from . import derivatives as derivatives
from . import geometry as geometry
from . import gmm as gmm
from . import inverse as inverse
from . import methods as methods
from . import metrics as metrics
from . import nn as nn
from . import problems as problems
from . import stages as stages
from . import training as training
from . import weighting as weighting
from .config import PRESETS as PRESETS
from .config import CGMOptions as CGMOptions
from .config import NetworkOptions as NetworkOptions
from .config import ReLoBRaLoOptions as ReLoBRaLoOptions
from .config import TrainConfig as TrainConfig
from .io import LoadedModel as LoadedModel
from .io import load_model as load_model
from .io import save_result as save_result
from .methods import METHODS as METHODS
from .methods import Method as Method
from .methods import get_method as get_method
from .metrics import Metrics as Metrics
from .metrics import error_metrics as error_metrics
from .metrics import evaluate as evaluate
from .problems import PROBLEMS as PROBLEMS
from .problems import Problem as Problem
from .problems import get_problem as get_problem
from .training import CheckpointError as CheckpointError
from .training import CompileCache as CompileCache
from .training import History as History
from .training import StageRecord as StageRecord
from .training import StageStatus as StageStatus
from .training import SweepResult as SweepResult
from .training import TrainingInterrupted as TrainingInterrupted
from .training import TrainResult as TrainResult
from .training import infer as infer
from .training import refresh_schedule as refresh_schedule
from .training import resume as resume
from .training import sweep as sweep
from .training import train as train

__all__ = [
    "config",
    "derivatives",
    "geometry",
    "gmm",
    "inverse",
    "methods",
    "metrics",
    "nn",
    "problems",
    "stages",
    "training",
    "weighting",
    "train",
    "infer",
    "sweep",
    "resume",
    "TrainConfig",
    "PRESETS",
    "CGMOptions",
    "ReLoBRaLoOptions",
    "NetworkOptions",
    "TrainResult",
    "StageRecord",
    "History",
    "StageStatus",
    "SweepResult",
    "CompileCache",
    "CheckpointError",
    "TrainingInterrupted",
    "refresh_schedule",
    "Problem",
    "PROBLEMS",
    "get_problem",
    "Method",
    "METHODS",
    "get_method",
    "Metrics",
    "error_metrics",
    "evaluate",
    "save_result",
    "load_model",
    "LoadedModel",
]
