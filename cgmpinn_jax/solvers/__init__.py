"""The stages' solvers behind one protocol ([`Stage`][cgmpinn_jax.solvers.Stage]: ``init`` / ``step`` /
``terminate``, with a [`StageStatus`][cgmpinn_jax.StageStatus]): Adam, optax and jaxopt
L-BFGS, dense (self-scaled) BFGS / Broyden with a strong-Wolfe line search,
and the Gauss-Newton (Levenberg-Marquardt) member on the objective's residual rows.
``make_stage(name, config, ...)`` builds a stage's solver (with its stop rule and guards,
[`Stopping`][cgmpinn_jax.solvers.Stopping]); ``make_second_stage(config, ...)`` the member
``config.second_stage`` names."""

from ._adam import Adam as Adam

from ._gauss_newton import GaussNewton as GaussNewton
from ._gauss_newton import GNState as GNState
from ._gauss_newton import lm_solve_form as lm_solve_form
from ._gauss_newton import memory_bytes as memory_bytes
from ._linesearch import LineSearchResult as LineSearchResult
from ._linesearch import line_search as line_search
from ._second_stage import DenseQuasiNewton as DenseQuasiNewton
from ._second_stage import JaxoptLBFGS as JaxoptLBFGS
from ._second_stage import OptaxLBFGS as OptaxLBFGS
from ._protocol import SecondStage as SecondStage
from ._protocol import Stage as Stage
from ._second_stage import make_stage as make_stage
from ._stopping import Guards as Guards
from ._stopping import Stopping as Stopping
from ._protocol import StepResult as StepResult
from ._second_stage import make_second_stage as make_second_stage
from ._ssbfgs import SSBFGS as SSBFGS
from ._ssbfgs import ssbfgs as ssbfgs
from ._protocol import StageStatus as StageStatus

__all__ = ["Adam", "Stage", "Stopping", "Guards", "make_stage", "StageStatus", "SecondStage", "StepResult", "OptaxLBFGS", "JaxoptLBFGS", "DenseQuasiNewton", "GaussNewton",
           "GNState", "make_second_stage", "lm_solve_form", "memory_bytes", "SSBFGS", "ssbfgs", "line_search",
           "LineSearchResult"]
