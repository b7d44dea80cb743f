"""cgmpinn-jax: curriculum-guided Gaussian-mixture PINNs (CGMPINN) in pure JAX."""

from . import derivatives, metrics, nets, problems
from .metrics import Metrics, error_metrics, evaluate
from .problems import PROBLEMS, Problem, get_problem

__version__ = "0.1.0"
